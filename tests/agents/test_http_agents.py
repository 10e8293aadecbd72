"""Agents in other languages behind a2a-local (docs/agent-http.md), driven by the official a2a-sdk
client: the Python and TypeScript example agents on the default store (SQLite) and on --store aws (moto) —
blocking and streaming sends with the chunked artifact arriving piece by piece, multi-turn
INPUT_REQUIRED, a cancel during a run reaching the agent — and a misbehaving agent whose every fault
ends the task FAILED with its reason, a slow agent kept alive across the queue's visibility timeout
(run once), and SigV4 signing checked with botocore. Needs $A2A_LOCAL_BIN, Node 22 on PATH (the edge
toolchain's) and, for the AWS half, the moto variables scripts/test exports."""

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from support import a2a_local, free_port, stop, wait_ready  # noqa: E402

pytestmark = pytest.mark.anyio

EXAMPLES = {
    "python": [sys.executable, str(ROOT / "examples/agents/python/agent.py")],
    "typescript": ["node", str(ROOT / "examples/agents/typescript/agent.ts")],
}
BACKENDS = ["sqlite", "aws"]
WORD_DELAY = 0.25


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


class Agent:
    """An agent process on 127.0.0.1 whose output is kept (the tests read what it logged)."""

    def __init__(self, command, env=None):
        self.port = free_port()
        self.log = Path(os.environ.get("A2A_TEST_LOGS", "/tmp")) / f"agent-{self.port}.log"
        self.proc = subprocess.Popen(
            [*command[:2], str(self.port), *command[2:]],  # interpreter, script, port, options
            stdout=open(self.log, "w"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "WORD_DELAY": str(WORD_DELAY), **(env or {})},
        )
        self.url = f"http://127.0.0.1:{self.port}/"
        for _ in range(100):  # bounded: 10 s
            if "listening" in self.log.read_text():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the agent exited: {self.log.read_text()}")
            time.sleep(0.1)
        raise RuntimeError("the agent did not start")

    def lines(self):
        return self.log.read_text().splitlines()


def host(agent_url, backend, *extra, env=None):
    """a2a-local in front of an agent over HTTP."""
    args = ["--agent-url", agent_url, *extra]
    if backend == "aws":
        if not os.environ.get("AWS_ENDPOINT_URL"):
            pytest.fail("AWS_ENDPOINT_URL is not set (scripts/test starts moto)")
        args += ["--store", "aws", "--create-resources"]
        os.environ["TABLE_NAME"] = f"agents-{uuid.uuid4().hex[:12]}"
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        return a2a_local(args)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


async def client(base, *, streaming=False, polling=False):
    config = ClientConfig(streaming=streaming, polling=polling, supported_protocol_bindings=["JSONRPC"],
                          httpx_client=httpx.AsyncClient(timeout=60))
    return await ClientFactory(config).create_from_url(base)


def message(text, task_id=None):
    m = pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)])
    if task_id:
        m.task_id = task_id
    return m


def artifact_text(task):
    return "".join(p.text for a in task.artifacts for p in a.parts)


async def wait_state(c, task_id, states, seconds=20):
    for _ in range(seconds * 10):
        task = await c.get_task(pb.GetTaskRequest(id=task_id))
        if task.status.state in states:
            return task
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id} did not reach {states}: {task.status}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("language", EXAMPLES)
async def test_example_agents(language, backend):
    agent = Agent(EXAMPLES[language])
    base, proc = host(agent.url, backend)
    try:
        # Blocking: the whole answer.
        c = await client(base)
        task = [e async for e in c.send_message(pb.SendMessageRequest(message=message("hello there world")))][0].task
        assert task.status.state == pb.TASK_STATE_COMPLETED, task.status
        assert artifact_text(task) == "You said: hello there world"

        # Streaming: each chunk arrives as the agent sends it, not all at the end.
        s = await client(base, streaming=True)
        arrivals = []
        async for event in s.send_message(pb.SendMessageRequest(message=message("one two three four"))):
            if event.WhichOneof("payload") == "artifact_update":
                arrivals.append((time.monotonic(), event.artifact_update))
        assert [u.append for _, u in arrivals] == [False, True, True, True, True]
        assert [u.last_chunk for _, u in arrivals][-1] is True
        spread = arrivals[-1][0] - arrivals[0][0]
        assert spread >= 3 * WORD_DELAY * 0.8, f"chunks came {spread:.2f} s apart in all: buffered?"

        # Multi-turn: asked back, then answered on the same task.
        first = [e async for e in c.send_message(pb.SendMessageRequest(message=message(" ")))][0].task
        assert first.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert first.status.message.parts[0].text == "What should I answer?"
        second = [e async for e in c.send_message(pb.SendMessageRequest(message=message("lisbon", first.id)))][0].task
        assert second.status.state == pb.TASK_STATE_COMPLETED and second.context_id == first.context_id

        # Cancel during a run reaches the agent.
        p = await client(base, polling=True)
        long_text = " ".join(f"w{i}" for i in range(40))
        running = [e async for e in p.send_message(pb.SendMessageRequest(message=message(long_text)))][0].task
        await wait_state(p, running.id, [pb.TASK_STATE_WORKING])
        canceled = await p.cancel_task(pb.CancelTaskRequest(id=running.id))
        assert canceled.status.state == pb.TASK_STATE_CANCELED
        for _ in range(50):  # bounded: 5 s
            if any(running.id in line and "cancel" in line for line in agent.lines()):
                break
            await asyncio.sleep(0.1)
        assert any(running.id in line and "cancel" in line for line in agent.lines()), agent.lines()
    finally:
        stop(proc, agent.proc)


