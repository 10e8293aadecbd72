"""End to end through the edge worker (wrangler dev + Durable Object) in front of `a2a-local`:
streams served by the task's hub, replay with Last-Event-ID, signed publishes, the card at the
edge, everything else proxied to the origin, and the caller's trace carried across the worker to the
origin and back on the origin's publishes (spans at the OTLP receiver of tests/observability)."""

import asyncio
import hashlib
import hmac
import json
import time
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb

from conftest import EVENT_TTL_SECS, KEYS, SECRET

pytestmark = pytest.mark.anyio

AUTH = {"X-API-Key": KEYS["alice"], "A2A-Version": "1.0"}


def http(headers=AUTH):
    return httpx.AsyncClient(headers=headers, timeout=30)


async def sse(response, limit=50):
    """(id, data, raw comment lines) of an SSE response, until the server closes it."""
    events, comments, current = [], [], {}
    async for line in response.aiter_lines():
        if line.startswith(":"):
            comments.append(line)
        elif line.startswith("id: "):
            current["id"] = int(line[4:])
        elif line.startswith("data: "):
            current["data"] = json.loads(line[6:])
        elif line == "" and current:
            events.append(current)
            current = {}
            if len(events) >= limit:
                break
    return events, comments


async def stream(method, url, *, headers=AUTH, body=None, limit=50):
    async with http(headers) as hc:
        async with hc.stream(method, url, json=body) as r:
            assert r.status_code == 200, await r.aread()
            assert r.headers["content-type"].startswith("text/event-stream")
            assert r.headers.get("a2a-edge") == "hub", "the stream should be served at the edge"
            return await asyncio.wait_for(sse(r, limit), 30)


def message(prefix, text="hello", task_id=None):
    m = {"messageId": f"{prefix}-{uuid.uuid4().hex[:8]}", "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id:
        m["taskId"] = task_id
    return m


async def start_long_task(base):
    """A task that stays WORKING for a few seconds (conformance agent), created through the edge."""
    async with http() as hc:
        r = await hc.post(f"{base}/message:send", json={"message": message("test-resubscribe-message-id"),
                                                        "configuration": {"returnImmediately": True}})
        assert r.status_code == 200, r.text
        return r.json()["task"]["id"]


def kinds(events):
    return [next(iter(e["data"])) for e in events]


async def sdk_client(base, binding, streaming=True):
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        httpx_client=httpx.AsyncClient(headers={"X-API-Key": KEYS["alice"]}, timeout=30),
    )
    return await ClientFactory(config).create_from_url(base)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_sdk_streams_through_the_edge(edge, binding):
    base, _ = edge
    client = await sdk_client(base, binding)
    m = pb.Message(message_id=f"tck-stream-ordering-001-{uuid.uuid4()}", role=pb.ROLE_USER, parts=[pb.Part(text="hi")])
    events = [e async for e in client.send_message(pb.SendMessageRequest(message=m))]
    assert [e.WhichOneof("payload") for e in events] == ["task", "status_update", "artifact_update", "status_update"]
    assert events[1].status_update.status.state == pb.TASK_STATE_WORKING
    assert events[2].artifact_update.artifact.parts[0].text == "Streamed content"
    assert events[3].status_update.status.state == pb.TASK_STATE_COMPLETED


async def test_rest_stream_has_sequence_ids_and_closes(edge):
    base, _ = edge
    events, _ = await stream("POST", f"{base}/message:stream", body={"message": message("tck-stream-001")})
    assert kinds(events) == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert [e["id"] for e in events] == [0, 1, 2, 3]


