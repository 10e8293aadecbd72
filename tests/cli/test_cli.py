"""The `a2a` command line against a2a-local (an agent over HTTP behind it, tests/cli/agent.py), over
JSON-RPC and HTTP+JSON: every command with `--json` output parsed, the exit codes of each failure
kind, credentials from the environment never printed, files saved, and the terminal experience
through a pseudo-terminal (spinner, colours, the interactive chat with INPUT_REQUIRED and Ctrl-C).
Needs $A2A_BIN (the `a2a` binary) and $A2A_LOCAL_BIN."""

import json
import os
import re
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from support import a2a_local, free_port, stop  # noqa: E402

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
KEY = "cli-secret-key-123"


def a2a_bin():
    binary = os.environ.get("A2A_BIN")
    if not binary:
        pytest.fail("A2A_BIN is not set (run through scripts/test)")
    return binary


@pytest.fixture(scope="module")
def agent():
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "agent.py"), str(port)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "listening"
    yield f"http://127.0.0.1:{port}/"
    stop(proc)


def grpc_addr():
    """a2a-local's gRPC binding on a free port (the card declares it after the HTTP bindings)."""
    return ["--grpc-addr", f"127.0.0.1:{free_port()}"]


@pytest.fixture(scope="module")
def url(agent):
    base, proc = a2a_local(["--agent-url", agent, "--webhook-allow", "127.0.0.1/32", *grpc_addr()])
    yield base
    stop(proc)


@pytest.fixture(scope="module")
def keyed(agent):
    base, proc = a2a_local(["--agent-url", agent, "--api-keys", f"ops:{KEY}", *grpc_addr()])
    yield base
    stop(proc)


