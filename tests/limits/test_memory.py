"""The memory store stays within its byte budget under large messages: 1 MB messages pour into
a2a-local (memory backend, echo agent, a 64 MiB budget) and the process's resident memory stays under a
stated bound, while every request is answered; a task left waiting for input is not evicted by the
flood. Loopback only; bounded in count and time."""

import sys
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import a2a_local, stop  # noqa: E402

BUDGET = 64 << 20
# Budget + what the process needs besides (runtime, buffers of requests in flight, allocator slack).
RSS_BOUND = BUDGET + (96 << 20)
MESSAGES = 120


def rss(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def send(client, base, message_id, text, expect=200):
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}}}
    r = client.post(base + "/", json=body, headers={"A2A-Version": "1.0"})
    assert r.status_code == expect, r.text[:300]
    return r.json()


def test_rss_stays_bounded_while_1mb_messages_pour_in():
    base, proc = a2a_local(["--agent", "conformance", "--max-bytes", str(BUDGET), "--max-body", str(4 << 20)])
    try:
        with httpx.Client(timeout=30) as c:
            waiting = send(c, base, f"tck-input-required-{uuid.uuid4()}", "keep me")["result"]["task"]
            big = "x" * (1 << 20)
            peak = 0
            for i in range(MESSAGES):
                res = send(c, base, f"flood-{i}-{uuid.uuid4()}", big)
                assert res["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
                peak = max(peak, rss(proc.pid))
            print(f"peak RSS {peak >> 20} MiB after {MESSAGES} x 1 MiB (budget {BUDGET >> 20} MiB)")
            assert peak < RSS_BOUND, f"peak RSS {peak >> 20} MiB over the bound {RSS_BOUND >> 20} MiB"
            got = c.post(base + "/", headers={"A2A-Version": "1.0"},
                         json={"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": waiting["id"]}}).json()
            assert got["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", "the live task was kept"
            listed = c.get(base + "/tasks", params={"pageSize": 1}, headers={"A2A-Version": "1.0"}).json()
            assert listed["totalSize"] < MESSAGES, "finished tasks were evicted to fit the budget"
    finally:
        stop(proc)
