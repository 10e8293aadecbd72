"""a2a-local on its default store (one SQLite file) killed with SIGKILL under load, again and again,
then restarted: nothing it acknowledged is lost (the load and the checks: tests/crash/load.py; the
file also passes SQLite's integrity check). Also a full disk (a small tmpfs) and a read-only data
directory. Loopback only; every loop is bounded in count and time."""

import os
import random
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import Load, check, message, rpc, start_agent  # noqa: E402
from support import free_port, required, stop, wait_ready, webhook_receiver  # noqa: E402

ROUNDS = int(os.environ.get("CRASH_ROUNDS", "6"))


def binary():
    return required("A2A_LOCAL_BIN")


def start_local(data_dir, agent_url, log, extra=()):
    port = free_port()
    proc = subprocess.Popen(
        [binary(), "--addr", f"127.0.0.1:{port}", "--data-dir", str(data_dir), "--agent-url", agent_url,
         "--webhook-allow", "127.0.0.1/32", "--push-timeout", "2", *extra],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_ready(f"{base}/.well-known/agent-card.json", [proc], "a2a-local", 30)
    return base, proc


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
            load.round(base, rng.uniform(0.4, 1.6), kill=lambda: (proc.send_signal(signal.SIGKILL), proc.wait(timeout=10)))

        base, proc = start_local(data_dir, agent_url, server_log)
        load.resume_streams(base)
        # The work taken up again settles: every task on a turn ends it (bounded: 30 s).
        states = load.settle(base, 30)
        stop(proc)
        with closing(sqlite3.connect(f"file:{data_dir / 'a2a.db'}?mode=ro", uri=True)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            last_seq = dict(db.execute("SELECT id, last_seq FROM tasks").fetchall())
        summary = check(load, states, last_seq, runs_log, received)
        print(f"\ncrash: {ROUNDS} kills, {summary}; nothing lost")
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
