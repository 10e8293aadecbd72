"""a2a-local on its default store (one SQLite file) killed with SIGKILL under load, again and again,
then restarted: nothing it acknowledged is lost. Also a full disk (a small tmpfs) and a read-only
data directory. Loopback only; every loop is bounded in count and time.

What the load does, each round (a random 0.4 to 1.6 s before the kill): blocking SendMessage calls,
some with a webhook; streaming SendStreamingMessage calls, each stream's SSE ids recorded. After each
restart the streams cut off by the kill resubscribe with Last-Event-ID. The agent runs out of process
(tests/crash/agent.py, one artifact streamed word by word) and logs every delivery of every run.

What is checked after the last restart, once the work taken up again has settled:
- every task whose SendMessage was answered is there, in a final state; one that completed carries
  its whole answer, and one cut off mid-run failed with the reason the host gives;
- every stream, joined with its resubscriptions, saw each event of its task once, in order, from its
  first event to the final one;
- a run was delivered again only with the same run id and a higher attempt, and never started twice
  as a first attempt;
- the webhook receiver got every event of every task with a webhook at least once, in sequence order;
- the file passes SQLite's integrity check."""

import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import free_port, stop, wait_ready, webhook_receiver  # noqa: E402

HERE = Path(__file__).resolve().parent
ROUNDS = int(os.environ.get("CRASH_ROUNDS", "6"))
SENDERS = 4
STREAMERS = 2
TEXT = "one two three four five six seven eight"
HEADERS = {"A2A-Version": "1.0"}
FINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
# What the runner records for a turn cut off mid-run (shared/engine/src/runner.rs).
INTERRUPTED = "interrupted"


def binary():
    path = os.environ.get("A2A_LOCAL_BIN")
    if not path:
        pytest.fail("A2A_LOCAL_BIN is not set (run through scripts/test)")
    return path


def start_agent(log):
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "agent.py"), str(port), str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    for _ in range(100):  # bounded: 10 s
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            time.sleep(0.1)
            continue
        return f"http://127.0.0.1:{port}/", proc
    stop(proc)
    raise RuntimeError("the crash test agent did not start")


def start_local(data_dir, agent_url, log, extra=()):
    port = free_port()
    proc = subprocess.Popen(
        [binary(), "--addr", f"127.0.0.1:{port}", "--data-dir", str(data_dir), "--agent-url", agent_url,
         "--webhook-allow", "127.0.0.1/32", "--push-timeout", "2", *extra],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_ready(f"{base}/.well-known/agent-card.json", [proc], "a2a-local", 30)
    return base, proc


def message(text, hook=None):
    params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}}
    if hook:
        params["configuration"] = {"taskPushNotificationConfig": {"url": hook, "token": "crash"}}
    return params


def rpc(base, method, params, timeout=30):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(f"{base}/", json=body, headers=HEADERS, timeout=timeout).json()


class Load:
    """What the clients saw: answered tasks, and each stream's events by task."""

    def __init__(self, hook):
        self.hook = hook
        self.lock = threading.Lock()
        self.answered = {}  # task id -> state in the answer
        self.pushed = set()  # tasks created with a webhook
        self.streams = {}  # task id -> [seq, ...] in the order received
        self.final_seen = set()  # streams that received their task's final event

    def sender(self, base, stop_at):
        n = 0
        while time.time() < stop_at:
            n += 1
            hook = self.hook if n % 2 == 0 else None
            try:
                answer = rpc(base, "SendMessage", message(TEXT, hook), timeout=10)
            except httpx.HTTPError:
                return  # the server was killed
            task = answer.get("result", {}).get("task")
            if task:
                with self.lock:
                    self.answered[task["id"]] = task["status"]["state"]
                    if hook:
                        self.pushed.add(task["id"])

    def streamer(self, base, stop_at):
        while time.time() < stop_at:
            try:
                self.follow(base, "/message:stream", {"json": message(TEXT)}, None)
            except httpx.HTTPError:
                return

    def follow(self, base, path, request, task_id, last_event_id=None):
        """Reads one SSE stream to its end (or the server's death), recording SSE ids per task."""
        headers = dict(HEADERS)
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        with httpx.stream("POST", f"{base}{path}", headers=headers, timeout=15, **request) as r:
            if r.status_code != 200:
                raise AssertionError(f"{path}: {r.status_code} {r.read()[:300]}")
            seq = None
            for line in r.iter_lines():
                if line.startswith("id:"):
                    seq = int(line[3:].strip())
                elif line.startswith("data:"):
                    event = json.loads(line[5:])
                    task_id = task_id or event.get("task", {}).get("id") or event.get("statusUpdate", {}).get("taskId")
                    with self.lock:
                        seen = self.streams.setdefault(task_id, [])
                        # The first item of a new stream is the task snapshot: its id is the last
                        # event it includes, so the events after it continue from there.
                        if "task" in event and last_event_id is None:
                            seen.append(("snapshot", seq))
                        else:
                            seen.append(seq)
                        state = event.get("statusUpdate", {}).get("status", {}).get("state")
                        if state in FINAL:
                            self.final_seen.add(task_id)

    def resume_streams(self, base):
        """Each stream cut off before its task's final event resubscribes from its last SSE id."""
        for task_id, seen in list(self.streams.items()):
            if task_id in self.final_seen:
                continue
            numbers = [s for s in seen if isinstance(s, int)]
            snapshot = [s[1] for s in seen if isinstance(s, tuple)]
            last = max(numbers + snapshot)
            self.follow(base, f"/tasks/{task_id}:subscribe", {}, task_id, last_event_id=last)


