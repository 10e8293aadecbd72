"""Interop: the official A2A Python SDK (`a2a-sdk`) as a client of `a2a-local`, over JSON-RPC,
HTTP+JSON and gRPC (A2A 1.0; the SDK reads each interface from the card), and over its 0.3
compatibility transport."""

import os
import subprocess
import uuid

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.types import a2a_pb2 as pb

from conftest import KEYS, start_local, stop_local
from support import free_port

pytestmark = pytest.mark.anyio

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


def http_client(principal="alice"):
    return httpx.AsyncClient(headers={"X-API-Key": KEYS[principal]}, timeout=30)


def with_api_key(details, key):
    return details._replace(metadata=list(details.metadata or []) + [("x-api-key", key)])


class UnaryApiKey(grpc.aio.UnaryUnaryClientInterceptor):
    """Sends the principal's API key as `x-api-key` metadata (the gRPC form of the X-API-Key header;
    the SDK's gRPC transport forwards only the call context's headers). grpc.aio files an
    interceptor under one call shape, hence one class per shape."""

    def __init__(self, key):
        self.key = key

    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(with_api_key(details, self.key), request)


class StreamApiKey(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, key):
        self.key = key

    async def intercept_unary_stream(self, continuation, details, request):
        return await continuation(with_api_key(details, self.key), request)


def grpc_channel(principal):
    key = KEYS[principal]
    return lambda target: grpc.aio.insecure_channel(target, interceptors=[UnaryApiKey(key), StreamApiKey(key)])


async def make_client(base, binding, *, streaming=True, polling=False, principal="alice"):
    config = ClientConfig(
        streaming=streaming,
        polling=polling,
        supported_protocol_bindings=[binding],
        httpx_client=http_client(principal),
        grpc_channel_factory=grpc_channel(principal),
    )
    return await ClientFactory(config).create_from_url(base)


def user_message(message_id, text="hello", task_id=None):
    m = pb.Message(message_id=message_id, role=pb.ROLE_USER, parts=[pb.Part(text=text)])
    if task_id:
        m.task_id = task_id
    return m


async def send(client, message_id, text="hello", **kw):
    # messageIds are unique per message (SendMessage is idempotent on them); the conformance agent
    # reads only the prefix.
    message_id = f"{message_id}-{uuid.uuid4().hex[:8]}"
    events = [e async for e in client.send_message(pb.SendMessageRequest(message=user_message(message_id, text, **kw)))]
    return events


@pytest.mark.parametrize("binding", BINDINGS)
async def test_card_and_blocking_send(server, binding):
    client = await make_client(server, binding, streaming=False)
    events = await send(client, f"m-{uuid.uuid4()}", "interop hello")
    assert len(events) == 1
    task = events[0].task
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == "interop hello"
    assert task.context_id


@pytest.mark.parametrize("binding", BINDINGS)
async def test_non_blocking_send_then_get(server, binding):
    client = await make_client(server, binding, streaming=False, polling=True)
    events = await send(client, "test-resubscribe-message-id-nb")
    task = events[0].task
    assert task.status.state in (pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING)
    got = await client.get_task(pb.GetTaskRequest(id=task.id))
    assert got.id == task.id
    canceled = await client.cancel_task(pb.CancelTaskRequest(id=task.id))
    assert canceled.status.state == pb.TASK_STATE_CANCELED


@pytest.mark.parametrize("binding", BINDINGS)
async def test_stream_in_order(server, binding):
    client = await make_client(server, binding)
    events = await send(client, "tck-stream-ordering-001")
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds == ["task", "status_update", "artifact_update", "status_update"]
    assert events[1].status_update.status.state == pb.TASK_STATE_WORKING
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED


@pytest.mark.parametrize("binding", BINDINGS)
async def test_direct_message_and_rejection(server, binding):
    client = await make_client(server, binding, streaming=False)
    events = await send(client, "tck-message-response-1")
    assert events[0].message.parts[0].text == "Direct message response"
    events = await send(client, "tck-reject-task-1")
    assert events[0].task.status.state == pb.TASK_STATE_REJECTED


@pytest.mark.parametrize("binding", BINDINGS)
async def test_subscribe_and_multi_turn(server, binding):
    client = await make_client(server, binding, streaming=False, polling=True)
    task = (await send(client, "test-resubscribe-message-id-sub"))[0].task
    streamer = await make_client(server, binding)
    events = [e async for e in streamer.subscribe(pb.SubscribeToTaskRequest(id=task.id))]
    assert events[0].WhichOneof("payload") == "task"
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED

    blocking = await make_client(server, binding, streaming=False)
    first = (await send(blocking, "tck-input-required-sdk"))[0].task
    assert first.status.state == pb.TASK_STATE_INPUT_REQUIRED
    second = (await send(blocking, "follow-up", "more", task_id=first.id))[0].task
    assert second.status.state == pb.TASK_STATE_COMPLETED
    assert second.context_id == first.context_id


