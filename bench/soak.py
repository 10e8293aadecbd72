"""A soak run (scripts/bench, BENCH_ONLY=soak; not in the test command): minutes of mixed load on one
a2a-local (blocking sends, half with a webhook; streaming sends; GetTask; ListTasks) with faults on,
sampled each minute: resident memory, open file descriptors, requests, p50/p99 and error rate. Flat
is the goal. On the AWS store the calls go through the fault proxy of tests/faults (a share of
DynamoDB and SQS calls throttled, failing or reset); on every store the webhook receiver is down one
minute in three.

Usage: python soak.py BINARY STORE MINUTES   (STORE: memory, sqlite or aws; aws needs
AWS_ENDPOINT_URL pointing at moto). Prints a Markdown table, one row per minute."""

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "faults")]
from proxy import FaultProxy, Rule  # noqa: E402
from support import WebhookReceiver, free_port, wait_ready  # noqa: E402

HEADERS = {"A2A-Version": "1.0"}
CLIENTS = 6


class Minute:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = []
        self.errors = 0

    def add(self, seconds, ok):
        with self.lock:
            self.latencies.append(seconds)
            self.errors += 0 if ok else 1


def client(base, hook, minute_of, stop_at, n0):
    http = httpx.Client(timeout=30, headers=HEADERS)
    n, last = n0, None
    while time.time() < stop_at:
        n += 1
        started = time.monotonic()
        ok = True
        try:
            kind = n % 6
            if kind in (0, 1, 2):
                params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "soak"}]}}
                if kind == 0:
                    params["configuration"] = {"taskPushNotificationConfig": {"url": hook, "token": "soak"}}
                r = http.post(f"{base}/", json={"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": params})
                body = r.json()
                ok = "result" in body
                last = body.get("result", {}).get("task", {}).get("id", last)
            elif kind == 3:
                msg = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "soak"}]}}
                with http.stream("POST", f"{base}/message:stream", json=msg) as r:
                    ok = r.status_code == 200
                    for _ in r.iter_lines():
                        pass
            elif kind == 4 and last:
                ok = "result" in http.post(f"{base}/", json={"jsonrpc": "2.0", "id": n, "method": "GetTask",
                                                            "params": {"id": last}}).json()
            else:
                ok = http.get(f"{base}/tasks?pageSize=10").status_code == 200
        except httpx.HTTPError:
            ok = False
        minute_of().add(time.monotonic() - started, ok)


def sample(pid):
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) // 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] * 1000 if values else 0.0


def main():
    binary, store, minutes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    receiver = WebhookReceiver(keep=False)  # a long run: count, do not keep
    env = dict(os.environ)
    proxy = None
    args = ["--agent", "echo", "--webhook-allow", "127.0.0.1/32", "--push-timeout", "2", "--max-tasks", "100000"]
    data = tempfile.mkdtemp(prefix="a2a-soak-")
    if store == "aws":
        proxy = FaultProxy(os.environ["AWS_ENDPOINT_URL"], seed=30)
        proxy.set(Rule("DynamoDB_", "throttle", 0.02), Rule("DynamoDB_", "503", 0.01),
                  Rule("AmazonSQS.", "throttle", 0.02), Rule("AmazonSQS.ReceiveMessage", "reset", 0.01))
        env |= {"AWS_ENDPOINT_URL": proxy.url, "TABLE_NAME": f"soak-{uuid.uuid4().hex[:8]}",
                "SQS_WAIT_SECONDS": "1"}
        args += ["--store", "aws", "--create-resources"]
    else:
        args += ["--store", store, "--data-dir", data]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(Path(data) / "server.log", "w")
    proc = subprocess.Popen([binary, "--addr", f"127.0.0.1:{port}", *args], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_ready(f"{base}/.well-known/agent-card.json", [proc], "a2a-local", 60)
        minutes_seen = [Minute()]
        stop_at = time.time() + 60 * minutes
        workers = [threading.Thread(target=client, args=(base, receiver.url, lambda: minutes_seen[-1], stop_at, i * 1000))
                   for i in range(CLIENTS)]
        for w in workers:
            w.start()
        print(f"Soak, {store} store, {minutes} min, {CLIENTS} clients (sends, webhooks, streams, GetTask, ListTasks); "
              "webhook receiver down one minute in three" + ("; AWS faults on" if proxy else ""))
        print()
        print("| minute | requests | errors | p50 ms | p99 ms | RSS MiB | open fds | webhooks received | faults injected |")
        print("|---|---|---|---|---|---|---|---|---|")
        hooks = 0
        for m in range(1, minutes + 1):  # bounded: the run's minutes
            receiver.down = m % 3 == 2
            time.sleep(max(0.0, min(60.0, stop_at - time.time())))
            done, minutes_seen[-1:] = minutes_seen[-1], [Minute()]
            rss, fds = sample(proc.pid)
            faults = proxy.injected_count() if proxy else 0
            hooks, received = receiver.accepted, receiver.accepted - hooks
            with done.lock:
                n, errors, lat = len(done.latencies), done.errors, list(done.latencies)
            print(f"| {m} | {n} | {errors} ({100 * errors / max(n, 1):.2f}%) | {pct(lat, 0.5):.1f} | {pct(lat, 0.99):.1f} "
                  f"| {rss} | {fds} | {received} | {faults} |", flush=True)
        for w in workers:
            w.join(timeout=60)
        log.flush()
        text = (Path(data) / "server.log").read_text(errors="replace")
        dropped = sum(int(x) for x in re.findall(r"push backlog full.*?refused=(\d+)", text))
        dead = text.count("push dead-lettered")
        print(f"\nwebhook deliveries received {receiver.accepted}, dead-lettered after their attempts {dead}, "
              f"dropped for a full push backlog {dropped}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        if proxy:
            proxy.close()


if __name__ == "__main__":
    main()