def check_stream(task_id, seen, events):
    snapshot = [s[1] for s in seen if isinstance(s, tuple)]
    numbers = [s for s in seen if isinstance(s, int)]
    first = snapshot[0] + 1 if snapshot else 1
    want = [e for e in range(first, events + 1)]
    assert numbers == want, f"stream of {task_id}: {seen} (its log has {events} events)"


def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path):
    logs = Path(os.environ.get("A2A_TEST_LOGS", tmp_path))
    runs_log = tmp_path / "runs.jsonl"
    agent_url, agent = start_agent(runs_log)
    hook, received = webhook_receiver()
    data_dir = tmp_path / "data"
    load = Load(hook)
    rng = random.Random(int(os.environ.get("CRASH_SEED", "29")))
    server_log = open(logs / "crash-a2a-local.log", "a")
    try:
        for _ in range(ROUNDS):
            base, proc = start_local(data_dir, agent_url, server_log)
            load.resume_streams(base)
            stop_at = time.time() + 30
            workers = [threading.Thread(target=load.sender, args=(base, stop_at)) for _ in range(SENDERS)]
            workers += [threading.Thread(target=load.streamer, args=(base, stop_at)) for _ in range(STREAMERS)]
            for w in workers:
                w.start()
            time.sleep(rng.uniform(0.4, 1.6))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            for w in workers:
                w.join(timeout=20)
                assert not w.is_alive(), "a client hung on a killed server"

        base, proc = start_local(data_dir, agent_url, server_log)
        load.resume_streams(base)
        assert load.answered, "no SendMessage was answered: the load did not run"
        # The work taken up again settles: every task on a turn ends it (bounded: 30 s).
        states = {}
        for _ in range(300):
            states = {t: rpc(base, "GetTask", {"id": t})["result"] for t in load.answered}
            if all(s["status"]["state"] in FINAL for s in states.values()):
                break
            time.sleep(0.1)
        # Every answered task is there, final, and complete or failed with the host's reason.
        for task_id, task in states.items():
            state = task["status"]["state"]
            assert state in {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}, (task_id, task)
            if state == "TASK_STATE_COMPLETED":
                text = "".join(p["text"] for p in task["artifacts"][0]["parts"])
                assert text == TEXT, (task_id, text)
            else:
                assert INTERRUPTED in task["status"]["message"]["parts"][0]["text"], task
        stop(proc)

        with closing(sqlite3.connect(f"file:{data_dir / 'a2a.db'}?mode=ro", uri=True)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            events = dict(db.execute("SELECT id, last_seq FROM tasks").fetchall())
        # Streams: each event once, in order, to the final one.
        for task_id, seen in load.streams.items():
            assert task_id in load.final_seen, f"the stream of {task_id} never reached its final event: {seen}"
            check_stream(task_id, seen, events[task_id])
        # Runs: a second delivery has the first one's run id and a higher attempt.
        runs = [json.loads(line) for line in runs_log.read_text().splitlines()]
        first = [r["run"] for r in runs if r["attempt"] == 1]
        assert len(first) == len(set(first)), "a run was started twice as a first attempt"
        for r in runs:
            if r["attempt"] > 1:
                assert r["run"] in first, r
        # Webhooks: every event of every task with a webhook, at least once, in order.
        delivered = {}
        for headers, body in list(received):
            task_id = (body.get("statusUpdate") or body.get("artifactUpdate") or {}).get("taskId")
            delivered.setdefault(task_id, []).append(int(headers["a2a-event-id"]))
        for task_id in load.pushed:
            seqs = delivered.get(task_id, [])
            assert seqs == sorted(seqs), f"{task_id}: out of order {seqs}"
            assert set(seqs) == set(range(1, events[task_id] + 1)), f"{task_id}: {seqs} of {events[task_id]}"
        kills = ROUNDS
        print(f"\ncrash: {kills} kills, {len(load.answered)} tasks answered, {len(load.streams)} streams, "
              f"{sum(1 for r in runs if r['attempt'] > 1)} runs delivered again, "
              f"{sum(len(v) for v in delivered.values())} webhook deliveries; nothing lost")
    finally:
        stop(agent)
        server_log.close()


def mount_tmpfs(path, size):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)


