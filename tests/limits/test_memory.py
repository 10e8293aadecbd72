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


def peak_rss(pid):
    """The process's resident high-water mark (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


# What one refused or bounded request may add to the process's peak: its own bytes, the buffers
# that carry them, and allocator slack (the defects measured +312 MiB to +3 GiB).
GROWTH_BOUND = 80 << 20


def grpc_send_message(parts):
    """A SendMessageRequest in protobuf wire form whose message holds `parts` empty text parts
    (4 bytes each), built by hand: the SDK's own types would take gigabytes to build."""
    message = b"\x0a\x01m" + b"\x20\x01" + b"\x2a\x02\x0a\x00" * parts
    return b"\x12" + varint(len(message)) + message


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_requests_that_would_decode_into_much_more_are_refused_in_bounded_memory():
    import grpc

    from support import free_port

    grpc_port = free_port()
    base, proc = a2a_local(["--agent", "echo", "--max-body", str(12 << 20), "--grpc-addr", f"127.0.0.1:{grpc_port}"])
    try:
        with httpx.Client(timeout=60) as c:
            send(c, base, f"warm-{uuid.uuid4()}", "warm up")
            # JSON-RPC: 10 MB of 850,000 empty parts.
            start = peak_rss(proc.pid)
            parts = '{"text":""},' * 850_000
            body = ('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
                    '"role":"ROLE_USER","parts":[' + parts + '{"text":""}]}}}')
            r = c.post(base + "/", content=body, headers={"A2A-Version": "1.0", "Content-Type": "application/json"})
            err = r.json()["error"]
            assert err["code"] == -32600 and "200000 JSON values" in err["message"], err
            grown = peak_rss(proc.pid) - start
            print(f"JSON-RPC, 850k parts in {len(body) >> 20} MiB: refused, peak grew {grown >> 20} MiB")
            assert grown < GROWTH_BOUND, f"peak grew {grown >> 20} MiB"
            # Fewer values, one part past the limit: refused naming the field.
            over = {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "x"}] * 1025}
            r = c.post(base + "/", headers={"A2A-Version": "1.0"},
                       json={"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": over}})
            err = r.json()["error"]
            assert err["code"] == -32602 and err["message"].startswith("params.message.parts"), err
            # gRPC: 8 MB of 2 million empty parts.
            start = peak_rss(proc.pid)
            with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                call = channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage",
                                           request_serializer=lambda b: b, response_deserializer=lambda b: b)
                try:
                    call(grpc_send_message(2_000_000), timeout=60)
                    raise AssertionError("2 million parts were accepted")
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
                    assert "message.parts: holds more than 1024 parts" in e.details(), e.details()
            grown = peak_rss(proc.pid) - start
            print(f"gRPC, 2M parts in 8 MiB: refused, peak grew {grown >> 20} MiB")
            assert grown < GROWTH_BOUND, f"peak grew {grown >> 20} MiB"
    finally:
        stop(proc)


def test_a_list_page_is_bounded_whatever_the_tasks_hold():
    base, proc = a2a_local(["--agent", "echo", "--max-body", str(8 << 20), "--list-page-bytes", str(4 << 20)])
    try:
        with httpx.Client(timeout=60) as c:
            for i in range(12):
                send(c, base, f"big-{i}-{uuid.uuid4()}", "y" * (3 << 20))
            start = peak_rss(proc.pid)
            page = c.get(base + "/tasks", params={"pageSize": 100, "includeArtifacts": "true"},
                         headers={"A2A-Version": "1.0"})
            assert page.status_code == 200
            listed = page.json()
            grown = peak_rss(proc.pid) - start
            print(f"a page of {len(listed['tasks'])} tasks of 3 MiB: {len(page.content) >> 20} MiB, peak grew {grown >> 20} MiB")
            assert len(listed["tasks"]) < 12 and listed["nextPageToken"], "the page stopped at its byte budget"
            assert len(page.content) < (8 << 20)
            assert grown < GROWTH_BOUND, f"peak grew {grown >> 20} MiB"
    finally:
        stop(proc)