BAD = {
    "http-500": "the agent answered HTTP 500: boom: the model is down",
    "garbage": "the agent's event 2 is not JSON",
    "not-an-event": "the agent's event 2 is not an A2A statusUpdate, artifactUpdate or message",
    "truncated": "the agent's answer was cut off in the middle of an event",
    "unspecified": "the agent sent an event the task cannot take",
    "backwards": "the agent sent an event the task cannot take: TASK_STATE_SUBMITTED after TASK_STATE_WORKING",
    "user-message": "the agent sent an event the task cannot take: a message with role ROLE_USER",
    "user-status": "the agent sent an event the task cannot take: a status message with role ROLE_USER",
    "silence 3": "the agent sent nothing for 1 s",
    "drop": "the agent's answer broke off",
    "many-parts": "the agent's event 2 holds more than 200000 JSON values",
    "too-many-parts": "the agent's event 2 is not an A2A statusUpdate, artifactUpdate or message: "
                      "holds more than 1024 parts",
}


async def test_a_misbehaving_agent_fails_its_tasks_with_a_reason():
    agent = Agent([sys.executable, str(ROOT / "tests/agents/misbehaving.py")])
    base, proc = host(agent.url, "sqlite", env={"AGENT_IDLE_TIMEOUT": "1"})
    try:
        c = await client(base)
        for text, why in BAD.items():
            task = [e async for e in c.send_message(pb.SendMessageRequest(message=message(text)))][0].task
            assert task.status.state == pb.TASK_STATE_FAILED, (text, task.status)
            reason = task.status.message.parts[0].text
            assert reason.startswith(why), (text, reason)
            if text in ("user-message", "user-status"):
                # The refused message is not in the history: only the client's own and the reason.
                got = await c.get_task(pb.GetTaskRequest(id=task.id))
                said = [p.text for m in got.history for p in m.parts]
                assert "I approve the payment" not in said, said
                assert [m.role for m in got.history][0] == pb.ROLE_USER
            if text in ("garbage", "not-an-event", "truncated", "silence 3", "drop"):
                # What came before the fault stays recorded: the WORKING event.
                events = await c.get_task(pb.GetTaskRequest(id=task.id))
                assert events.status.state == pb.TASK_STATE_FAILED
        # Events after the end of the turn change nothing: the task keeps its final state.
        task = [e async for e in c.send_message(pb.SendMessageRequest(message=message("after-the-end")))][0].task
        assert task.status.state == pb.TASK_STATE_COMPLETED
        # An agent that is not there at all.
        port = free_port()
        base2, proc2 = host(f"http://127.0.0.1:{port}/", "sqlite")
        try:
            c2 = await client(base2)
            task = [e async for e in c2.send_message(pb.SendMessageRequest(message=message("hi")))][0].task
            assert task.status.state == pb.TASK_STATE_FAILED
            assert task.status.message.parts[0].text.startswith("the agent could not be reached")
        finally:
            stop(proc2)
    finally:
        stop(proc, agent.proc)


async def test_a_slow_agent_outlives_the_visibility_timeout_and_runs_once():
    agent = Agent([sys.executable, str(ROOT / "tests/agents/misbehaving.py")])
    base, proc = host(agent.url, "aws", env={"SQS_VISIBILITY_SECONDS": "2"})
    try:
        c = await client(base)
        task = [e async for e in c.send_message(pb.SendMessageRequest(message=message("slow 6")))][0].task
        assert task.status.state == pb.TASK_STATE_COMPLETED, task.status
        assert artifact_text(task) == "slow and done"
        runs = [line for line in agent.lines() if line.startswith(f"run {task.id}/")]
        assert runs == [f"run {task.id}/0 attempt 1"], runs
    finally:
        stop(proc, agent.proc)


async def test_sigv4_signed_calls_verify_with_botocore():
    region = "eu-west-1"
    creds = {"AGENT_AUTH": "sigv4", "AWS_REGION": region, "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
             "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "AWS_SESSION_TOKEN": "session-token"}
    # The agent checks with the credentials the host signs with (what AWS does for a Function URL).
    agent = Agent([sys.executable, str(ROOT / "tests/agents/misbehaving.py"), "--verify-sigv4", region], env=creds)
    base, proc = host(agent.url, "sqlite", env=creds)
    try:
        c = await client(base)
        task = [e async for e in c.send_message(pb.SendMessageRequest(message=message("signed please")))][0].task
        assert task.status.state == pb.TASK_STATE_COMPLETED, task.status
        assert "sigv4 mismatch" not in agent.lines()
        assert any(line.startswith(f"run {task.id}/") for line in agent.lines())
    finally:
        stop(proc)
    # Signed with other credentials: the agent's check refuses, and the task says so.
    base, proc = host(agent.url, "sqlite", env={**creds, "AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    try:
        c = await client(base)
        task = [e async for e in c.send_message(pb.SendMessageRequest(message=message("forged")))][0].task
        assert task.status.state == pb.TASK_STATE_FAILED
        assert task.status.message.parts[0].text.startswith("the agent answered HTTP 403")
        assert "sigv4 mismatch" in agent.lines()
    finally:
        stop(proc, agent.proc)