def run(*args, env=None, cwd=None, timeout=60):
    return subprocess.run(
        [a2a_bin(), *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd
    )


def lines(result):
    assert result.stdout, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_card(url):
    r = run("--json", "card", url)
    assert r.returncode == 0, r.stderr
    (card,) = lines(r)
    assert card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
    human = run("card", url)
    assert "interfaces (using JSONRPC)" in human.stdout and "streaming: yes" in human.stdout


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_get_list(url, binding):
    r = run("--json", "--binding", binding, "send", url, "hello cli")
    assert r.returncode == 0, r.stderr
    (task,) = lines(r)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "hello cli"
    (got,) = lines(run("--json", "--binding", binding, "get", url, task["id"], "--history", "0"))
    assert got["id"] == task["id"] and "history" not in got
    (listed,) = lines(run("--json", "--binding", binding, "list", url, "--context", task["contextId"]))
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    (done,) = lines(run("--json", "--binding", binding, "list", url, "--status", "completed", "--page-size", "1"))
    assert len(done["tasks"]) == 1 and done["tasks"][0]["status"]["state"] == "TASK_STATE_COMPLETED"
    human = run("--binding", binding, "send", url, "hello people")
    assert "COMPLETED" in human.stdout and "hello people" in human.stdout


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_prints_each_event_as_it_arrives(url, binding):
    proc = subprocess.Popen(
        [a2a_bin(), "--json", "--binding", binding, "send", url, "slow one two three", "--stream"],
        stdout=subprocess.PIPE,
        text=True,
    )
    first = json.loads(proc.stdout.readline())
    started = time.monotonic()
    assert first["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    rest = [json.loads(line) for line in proc.stdout]
    assert proc.wait(timeout=30) == 0
    assert time.monotonic() - started > 0.5, "events came over time, printed as they arrived"
    chunks = [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in rest if "artifactUpdate" in e]
    assert chunks == ["one ", "two ", "three "]
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_multi_turn_cancel_subscribe_and_exit_codes(url, binding):
    b = ["--json", "--binding", binding]
    asked = run(*b, "send", url, "ask me")
    assert asked.returncode == 6, "needs input"
    (task,) = lines(asked)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answered = run(*b, "send", url, "Ada", "--task", task["id"], "--context", task["contextId"])
    assert answered.returncode == 0
    assert lines(answered)[0]["artifacts"][0]["parts"][0]["text"] == "Hello, Ada!"
    assert run(*b, "send", url, "fail").returncode == 5
    # A slow task: started without waiting, followed, then another one canceled.
    (slow,) = lines(run(*b, "send", url, "slow a b c d", "--no-wait"))
    followed = lines(run(*b, "subscribe", url, slow["id"]))
    assert followed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    (slow,) = lines(run(*b, "send", url, "slow a b c d e f g h", "--no-wait"))
    time.sleep(0.5)
    (canceled,) = lines(run(*b, "cancel", url, slow["id"]))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    missing = run(*b, "get", url, "no-such-task")
    assert missing.returncode == 4 and "TASK_NOT_FOUND" in missing.stderr
    closed = f"http://127.0.0.1:{free_port()}"
    assert run(*b, "card", closed).returncode == 3


@pytest.mark.parametrize("binding", BINDINGS)
def test_push_configs(url, binding):
    b = ["--json", "--binding", binding]
    (task,) = lines(run(*b, "send", url, "push"))
    hook = "http://127.0.0.1:9/hook"
    (created,) = lines(run(*b, "push", "create", url, task["id"], hook, "--id", "c1", "--notification-token", "t"))
    assert (created["id"], created["url"]) == ("c1", hook)
    (got,) = lines(run(*b, "push", "get", url, task["id"], "c1"))
    assert got["url"] == hook
    assert [c["id"] for c in lines(run(*b, "push", "list", url, task["id"]))] == ["c1"]
    assert run(*b, "push", "delete", url, task["id"], "c1").returncode == 0
    assert run(*b, "push", "list", url, task["id"]).stdout == ""


def test_files_go_both_ways(url, tmp_path):
    attachment = tmp_path / "notes.txt"
    attachment.write_text("twelve bytes")
    (task,) = lines(run("--json", "send", url, "see attached", "--file", str(attachment)))
    assert task["artifacts"][0]["parts"][0]["text"] == "see attached; files: notes.txt (12 bytes)"
    saved = run("send", url, "file", cwd=tmp_path)
    assert "saved report.txt (18 bytes)" in saved.stdout
    assert (tmp_path / "report.txt").read_text() == "quarterly numbers\n"


@pytest.mark.parametrize("binding", BINDINGS)
def test_credentials_from_the_environment_are_used_and_never_printed(keyed, binding):
    refused = run("--binding", binding, "send", keyed, "hi")
    assert refused.returncode == 4 and "UNAUTHENTICATED" in refused.stderr
    ok = run("--binding", binding, "send", keyed, "hi", env={"A2A_API_KEY": KEY})
    assert ok.returncode == 0, ok.stderr
    helped = run("--help", env={"A2A_API_KEY": KEY})
    for r in (refused, ok, helped):
        assert KEY not in r.stdout + r.stderr


def test_a_grpc_interface_that_does_not_answer_is_a_connection_failure(agent):
    """The card declares a gRPC port nobody listens on: exit 3 (connection), not a hang."""
    dead = free_port()
    base, proc = a2a_local(["--agent-url", agent, "--grpc-addr", f"127.0.0.1:{free_port()}",
                            "--grpc-public-addr", f"127.0.0.1:{dead}"])
    try:
        r = run("--binding", "GRPC", "send", base, "hi", timeout=30)
        assert r.returncode == 3 and "connection" in r.stderr, r.stderr
    finally:
        stop(proc)


# --- through a pseudo-terminal ---------------------------------------------------------------------


class Terminal:
    """`a2a ARGS` on a pseudo-terminal: what it prints, and keys typed into it."""

    def __init__(self, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvpe(a2a_bin(), [a2a_bin(), *args], {**os.environ, "TERM": "xterm"})
        self.out = b""

    def read_until(self, text, seconds=20, times=1):
        """Reads until `text` has been printed `times` times in all."""
        deadline = time.monotonic() + seconds
        while self.out.count(text.encode()) < times:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} not seen in {self.out.decode(errors='replace')!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    self.out += os.read(self.fd, 4096)
                except OSError:
                    break
        return self.out.decode(errors="replace")

    def type(self, text):
        os.write(self.fd, text.encode())

    def exit_code(self, seconds=20):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.1)
                if ready:
                    self.out += os.read(self.fd, 4096)
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, 9)
        raise AssertionError("a2a did not exit")


def test_a_terminal_gets_a_spinner_colours_and_elapsed_time(url):
    term = Terminal("send", url, "slow one two three four", "--stream")
    screen = term.read_until("after")
    assert term.exit_code() == 0
    assert any(frame in screen for frame in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"), "a spinner while waiting"
    assert "\x1b[1;32mCOMPLETED\x1b[0m" in screen, "the state in colour"
    plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]|\r", "", screen)
    assert "one two three four" in plain, plain
    assert "[  " in screen and "s]" in screen, "elapsed time"
    blocking = Terminal("send", url, "slow a b c")
    screen = blocking.read_until("COMPLETED")
    assert blocking.exit_code() == 0 and "waiting for the agent" in screen


def test_chat_asks_answers_and_cancels_with_ctrl_c(url):
    term = Terminal("chat", url)
    term.read_until("you> ")
    term.type("ask me something\n")
    term.read_until("What is your name?")
    term.read_until("you (the agent asked)> ")
    term.type("Ada\n")
    term.read_until("Hello, Ada!")
    term.read_until("COMPLETED")
    term.read_until("you> ")
    term.type("slow one two three four five six seven eight\n")
    term.read_until("WORKING")  # the agent's own status line (the typed text echoes too)
    time.sleep(0.5)
    prompts = term.out.count(b"you> ")
    term.type("\x03")  # Ctrl-C: cancels the running task, the chat goes on
    screen = term.read_until("CANCELED")
    term.read_until("you> ", seconds=10, times=prompts + 1)
    term.type("\x04")  # Ctrl-D at the prompt ends the chat
    assert term.exit_code() == 0
    assert "eight \n" not in screen.replace("\r", ""), "the agent stopped before its last word"