def test_resident_memory_stays_under_the_budgets_during_spikes():
    """The stated bound (docs/security.md): peak RSS ≤ store budget + request budget + answer budget
    + 128 MiB, whatever arrives at once, spike after spike: concurrent large GetTasks, full ListTasks
    pages and large bodies, twice."""
    import concurrent.futures

    store, requests, answers = 96 << 20, 32 << 20, 32 << 20
    bound = store + requests + answers + (128 << 20)
    base, proc = a2a_local(["--agent", "echo", "--max-bytes", str(store), "--max-body", str(12 << 20),
                            "--max-request-bytes", str(requests), "--max-answer-bytes", str(answers),
                            "--principal-share", "100"])
    try:
        with httpx.Client(timeout=60) as c:
            ids = [send(c, base, f"spike-{i}-{uuid.uuid4()}", "z" * (10 << 20))["result"]["task"]["id"] for i in range(3)]

        def get_task(i):
            with httpx.Client(timeout=60) as c:
                r = c.get(f"{base}/tasks/{ids[i % len(ids)]}", headers={"A2A-Version": "1.0"})
                return r.status_code

        def list_page(_):
            with httpx.Client(timeout=60) as c:
                r = c.get(base + "/tasks", params={"pageSize": 100, "includeArtifacts": "true", "historyLength": 10},
                          headers={"A2A-Version": "1.0"})
                return r.status_code

        def big_body(i):
            with httpx.Client(timeout=60) as c:
                r = c.post(base + "/", headers={"A2A-Version": "1.0"}, json={
                    "jsonrpc": "2.0", "id": i, "method": "GetTask", "params": {"id": "none", "pad": "p" * (9 << 20)}})
                return r.status_code

        for spike in (1, 2):
            with concurrent.futures.ThreadPoolExecutor(max_workers=24) as pool:
                jobs = [pool.submit(get_task, i) for i in range(8)] + [pool.submit(list_page, i) for i in range(3)]
                jobs += [pool.submit(big_body, i) for i in range(12)]
                statuses = [j.result(timeout=120) for j in jobs]
            peak = peak_rss(proc.pid)
            print(f"spike {spike}: statuses {sorted(set(statuses))}, peak RSS {peak >> 20} MiB "
                  f"(bound {bound >> 20} MiB), {rss(proc.pid) >> 20} MiB after")
            assert set(statuses) <= {200, 503}, statuses
            assert peak < bound, f"peak RSS {peak >> 20} MiB over the stated bound {bound >> 20} MiB"
    finally:
        stop(proc)


def test_idle_grpc_sockets_under_a_small_descriptor_limit_do_not_stop_the_http_port():
    """Under a 256-descriptor limit, 300 idle gRPC sockets: the connection cap (one for both
    listeners, lowered to what the descriptors allow) turns the extra ones away instead of letting
    `accept` fail for everyone, and the idle deadline frees the rest; the HTTP port answers."""
    import resource
    import socket
    import subprocess
    import os
    import time

    from support import free_port, wait_ready

    def limit_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    port, grpc_port = free_port(), free_port()
    proc = subprocess.Popen(
        [os.environ["A2A_LOCAL_BIN"], "--addr", f"127.0.0.1:{port}", "--grpc-addr", f"127.0.0.1:{grpc_port}",
         "--agent", "echo", "--header-timeout", "2", "--store", "memory"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, preexec_fn=limit_descriptors)
    base = f"http://127.0.0.1:{port}"
    sockets = []
    try:
        wait_ready(f"{base}/.well-known/agent-card.json", [proc], "a2a-local", 30)
        for _ in range(300):
            sockets.append(socket.create_connection(("127.0.0.1", grpc_port), timeout=5))
        time.sleep(0.5)
        answered = None
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                answered = httpx.get(f"{base}/.well-known/agent-card.json", timeout=2).status_code
            except httpx.HTTPError:
                answered = None
            if answered == 200:
                break
            time.sleep(0.5)
        assert answered == 200, f"the HTTP port did not answer 200 (last: {answered})"
        assert proc.poll() is None
    finally:
        for s in sockets:
            s.close()
        stop(proc)
