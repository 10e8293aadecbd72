"""Helpers shared by the Python suites (tests/interop, tests/edge)."""

import socket
import time

import httpx


# Where each variable the suites need comes from, for the message when it is missing.
SET_BY = {
    "A2A_LOCAL_BIN": "run through scripts/test",
    "A2A_BIN": "run through scripts/test",
    "AWS_ENDPOINT_URL": "scripts/test starts moto",
}


def required(name):
    """The environment variable `name`; the test fails, saying where it comes from, when it is unset."""
    import os

    import pytest

    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set ({SET_BY.get(name, 'see docs/testing.md')})")
    return value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, procs, what, seconds):
    """Polls `url` until it answers 200 (bounded: `seconds` x 10 tries); fails if a process exits."""
    for _ in range(seconds * 10):
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what} exited early (see its log)")
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start in {seconds} s")


def webhook_receiver(raw=False):
    """A webhook receiver on 127.0.0.1: returns (url, received), where `received` fills with
    (headers with lower-case names, parsed JSON body — the body's bytes with `raw`) as POSTs arrive.
    Runs in a daemon thread for the process."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the stdlib's name)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            received.append(({k.lower(): v for k, v in self.headers.items()}, body if raw else json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/hook", received


class WebhookReceiver:
    """A webhook receiver on 127.0.0.1 that answers 503 while `down` (counting `refused`) and 200
    otherwise, recording each accepted POST in `received` as (headers with lower-case names, parsed
    JSON body), or with `keep=False` only counting them in `accepted`. Runs in a daemon thread for
    the process."""

    def __init__(self, down=False, keep=True):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.down = down
        self.refused = 0
        self.accepted = 0
        self.received = []
        receiver = self

        class Hook(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the stdlib's name)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if receiver.down:
                    receiver.refused += 1
                    self.send_response(503)
                else:
                    receiver.accepted += 1
                    if keep:
                        receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
                    self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


def data_dir_args(*given):
    """`--data-dir` of a fresh temporary directory (removed when the tests end), unless `given` names
    one: the default store keeps one SQLite file per directory, and one process per directory."""
    import atexit
    import shutil
    import tempfile

    if any(a == "--data-dir" or a.startswith("--data-dir=") for args in given for a in args):
        return []
    path = tempfile.mkdtemp(prefix="a2a-data-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return ["--data-dir", path]


def a2a_local(args, log=None, seconds=30, env=None):
    """Starts $A2A_LOCAL_BIN on a free 127.0.0.1 port with `args` (plus $A2A_LOCAL_ARGS, which
    picks the store) and `env` added to the environment, in a data directory of its own; returns
    (base URL, process). The caller terminates it."""
    import os
    import subprocess

    binary = os.environ.get("A2A_LOCAL_BIN")
    if not binary:
        raise RuntimeError("A2A_LOCAL_BIN is not set (run through scripts/test)")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    extra = os.environ.get("A2A_LOCAL_ARGS", "").split()
    proc = subprocess.Popen(
        [binary, "--addr", f"127.0.0.1:{port}", *args, *extra, *data_dir_args(args, extra)],
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    wait_ready(f"{base}/.well-known/agent-card.json", [proc], "a2a-local", seconds)
    return base, proc


def stop(*procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except Exception:  # noqa: BLE001 (a process that will not stop is killed)
            p.kill()