async def test_two_subscribers_see_identical_events(edge):
    base, _ = edge
    task_id = await start_long_task(base)
    url = f"{base}/tasks/{task_id}:subscribe"
    (a, _), (b, _) = await asyncio.gather(stream("GET", url), stream("POST", url))
    assert a == b
    assert kinds(a)[0] == "task" and kinds(a)[-1] == "statusUpdate"
    assert a[-1]["data"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "artifactUpdate" in kinds(a)


async def test_last_event_id_gets_exactly_the_missed_events(edge):
    base, _ = edge
    task_id = await start_long_task(base)
    url = f"{base}/tasks/{task_id}:subscribe"
    first, _ = await stream("GET", url, limit=1)  # the snapshot, then the client drops
    snapshot_id = first[0]["id"]
    full, _ = await stream("GET", url)  # to completion: the reference
    resumed, _ = await stream("GET", url, headers={**AUTH, "Last-Event-ID": str(snapshot_id)})
    expected = [e for e in full if e["id"] > snapshot_id and "task" not in e["data"]]
    assert resumed == expected and resumed
    # Nothing missed on a finished task: refused, like the origin does.
    async with http() as hc:
        r = await hc.get(url, headers={"Last-Event-ID": str(resumed[-1]["id"])})
        assert r.status_code == 400 and r.json()["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION", r.text


async def test_an_expired_hub_hands_resumes_to_the_origin(edge):
    base, _ = edge
    events, _ = await stream("POST", f"{base}/message:stream", body={"message": message("tck-stream-001")})
    task_id = events[0]["data"]["task"]["id"]
    await asyncio.sleep(EVENT_TTL_SECS + 2)  # the hub's alarm deletes the finished task's events
    async with http() as hc:
        headers = {"Last-Event-ID": "1"}
        async with hc.stream("GET", f"{base}/tasks/{task_id}:subscribe", headers=headers) as r:
            assert r.status_code == 200
            assert "a2a-edge" not in r.headers, "the hub no longer holds the events: the origin serves them"
            resumed, _ = await asyncio.wait_for(sse(r), 30)
    assert resumed == [e for e in events if e["id"] > 1]


async def test_keep_alives_on_an_idle_stream(edge):
    base, _ = edge
    task_id = await start_long_task(base)
    _, comments = await stream("GET", f"{base}/tasks/{task_id}:subscribe")
    assert ": keep-alive" in comments


async def test_jsonrpc_0_3_stream_through_the_edge(edge):
    base, _ = edge
    msg = {"kind": "message", "messageId": f"tck-stream-003-{uuid.uuid4()}", "role": "user",
           "parts": [{"kind": "text", "text": "hi"}]}
    body = {"jsonrpc": "2.0", "id": "s1", "method": "message/stream", "params": {"message": msg}}
    events, _ = await stream("POST", f"{base}/", headers={"X-API-Key": KEYS["alice"]}, body=body)
    results = [e["data"]["result"] for e in events]
    assert all(e["data"]["id"] == "s1" for e in events)
    assert [r["kind"] for r in results] == ["task", "status-update", "artifact-update", "status-update"]
    assert results[-1]["final"] is True and results[-1]["status"]["state"] == "completed"


def signed(body: bytes, ts=None, secret=SECRET):
    ts = int(time.time()) if ts is None else ts
    sig = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return {"A2A-Edge-Timestamp": str(ts), "A2A-Edge-Signature": f"v1={sig}", "Content-Type": "application/json"}


async def test_publish_requires_a_fresh_valid_signature(edge):
    base, _ = edge
    task_id = str(uuid.uuid4())
    event = {"statusUpdate": {"taskId": task_id, "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}
    body = json.dumps({"taskId": task_id, "events": [{"seq": 1, "event": event}]}).encode()
    url = f"{base}/_edge/publish"
    async with httpx.AsyncClient(timeout=30) as hc:
        unsigned = await hc.post(url, content=body, headers={"Content-Type": "application/json"})
        assert unsigned.status_code == 401 and "required" in unsigned.json()["error"]["message"]
        forged = await hc.post(url, content=body, headers=signed(body, secret="guess"))
        assert forged.status_code == 401 and "bad signature" in forged.json()["error"]["message"]
        stale = await hc.post(url, content=body, headers=signed(body, ts=int(time.time()) - 3600))
        assert stale.status_code == 401 and "window" in stale.json()["error"]["message"]
        tampered = await hc.post(url, content=body.replace(b"WORKING", b"FAILED"), headers=signed(body))
        assert tampered.status_code == 401
        ok = await hc.post(url, content=body, headers=signed(body))
        assert ok.status_code == 204, ok.text


async def test_card_at_the_edge_with_etag_and_304(edge):
    base, _ = edge
    async with httpx.AsyncClient(timeout=30) as hc:
        r = await hc.get(f"{base}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
        assert r.status_code == 200
        card = r.json()
        assert card["name"] == "Edge test agent"
        assert all(i["url"] == base for i in card["supportedInterfaces"])
        assert "max-age" in r.headers["cache-control"] and r.headers["etag"]
        again = await hc.get(f"{base}/.well-known/agent-card.json",
                             headers={"A2A-Version": "1.0", "If-None-Match": r.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        legacy = await hc.get(f"{base}/.well-known/agent.json")
        assert legacy.status_code == 200 and legacy.json()["protocolVersion"] == "0.3.0"


async def test_non_streaming_calls_are_proxied_to_the_origin(edge):
    base, _ = edge
    client = await sdk_client(base, "HTTP+JSON", streaming=False)
    m = pb.Message(message_id=f"m-{uuid.uuid4()}", role=pb.ROLE_USER, parts=[pb.Part(text="via edge")])
    events = [e async for e in client.send_message(pb.SendMessageRequest(message=m))]
    task = events[0].task
    assert task.status.state == pb.TASK_STATE_COMPLETED and task.artifacts[0].parts[0].text == "via edge"
    async with http() as hc:
        got = await hc.get(f"{base}/tasks/{task.id}")
        assert got.status_code == 200 and got.json()["id"] == task.id
        assert got.headers["a2a-task-seq"] == "2"
        missing = await hc.get(f"{base}/tasks/{uuid.uuid4()}")
        assert missing.status_code == 404 and missing.json()["error"]["status"] == "NOT_FOUND"
    async with httpx.AsyncClient(timeout=30) as anon:
        refused = await anon.post(f"{base}/message:stream", json={"message": message("m")},
                                  headers={"A2A-Version": "1.0"})
        assert refused.status_code == 401  # the origin's refusal, passed through
        other = await anon.get(f"{base}/tasks/{task.id}:subscribe", headers={"X-API-Key": KEYS["bob"], "A2A-Version": "1.0"})
        assert other.status_code == 404  # bob cannot attach to alice's task


def traced(headers=AUTH):
    """`headers` with a fresh sampled `traceparent`; returns (trace id, the caller's span id, headers)."""
    trace_id, span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    return trace_id, span_id, {**headers, "traceparent": f"00-{trace_id}-{span_id}-01"}


def server_span(otlp, trace_id):
    return otlp.wait_for(lambda r: [s for s in r.trace(trace_id) if s["kind"] == "server"], what="the origin's SERVER span")[0]


async def test_a_trace_crosses_the_edge_to_the_origin_and_the_publishes_back(edge, otlp):
    """The worker forwards the caller's `traceparent` on every origin call (a stream's send and a proxied
    call alike), and the origin's publishes of that task's events to the edge are CLIENT spans of the
    same trace."""
    base, _ = edge
    trace_id, caller, headers = traced()
    events, _ = await stream("POST", f"{base}/message:stream", headers=headers, body={"message": message("traced")})
    assert kinds(events)[-1] == "statusUpdate"
    server = server_span(otlp, trace_id)
    assert server["parent"] == caller, "the origin's span should be a child of the caller's"
    assert server["attrs"]["gen_ai.agent.a2a.operation.name"] == "SendMessage"

    def publishes(r):
        return [s for s in r.trace(trace_id) if s["kind"] == "client" and s["name"] == "POST edge"]

    publish = otlp.wait_for(publishes, what="the publisher's CLIENT span")[0]
    assert publish["attrs"]["server.port"] == int(base.rsplit(":", 1)[1])
    assert publish["attrs"]["http.response.status_code"] == 204  # the hub took the batch
    spans = {s["span_id"]: s for s in otlp.trace(trace_id)}
    hop, chain = publish, []
    while hop["parent"] in spans:  # the publish hangs under the request's span, through the turn
        hop = spans[hop["parent"]]
        chain.append(hop["name"])
    assert hop is server, chain

    trace_id, caller, headers = traced()
    async with http(headers) as hc:
        got = await hc.get(f"{base}/tasks/{events[0]['data']['task']['id']}")
        assert got.status_code == 200
    proxied = server_span(otlp, trace_id)
    assert proxied["parent"] == caller and proxied["attrs"]["gen_ai.agent.a2a.operation.name"] == "GetTask"
