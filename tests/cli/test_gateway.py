"""The gateway (`a2a-local --agent-a2a URL`) in front of an agent built with the official a2a-sdk
(tests/cli/sdk_agent.py), driven by the official a2a-sdk client over JSON-RPC and HTTP+JSON, on the
default store (SQLite), on --store aws (moto), and with the gateway calling the upstream over gRPC: blocking and streaming sends relayed event by event,
multi-turn through the upstream's INPUT_REQUIRED, a cancel forwarded to the upstream task, an
upstream failure ending the task FAILED with its reason, and push notifications through the host."""

import os
import sys
import time
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb

from conftest import spawn_agent
from support import a2a_local, stop, webhook_receiver

BINDINGS = ["JSONRPC", "HTTP+JSON"]

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def upstream(sdk):
    return sdk


@pytest.fixture(scope="module", params=["sqlite", "aws", "grpc-upstream"])
def gateway(request, upstream, tmp_path_factory):
    """a2a-local in front of the SDK agent; "grpc-upstream" talks to it over gRPC (AGENT_A2A_BINDING)."""
    args = ["--agent-a2a", upstream, "--webhook-allow", "127.0.0.1/32"]
    if request.param == "grpc-upstream":
        log = tmp_path_factory.mktemp("gateway") / "a2a-local.log"
        os.environ["AGENT_A2A_BINDING"] = "GRPC"
        try:
            base, proc = a2a_local(args, log=open(log, "w"))
        finally:
            del os.environ["AGENT_A2A_BINDING"]
        yield base
        stop(proc)
        connected = [line for line in log.read_text().splitlines() if "upstream agent connected" in line]
        assert connected and all("GRPC" in line for line in connected), log.read_text()[-2000:]
        return
    if request.param == "aws":
        if not os.environ.get("AWS_ENDPOINT_URL"):
            pytest.fail("AWS_ENDPOINT_URL is not set (scripts/test starts moto)")
        args += ["--store", "aws", "--create-resources"]
        os.environ["TABLE_NAME"] = f"gateway-{uuid.uuid4().hex[:12]}"
    base, proc = a2a_local(args)
    yield base
    stop(proc)


async def client(base, binding, streaming):
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding], httpx_client=httpx.AsyncClient(timeout=30))
    return await ClientFactory(config).create_from_url(base)


def message(text, **ids):
    return pb.SendMessageRequest(
        message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text=text)], **ids)
    )


def upstream_tasks(upstream):
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 100}}
    resp = httpx.post(f"{upstream}/", json=body, headers={"A2A-Version": "1.0"}, timeout=10).json()
    return resp["result"]["tasks"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_blocking_streaming_and_multi_turn(gateway, binding):
    blocking = await client(gateway, binding, streaming=False)
    (reply,) = [e async for e in blocking.send_message(message("hello gateway"))]
    assert reply.task.status.state == pb.TASK_STATE_COMPLETED
    assert reply.task.artifacts[0].parts[0].text == "hello gateway"

    streaming = await client(gateway, binding, streaming=True)
    events = [e async for e in streaming.send_message(message("slow one two three"))]
    chunks = [e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")]
    assert chunks == ["one ", "two ", "three "], "relayed as the upstream sent them"
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED

    (asked,) = [e async for e in blocking.send_message(message("ask me"))]
    assert asked.task.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert asked.task.status.message.parts[0].text == "What is your name?"
    (answered,) = [e async for e in blocking.send_message(message("Ada", task_id=asked.task.id))]
    assert answered.task.id == asked.task.id
    assert answered.task.status.state == pb.TASK_STATE_COMPLETED
    assert answered.task.artifacts[-1].parts[0].text == "Hello, Ada!"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_cancel_reaches_the_upstream_and_failures_carry_their_reason(gateway, upstream, binding):
    c = await client(gateway, binding, streaming=False)
    req = message("slow a b c d e f g h i j")
    req.configuration.return_immediately = True
    (started,) = [e async for e in c.send_message(req)]
    time.sleep(0.8)
    before = {t["id"] for t in upstream_tasks(upstream) if t["status"]["state"] == "TASK_STATE_CANCELED"}
    canceled = await c.cancel_task(pb.CancelTaskRequest(id=started.task.id))
    assert canceled.status.state == pb.TASK_STATE_CANCELED
    for _ in range(50):  # bounded: 5 s
        now = {t["id"] for t in upstream_tasks(upstream) if t["status"]["state"] == "TASK_STATE_CANCELED"}
        if now - before:
            break
        time.sleep(0.1)
    assert now - before, "the upstream task was canceled too"

    (failed,) = [e async for e in c.send_message(message("fail"))]
    assert failed.task.status.state == pb.TASK_STATE_FAILED
    assert "it went wrong on purpose" in failed.task.status.message.parts[0].text


async def test_push_notifications_through_the_gateway(gateway):
    hook, received = webhook_receiver()
    c = await client(gateway, "JSONRPC", streaming=False)
    req = message("slow p q")
    req.configuration.return_immediately = True
    req.configuration.task_push_notification_config.url = hook
    (started,) = [e async for e in c.send_message(req)]
    for _ in range(100):  # bounded: 10 s
        states = [b["statusUpdate"]["status"]["state"] for _, b in received if "statusUpdate" in b]
        if "TASK_STATE_COMPLETED" in states:
            break
        time.sleep(0.1)
    assert "TASK_STATE_COMPLETED" in states, received
    assert all(b.get("statusUpdate", b.get("artifactUpdate", {})).get("taskId") == started.task.id for _, b in received)


def test_sigv4_to_an_upstream_like_agentcore(tmp_path):
    """AGENT_A2A_AUTH=sigv4: every call to the upstream is signed (service bedrock-agentcore) with
    the process's AWS credentials; the upstream recomputes each signature with botocore."""
    creds = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
             "AWS_REGION": "eu-west-1"}
    log = tmp_path / "upstream.log"
    upstream, proc = spawn_agent(sys.executable, "sdk_agent.py", "--verify-sigv4", "eu-west-1", "bedrock-agentcore",
                                 stdout=open(log, "w"), env={**os.environ, **creds})
    saved = {k: os.environ.get(k) for k in [*creds, "AGENT_A2A_AUTH"]}
    os.environ.update({**creds, "AGENT_A2A_AUTH": "sigv4"})
    try:
        base, host = a2a_local(["--agent-a2a", upstream])
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    try:
        for streaming in (False, True):
            r = httpx.post(f"{base}/message:send" if not streaming else f"{base}/message:stream",
                           json={"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "signed"}]}},
                           headers={"A2A-Version": "1.0"}, timeout=30)
            assert r.status_code == 200 and "TASK_STATE_COMPLETED" in r.text, r.text
        lines = log.read_text().splitlines()
        assert "sigv4 ok" in lines and "sigv4 mismatch" not in lines, lines
        # Signed with another secret: the upstream refuses, the task ends FAILED with the reason.
        os.environ.update({**creds, "AGENT_A2A_AUTH": "sigv4", "AWS_SECRET_ACCESS_KEY": "not-the-secret"})
        try:
            wrong, other = a2a_local(["--agent-a2a", upstream])
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        try:
            body = {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "x"}]}}
            task = httpx.post(f"{wrong}/message:send", json=body, headers={"A2A-Version": "1.0"}, timeout=30).json()["task"]
            assert task["status"]["state"] == "TASK_STATE_FAILED"
            assert "upstream agent" in task["status"]["message"]["parts"][0]["text"]
            assert "sigv4 mismatch" in log.read_text().splitlines()
        finally:
            stop(other)
    finally:
        stop(host, proc)
