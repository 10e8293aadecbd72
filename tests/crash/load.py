"""The load the crash and fault tests put on a2a-local, and what they check afterwards.

Each round: blocking SendMessage calls (every other one with a webhook) and streaming
SendStreamingMessage calls, each stream's SSE ids recorded, until the process is killed. After each
restart the streams cut off by the kill resubscribe with Last-Event-ID. The agent runs out of
process (tests/crash/agent.py, one artifact streamed word by word) and logs every delivery of every
run, so it sees the runs of every process.

What `check` asserts once the work taken up again has settled:
- every task whose SendMessage was answered is there, in a final state; one that completed carries
  its whole answer, and one cut off mid-run failed with the reason the host gives;
- every stream, joined with its resubscriptions, saw each event of its task once, in order, from its
  first event to the final one;
- a run was delivered again only with the same run id and a higher attempt, never twice with one
  attempt;
- the webhook receiver got every event of every task with a webhook at least once, in sequence order.
"""

import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import stop, free_port  # noqa: E402

HERE = Path(__file__).resolve().parent
SENDERS = 4
STREAMERS = 2
TEXT = "one two three four five six seven eight"
HEADERS = {"A2A-Version": "1.0"}
FINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
# What the runner records for a turn cut off mid-run (shared/engine/src/runner.rs).
INTERRUPTED = "interrupted"


def start_agent(log):
    """tests/crash/agent.py on a free port, logging each run to `log`: (url, process)."""
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


def message(text, hook=None):
    params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}}
    if hook:
        params["configuration"] = {"taskPushNotificationConfig": {"url": hook, "token": "crash"}}
    return params


def rpc(base, method, params, timeout=30):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(f"{base}/", json=body, headers=HEADERS, timeout=timeout).json()


class Load:
    """What the clients saw: answered tasks, each stream's events by task, the errors they got."""

    def __init__(self, hook):
        self.hook = hook
        self.lock = threading.Lock()
        self.answered = {}  # task id -> state in the answer
        self.pushed = set()  # tasks created with a webhook
        self.streams = {}  # task id -> [seq, ...] in the order received
        self.final_seen = set()  # streams that received their task's final event
        self.errors = []  # JSON-RPC errors answered to a SendMessage

    def round(self, base, seconds, kill=None):
        """Runs the load for `seconds` (bounded), or until `kill()` `seconds` after the round's first
        answer; waits for every client."""
        stop_at = time.time() + (30 if kill else seconds)
        workers = [threading.Thread(target=self.sender, args=(base, stop_at)) for _ in range(SENDERS)]
        workers += [threading.Thread(target=self.streamer, args=(base, stop_at)) for _ in range(STREAMERS)]
        for w in workers:
            w.start()
        if kill:
            # The kill comes `seconds` after the server has answered a send of this round (bounded:
            # 20 s), so that every round dies under load however slow the machine is.
            before, waited = len(self.answered), 0
            while len(self.answered) == before and waited < 200:
                time.sleep(0.1)
                waited += 1
            time.sleep(seconds)
            kill()
        for w in workers:
            w.join(timeout=40)
            assert not w.is_alive(), "a client hung"

    def sender(self, base, stop_at):
        n = 0
        while time.time() < stop_at:
            n += 1
            hook = self.hook if n % 2 == 0 else None
            try:
                answer = rpc(base, "SendMessage", message(TEXT, hook), timeout=20)
            except httpx.HTTPError:
                return  # the server was killed
            task = answer.get("result", {}).get("task")
            with self.lock:
                if task:
                    self.answered[task["id"]] = task["status"]["state"]
                    if hook:
                        self.pushed.add(task["id"])
                elif "error" in answer:
                    self.errors.append(answer["error"])

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
        with httpx.stream("POST", f"{base}{path}", headers=headers, timeout=20, **request) as r:
            if r.status_code != 200:
                body = r.read()
                if task_id is None and r.status_code in (429, 503):
                    with self.lock:  # refused before a task existed: a retryable error, nothing to resume
                        self.errors.append({"status": r.status_code, "body": body[:300]})
                    return
                raise AssertionError(f"{path}: {r.status_code} {body[:300]}")
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

    def settle(self, base, seconds):
        """GetTask of every answered task until each is final (bounded: `seconds`); their states."""
        states = {}
        for _ in range(seconds * 10):
            states = {t: rpc(base, "GetTask", {"id": t})["result"] for t in self.answered}
            if all(s["status"]["state"] in FINAL for s in states.values()):
                break
            time.sleep(0.1)
        return states


def check_stream(task_id, seen, events):
    snapshot = [s[1] for s in seen if isinstance(s, tuple)]
    numbers = [s for s in seen if isinstance(s, int)]
    first = snapshot[0] + 1 if snapshot else 1
    want = [e for e in range(first, events + 1)]
    assert numbers == want, f"stream of {task_id}: {seen} (its log has {events} events)"


def check_streams(load, last_seq):
    """Each stream, joined with its resubscriptions, saw each event once, in order, to the final one."""
    for task_id, seen in load.streams.items():
        assert task_id in load.final_seen, f"the stream of {task_id} never reached its final event: {seen}"
        check_stream(task_id, seen, last_seq[task_id])


def check_runs(runs_log):
    """A run delivered again keeps its run id with a higher attempt (a delivery whose process died
    before it reached the agent leaves a gap in the attempts, never a repeat). Returns the runs."""
    runs = [json.loads(line) for line in Path(runs_log).read_text().splitlines()]
    attempts = {}
    for r in runs:
        seen = attempts.setdefault(r["run"], [])
        assert not seen or r["attempt"] > seen[-1], f"run {r['run']}: attempt {r['attempt']} after {seen}"
        seen.append(r["attempt"])
    return runs


def check(load, states, last_seq, runs_log, received):
    """Every check of the module's docstring; `last_seq[task id]` is the task's last event as stored.
    Returns a one-line summary."""
    assert load.answered, "no SendMessage was answered: the load did not run"
    for task_id, task in states.items():
        state = task["status"]["state"]
        assert state in {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}, (task_id, task)
        if state == "TASK_STATE_COMPLETED":
            text = "".join(p["text"] for p in task["artifacts"][0]["parts"])
            assert text == TEXT, (task_id, text)
        else:
            assert INTERRUPTED in task["status"]["message"]["parts"][0]["text"], task
    check_streams(load, last_seq)
    runs = check_runs(runs_log)
    # Webhooks: every event of every task with a webhook, at least once, in order. The last events
    # were recorded as the tasks settled: their deliveries may still be on their way.
    deadline = time.monotonic() + 30
    while True:  # bounded: 30 s
        delivered = {}
        for headers, body in list(received):
            task_id = (body.get("statusUpdate") or body.get("artifactUpdate") or {}).get("taskId")
            delivered.setdefault(task_id, []).append(int(headers["a2a-event-id"]))
        owed = [t for t in load.pushed if not set(range(1, last_seq[t] + 1)) <= set(delivered.get(t, []))]
        if not owed or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for task_id in load.pushed:
        seqs = delivered.get(task_id, [])
        assert seqs == sorted(seqs), f"{task_id}: out of order {seqs}"
        assert set(seqs) == set(range(1, last_seq[task_id] + 1)), f"{task_id}: {seqs} of {last_seq[task_id]}"
    again = sum(1 for r in runs if r["attempt"] > 1)
    return (f"{len(load.answered)} tasks answered, {len(load.streams)} streams, {again} runs delivered again, "
            f"{sum(len(v) for v in delivered.values())} webhook deliveries")
