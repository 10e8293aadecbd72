"""An agent that speaks only A2A 0.3, built with the official a2a-sdk 0.3 server
(tests/cli/sdk03_agent.py, run by the 0.3 venv in $A2A_PY03): the `a2a` command line talks to it
over 0.3 JSON-RPC (the card offers nothing newer), and the gateway puts it behind a 1.0 host that
the official a2a-sdk 1.x client drives on both bindings."""

import os
import time
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from conftest import spawn_agent
from test_cli import lines, run

from support import a2a_local, stop

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def agent03():
    python = os.environ.get("A2A_PY03")
    if not python:
        pytest.fail("A2A_PY03 is not set (the a2a-sdk 0.3 venv's python; scripts/test sets it)")
    url, proc = spawn_agent(python, "sdk03_agent.py")
    yield url
    stop(proc)


def test_the_command_line_speaks_0_3_to_a_0_3_agent(agent03):
    human = run("card", agent03)
    assert "interfaces (using JSONRPC 0.3)" in human.stdout, human.stdout
    (task,) = lines(run("--json", "send", agent03, "hello old agent"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "hello old agent"
    streamed = lines(run("--json", "send", agent03, "slow a b", "--stream"))
    assert [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in streamed if "artifactUpdate" in e] == ["a ", "b "]
    asked = run("--json", "send", agent03, "ask me")
    assert asked.returncode == 6
    (asked,) = lines(asked)
    (answered,) = lines(run("--json", "send", agent03, "Ada", "--task", asked["id"], "--context", asked["contextId"]))
    assert answered["artifacts"][0]["parts"][0]["text"] == "Hello, Ada!"
    (got,) = lines(run("--json", "get", agent03, answered["id"]))
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    (slow,) = lines(run("--json", "send", agent03, "slow a b c d e f g", "--no-wait"))
    time.sleep(0.5)
    (canceled,) = lines(run("--json", "cancel", agent03, slow["id"]))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    listed = run("list", agent03)
    assert listed.returncode == 4 and "not part of A2A 0.3" in listed.stderr


@pytest.fixture(scope="module")
def gateway03(agent03):
    base, proc = a2a_local(["--agent-a2a", agent03])
    yield base
    stop(proc)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_0_3_upstream_behind_the_gateway(gateway03, binding):
    config = ClientConfig(streaming=True, supported_protocol_bindings=[binding], httpx_client=httpx.AsyncClient(timeout=30))
    client = await ClientFactory(config).create_from_url(gateway03)
    msg = lambda text, **ids: pb.SendMessageRequest(  # noqa: E731
        message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text=text)], **ids)
    )
    events = [e async for e in client.send_message(msg("slow one two"))]
    chunks = [e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")]
    assert chunks == ["one ", "two "]
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
    asked = [e async for e in client.send_message(msg("ask me"))]
    task_id = asked[0].task.id
    assert asked[-1].status_update.status.state == pb.TASK_STATE_INPUT_REQUIRED
    answered = [e async for e in client.send_message(msg("Ada", task_id=task_id))]
    assert answered[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
    texts = [e.artifact_update.artifact.parts[0].text for e in answered if e.HasField("artifact_update")]
    assert texts == ["Hello, Ada!"]