def test_a_full_disk_is_a_clear_503_and_nothing_acknowledged_is_lost(tmp_path):
    data_dir = tmp_path / "small"
    mount_tmpfs(data_dir, "2m")
    logs = Path(os.environ.get("A2A_TEST_LOGS", tmp_path))
    log = open(logs / "crash-full-disk.log", "w")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # A blocking send whose turn cannot be recorded returns the task as it stands after 3 s.
    proc = subprocess.Popen([binary(), "--addr", f"127.0.0.1:{port}", "--data-dir", str(data_dir), "--agent", "echo",
                             "--blocking-timeout", "3"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(f"{base}/.well-known/agent-card.json", [proc], "a2a-local", 30)
        acknowledged, refused = {}, None
        for _ in range(400):  # 400 x 16 KB: more than the 2 MB the directory holds
            answer = rpc(base, "SendMessage", message("x" * 16_000))
            if "error" in answer:
                refused = answer["error"]
                break
            task = answer["result"]["task"]
            acknowledged[task["id"]] = task["status"]["state"]
        assert refused, "the disk never filled"
        assert refused["code"] == -32011, refused  # ResourceExhausted (HTTP 503)
        assert "storage is full" in refused["message"], refused
        assert acknowledged
        # Still serving; every acknowledged task is there, a completed one with its whole answer.
        for task_id, state in acknowledged.items():
            task = rpc(base, "GetTask", {"id": task_id})["result"]
            if state == "TASK_STATE_COMPLETED":
                assert task["status"]["state"] == state and task["artifacts"][0]["parts"][0]["text"] == "x" * 16_000
        stop(proc)
        with closing(sqlite3.connect(f"file:{data_dir / 'a2a.db'}?mode=ro", uri=True)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            held = {row[0] for row in db.execute("SELECT id FROM tasks")}
        assert set(acknowledged) <= held
    finally:
        stop(proc)
        log.close()
        subprocess.run(["umount", str(data_dir)], check=False)


def test_a_read_only_data_directory_is_refused_at_start_with_a_clear_message(tmp_path):
    data_dir = tmp_path / "ro"
    mount_tmpfs(data_dir, "4m")
    try:
        port = free_port()
        proc = subprocess.Popen([binary(), "--addr", f"127.0.0.1:{port}", "--data-dir", str(data_dir), "--agent", "echo"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_ready(f"http://127.0.0.1:{port}/.well-known/agent-card.json", [proc], "a2a-local", 30)
        rpc(f"http://127.0.0.1:{port}", "SendMessage", message("kept"))
        stop(proc)
        subprocess.run(["mount", "-o", "remount,ro", str(data_dir)], check=True)
        out = subprocess.run([binary(), "--addr", f"127.0.0.1:{free_port()}", "--data-dir", str(data_dir),
                              "--agent", "echo"], capture_output=True, text=True, timeout=30)
        assert out.returncode != 0
        assert "is not writable" in out.stderr and str(data_dir) in out.stderr, out.stderr[-500:]
        with closing(sqlite3.connect(f"file:{data_dir / 'a2a.db'}?mode=ro&immutable=1", uri=True)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] == 1
    finally:
        subprocess.run(["umount", str(data_dir)], check=False)
