#!/usr/bin/env python3
"""Measures each Lambda binary's size and init time: process start until its first poll of the
runtime API (GET /2018-06-01/runtime/invocation/next), against a fake runtime API on 127.0.0.1.
Usage: init_time.py DIR [RUNS]   (DIR holds <function>/bootstrap, as cargo lambda build writes)
Prints a Markdown table (median of RUNS starts, default 5)."""

import http.server
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import threading
import time

first_poll = threading.Event()


class Runtime(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.endswith("/runtime/invocation/next"):
            first_poll.set()
            time.sleep(5)  # long-poll: no invocation; the process is killed meanwhile
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(binary, port):
    env = dict(os.environ, AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{port}", AWS_LAMBDA_FUNCTION_NAME=binary.parent.name,
               AWS_LAMBDA_FUNCTION_VERSION="1", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="128", AWS_REGION="us-east-1",
               AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_EC2_METADATA_DISABLED="true",
               TABLE_NAME="a2a-tasks", TASK_QUEUE_URL="http://127.0.0.1:9/q", PUSH_QUEUE_URL="http://127.0.0.1:9/p",
               PAGE_TOKEN_SECRET="x", RUST_LOG="error")
    first_poll.clear()
    start = time.perf_counter()
    proc = subprocess.Popen([str(binary)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not first_poll.wait(10):
            return None
        return (time.perf_counter() - start) * 1000
    finally:
        proc.kill()
        proc.wait()


def main():
    root = pathlib.Path(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Runtime)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("| function | binary size | init time (median of %d) |" % runs)
    print("|---|---|---|")
    for binary in sorted(root.glob("*/bootstrap")):
        times = [t for t in (measure(binary, port) for _ in range(runs)) if t is not None]
        size = binary.stat().st_size / (1024 * 1024)
        init = f"{statistics.median(times):.1f} ms" if times else "did not poll"
        print(f"| {binary.parent.name} | {size:.1f} MiB | {init} |")
    server.shutdown()


if __name__ == "__main__":
    main()