@pytest.mark.parametrize("binding", BINDINGS)
async def test_list_tasks(server, binding):
    client = await make_client(server, binding, streaming=False, principal="bob")
    for i in range(3):
        await send(client, f"list-{binding}-{i}")
    page = await client.list_tasks(pb.ListTasksRequest(page_size=2))
    assert len(page.tasks) == 2
    assert page.total_size >= 3
    assert page.next_page_token
    rest = await client.list_tasks(pb.ListTasksRequest(page_size=100, page_token=page.next_page_token))
    ids = {t.id for t in page.tasks} | {t.id for t in rest.tasks}
    assert len(ids) == page.total_size
    # Alice sees none of Bob's tasks.
    alice = await make_client(server, binding, streaming=False)
    mine = await alice.list_tasks(pb.ListTasksRequest(page_size=100))
    assert not ids & {t.id for t in mine.tasks}


@pytest.mark.parametrize("binding", BINDINGS)
async def test_push_config_crud(server, binding):
    client = await make_client(server, binding, streaming=False)
    task = (await send(client, f"push-{binding}"))[0].task
    created = await client.create_task_push_notification_config(
        pb.TaskPushNotificationConfig(task_id=task.id, url="https://93.184.216.34/cb", token="t0k",
                                      authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="s3cret"))
    )
    assert created.id and created.task_id == task.id
    got = await client.get_task_push_notification_config(pb.GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id))
    assert got.url == "https://93.184.216.34/cb"
    listed = await client.list_task_push_notification_configs(pb.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert [c.id for c in listed.configs] == [created.id]
    await client.delete_task_push_notification_config(pb.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id))
    await client.delete_task_push_notification_config(pb.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id))
    listed = await client.list_task_push_notification_configs(pb.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert list(listed.configs) == []


@pytest.mark.parametrize("binding", BINDINGS)
async def test_extended_card_and_errors(server, binding):
    client = await make_client(server, binding)
    card = await client.get_extended_agent_card(pb.GetExtendedAgentCardRequest())
    assert card.name == "a2a-serverless agent (extended)"
    with pytest.raises(Exception) as err:
        await client.get_task(pb.GetTaskRequest(id="does-not-exist"))
    assert "not found" in str(err.value).lower()


async def test_sdk_0_3_compat_transport(server):
    """The SDK's own 0.3 client, chosen by offering it only the 0.3 interface."""
    async with http_client() as hc:
        card = await A2ACardResolver(hc, server).get_agent_card()
    legacy = [i for i in card.supported_interfaces if i.protocol_version.startswith("0.3")]
    assert legacy, card.supported_interfaces
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(legacy)
    client = ClientFactory(ClientConfig(streaming=True, httpx_client=http_client())).create(card)
    events = [e async for e in client.send_message(pb.SendMessageRequest(message=user_message(f"tck-stream-001-{uuid.uuid4()}")))]
    assert events[0].WhichOneof("payload") == "task"
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
    task = await client.get_task(pb.GetTaskRequest(id=events[0].task.id))
    assert task.status.state == pb.TASK_STATE_COMPLETED


async def test_raw_0_3_jsonrpc_flow_without_version_header(server):
    """A 0.3 client speaking raw JSON-RPC with no A2A-Version header."""
    async with httpx.AsyncClient(headers={"X-API-Key": KEYS["alice"]}, timeout=30) as hc:
        async def rpc(method, params, rid=1):
            r = await hc.post(server + "/", json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            assert r.status_code == 200
            return r.json()

        card = (await hc.get(server + "/.well-known/agent.json")).json()
        assert card["protocolVersion"] == "0.3.0" and card["url"]
        msg = {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user", "parts": [{"kind": "text", "text": "hi 0.3"}]}
        res = await rpc("message/send", {"message": msg})
        task = res["result"]
        assert task["kind"] == "task" and task["status"]["state"] == "completed"
        assert task["artifacts"][0]["parts"][0] == {"kind": "text", "text": "hi 0.3"}
        got = await rpc("tasks/get", {"id": task["id"], "historyLength": 1})
        assert got["result"]["id"] == task["id"] and len(got["result"]["history"]) == 1
        res = await rpc("tasks/cancel", {"id": task["id"]})
        assert res["error"]["code"] == -32002
        res = await rpc("tasks/get", {"id": "nope"})
        assert res["error"]["code"] == -32001

        file_msg = dict(msg, messageId=f"tck-artifact-file-{uuid.uuid4()}")
        res = await rpc("message/send", {"message": file_msg})
        part = res["result"]["artifacts"][0]["parts"][0]
        assert part["kind"] == "file" and part["file"]["bytes"] == "dGNr" and part["file"]["name"] == "output.txt"

        stream_msg = dict(msg, messageId=f"tck-stream-003-{uuid.uuid4()}")
        body = {"jsonrpc": "2.0", "id": "s", "method": "message/stream", "params": {"message": stream_msg}}
        events = []
        async with hc.stream("POST", server + "/", json=body) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            async for line in r.aiter_lines():
                if line.startswith("data: "):
                    import json
                    events.append(json.loads(line[6:])["result"])
        assert [e["kind"] for e in events] == ["task", "status-update", "artifact-update", "status-update"]
        assert events[-1]["final"] is True

        res = await rpc("tasks/pushNotificationConfig/set", {"taskId": task["id"], "pushNotificationConfig": {"url": "https://93.184.216.34/cb"}})
        assert res["result"]["pushNotificationConfig"]["url"] == "https://93.184.216.34/cb"
        res = await rpc("tasks/pushNotificationConfig/list", {"id": task["id"]})
        assert len(res["result"]) == 1
        res = await rpc("tasks/pushNotificationConfig/delete", {"id": task["id"], "pushNotificationConfigId": task["id"]})
        assert res["result"] is None
        res = await rpc("agent/getAuthenticatedExtendedCard", {})
        assert res["result"]["name"] == "a2a-serverless agent (extended)"


def normalized(message, names):
    """A proto message as a dict with ids and timestamps replaced by their order of appearance, so
    that the same scenario on two bindings compares equal."""
    from google.protobuf.json_format import MessageToDict

    def walk(value, key=None):
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if key in ("id", "taskId", "contextId", "messageId", "artifactId"):
            return names.setdefault(value, f"id-{len(names)}")
        if key == "timestamp":
            return "<timestamp>"
        return value

    return walk(MessageToDict(message))


async def scenario(server, binding):
    """Streams, a blocking artifact, a read back, a multi-turn task, and four errors."""
    names, out = {}, []
    streaming = await make_client(server, binding)
    out.append([normalized(e, names) for e in await send(streaming, "tck-stream-artifact-chunked")])
    blocking = await make_client(server, binding, streaming=False)
    [reply] = await send(blocking, "tck-artifact-data")
    out.append(normalized(reply, names))
    out.append(normalized(await blocking.get_task(pb.GetTaskRequest(id=reply.task.id, history_length=1)), names))
    [first] = await send(blocking, "tck-input-required")
    [second] = await send(blocking, "tck-complete-task", task_id=first.task.id)
    out += [normalized(first, names), normalized(second, names)]
    calls = [
        blocking.get_task(pb.GetTaskRequest(id="does-not-exist")),
        blocking.cancel_task(pb.CancelTaskRequest(id=reply.task.id)),
        blocking.get_task_push_notification_config(
            pb.GetTaskPushNotificationConfigRequest(task_id=reply.task.id, id="nope")),
        streaming.subscribe(pb.SubscribeToTaskRequest(id=reply.task.id)).__anext__(),
    ]
    for call in calls:
        with pytest.raises(Exception) as err:
            await call
        out.append(type(err.value).__name__)
    return out


async def test_the_three_bindings_are_equivalent(server):
    """The same scenario over JSON-RPC, HTTP+JSON and gRPC gives the same tasks, events and errors."""
    results = {binding: await scenario(server, binding) for binding in BINDINGS}
    assert results["JSONRPC"][-4:] == [
        "TaskNotFoundError", "TaskNotCancelableError", "TaskNotFoundError", "UnsupportedOperationError"
    ], results["JSONRPC"][-4:]
    assert results["HTTP+JSON"] == results["JSONRPC"]
    assert results["GRPC"] == results["JSONRPC"]


def test_the_card_declares_the_public_grpc_address():
    """Behind a load balancer the card names the public host:port, not the bound address."""
    binary = os.environ["A2A_LOCAL_BIN"]
    bad = subprocess.run([binary, "--grpc-addr", "127.0.0.1:0", "--grpc-public-addr", "https://x:1"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "is not host:port" in bad.stderr, bad.stderr
    proc, base = start_local(binary, free_port(), ["--grpc-addr", "127.0.0.1:0", "--grpc-public-addr", "agent.example.com:443"])
    try:
        card = httpx.get(f"{base}/.well-known/agent-card.json", timeout=5).json()
        grpc_interfaces = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        assert grpc_interfaces == [{"url": "agent.example.com:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]
    finally:
        stop_local(proc)
