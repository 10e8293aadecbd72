"""One trace for one task, asserted at a real OTLP receiver (tests/observability/otlp.py): a client's
`traceparent` → a2a-local's SERVER span → the queue hop (send, then process; SQS on --store aws,
moto) → `invoke_agent` → the CLIENT span of the call to the Python example agent (which receives a
`traceparent` of the same trace) → the CLIENT span of the webhook delivery (whose receiver gets one
too). Also: gRPC metadata carries the trace, the gateway carries it to an upstream A2A agent, the CLI
starts or continues one, log lines carry trace and task ids, metrics arrive with their documented
names, OTLP over gRPC works, no span holds message text, tokens or a webhook's path, and with tracing
off no exporter runs and nothing is sent.
Needs $A2A_LOCAL_BIN and, for the AWS half, the moto variables scripts/test exports."""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from otlp import Receiver  # noqa: E402
from support import a2a_local, free_port, stop, webhook_receiver  # noqa: E402

LOGS = Path(os.environ.get("A2A_TEST_LOGS", "/tmp"))
SECRET_TEXT = "the-message-text-" + uuid.uuid4().hex
HOOK_TOKEN = "hook-token-" + uuid.uuid4().hex
API_KEY = "api-key-" + uuid.uuid4().hex


def traceparent():
    trace_id, span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def backend_args(backend):
    if backend == "sqlite":
        return []
    if not os.environ.get("AWS_ENDPOINT_URL"):
        pytest.fail("AWS_ENDPOINT_URL is not set (scripts/test starts moto)")
    return ["--store", "aws", "--create-resources"]


def start_agent(word_delay="0"):
    """The Python example agent (examples/agents/python/agent.py); it prints the traceparent of each run."""
    port = free_port()
    log = LOGS / f"observability-agent-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples/agents/python/agent.py"), str(port)],
        stdout=open(log, "w"), stderr=subprocess.STDOUT, env={**os.environ, "WORD_DELAY": word_delay},
    )
    for _ in range(100):  # bounded: 10 s
        if "listening" in log.read_text():
            return f"http://127.0.0.1:{port}/", proc, log
        time.sleep(0.1)
    stop(proc)
    raise RuntimeError("the example agent did not start")


def host(receiver, backend, *extra, env=None, log_name="observability-a2a-local.log"):
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "observability-test",
        "TABLE_NAME": f"obs-{uuid.uuid4().hex[:12]}",
        "RUST_LOG": "info,a2a_engine=debug",
        **(env or {}),
    }
    log = open(LOGS / log_name, "w")
    args = ["--api-keys", f"alice:{API_KEY}", "--webhook-allow", "127.0.0.1/32", *backend_args(backend), *extra]
    base, proc = a2a_local(args, log=log, env=env)
    return base, proc


def send(base, parent, hook_url):
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {
            "message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": SECRET_TEXT}]},
            "configuration": {
                "blocking": True,
                "taskPushNotificationConfig": {"url": hook_url, "token": HOOK_TOKEN},
            },
        },
    }
    headers = {"X-API-Key": API_KEY, "A2A-Version": "1.0"}
    if parent:
        headers |= {"traceparent": parent, "tracestate": "vendor=1"}
    r = httpx.post(base, json=body, headers=headers, timeout=30)
    r.raise_for_status()
    return r.json()["result"]["task"]


def by_kind(spans, kind, name_start=""):
    return [s for s in spans if s["kind"] == kind and s["name"].startswith(name_start)]


def parent_of(spans, span):
    return next((s for s in spans if s["span_id"] == span["parent"]), None)


def no_secrets(spans):
    for s in spans:
        text = json.dumps([s["name"], s["attrs"], s["events"]])
        for secret in (SECRET_TEXT, HOOK_TOKEN, API_KEY, "secret-path"):
            assert secret not in text, f"{secret[:12]}… in span {s['name']}: {text}"


@pytest.mark.parametrize("backend", ["sqlite", "aws"])
def test_one_trace_from_the_client_through_the_queue_to_the_agent_and_the_webhook(receiver, backend):
    hook, received = webhook_receiver()
    hook = hook.replace("/hook", "/hook/secret-path")
    agent_url, agent, agent_log = start_agent()
    base, proc = host(receiver, backend, "--agent-url", agent_url)
    try:
        trace_id, caller_span, parent = traceparent()
        task = send(base, parent, hook)
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        # The webhook gets the final status; its delivery span closes right after.
        for _ in range(150):  # bounded: 15 s
            if any(b.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED" for _, b in received):
                break
            time.sleep(0.1)
        # Every delivery the receiver saw has its span exported (each closes just after its answer).
        def all_deliveries(r):
            t = r.trace(trace_id)
            made = {h.get("traceparent", "-").split("-")[-2] for h, _ in list(received)}
            exported = {s["span_id"] for s in by_kind(t, "client", "POST webhook")}
            return t if len(exported) >= 3 and made <= exported else None

        spans = receiver.wait_for(all_deliveries, what=f"the webhook spans of trace {trace_id}")
        system = "aws_sqs" if backend == "aws" else "a2a"

        # The SERVER span continues the caller's span and names the operation and the task.
        [server] = [s for s in by_kind(spans, "server") if s["attrs"].get("gen_ai.agent.a2a.operation.name") == "SendMessage"]
        assert server["parent"] == caller_span
        assert server["name"] == "SendMessage"
        assert server["attrs"]["gen_ai.agent.a2a.protocol"] == "JSONRPC"
        assert server["attrs"]["gen_ai.agent.a2a.task_id"] == task["id"]
        assert server["attrs"]["gen_ai.agent.a2a.context_id"] == task["contextId"]
        assert server["attrs"]["http.response.status_code"] == 200
        assert server["resource"]["service.name"] == "observability-test"

        # The queue hop: send inside the request, process continuing it.
        [produce] = [s for s in by_kind(spans, "producer") if s["parent"] == server["span_id"]]
        assert produce["name"] == "send tasks"
        assert produce["attrs"]["messaging.system"] == system
        assert produce["attrs"]["gen_ai.agent.a2a.task_id"] == task["id"]
        [process] = [s for s in by_kind(spans, "consumer") if s["parent"] == produce["span_id"]]
        assert process["name"] == "process tasks"
        assert process["attrs"]["messaging.system"] == system

        # The turn, and the call to the agent inside it.
        [turn] = [s for s in spans if s["name"].startswith("invoke_agent")]
        assert turn["parent"] == process["span_id"]
        assert turn["attrs"]["gen_ai.operation.name"] == "invoke_agent"
        assert turn["attrs"]["gen_ai.conversation.id"] == task["contextId"]
        assert turn["attrs"]["gen_ai.agent.a2a.status"] == "TASK_STATE_COMPLETED"
        assert turn["attrs"]["gen_ai.agent.a2a.artifact_chunks"] >= 2
        # The turn's events: each status change and artifact chunk, with states and counts only.
        states = [a["gen_ai.agent.a2a.status"] for n, a in turn["events"] if n == "a2a.status_update"]
        assert states[0] == "TASK_STATE_WORKING" and states[-1] == "TASK_STATE_COMPLETED", states
        chunks = [a for n, a in turn["events"] if n == "a2a.artifact_update"]
        assert len(chunks) == turn["attrs"]["gen_ai.agent.a2a.artifact_chunks"]
        assert chunks[-1]["a2a.artifact.last_chunk"] is True and all(c["a2a.parts"] == 1 for c in chunks)
        [call] = by_kind(spans, "client", "POST agent")
        assert call["parent"] == turn["span_id"]
        assert call["attrs"]["server.address"] == "127.0.0.1"
        runs = [line.split() for line in agent_log.read_text().splitlines() if line.startswith("run ")]
        assert [r[3] for r in runs] == [f"00-{trace_id}-{call['span_id']}-01"], runs

        # Each webhook delivery is a CLIENT span of the same trace; the receiver got its traceparent.
        deliveries = by_kind(spans, "client", "POST webhook")
        ids = {d["span_id"] for d in deliveries}
        for d in deliveries:
            assert d["attrs"]["gen_ai.agent.a2a.task_id"] == task["id"]
            assert d["attrs"]["http.response.status_code"] == 200
            assert d["attrs"]["server.port"] == int(hook.split(":")[2].split("/")[0])
        got = [h.get("traceparent", "") for h, _ in received]
        assert got and all(p.split("-")[1] == trace_id and p.split("-")[2] in ids for p in got), got

        if backend == "aws":
            # The AWS SDK's own spans of each call, inside the host's.
            calls = [s for s in spans if s["attrs"].get("rpc.system") == "aws-api"]
            assert {"DynamoDB", "SQS"} <= {s["attrs"]["rpc.service"] for s in calls}, [s["name"] for s in calls]
            send_call = [s for s in calls if s["name"] == "SQS.SendMessage" and s["parent"] == produce["span_id"]]
            assert send_call, [(s["name"], s["parent"]) for s in calls]

        no_secrets(receiver.spans)
    finally:
        stop(proc, agent)


def wait_for_webhook(received, count):
    for _ in range(150):  # bounded: 15 s
        if len(received) >= count:
            return
        time.sleep(0.1)


def test_sampling_is_decided_where_the_trace_enters_and_carried_when_not_recorded(receiver):
    """With new traces not kept (ratio 0): a caller's unsampled trace and a trace that starts here
    export no span, yet the agent and the webhook receiver get `traceparent` of that trace with the
    sampled flag 0 (so they do not record it either); a caller's sampled trace is still recorded
    whole (parent-based)."""
    agent_url, agent, agent_log = start_agent()
    base, proc = host(receiver, "sqlite", "--agent-url", agent_url, "--trace-sample-ratio", "0")
    try:
        hook, received = webhook_receiver()
        unsampled_trace, _, sampled_parent = traceparent()
        unsampled_parent = f"00-{unsampled_trace}-{uuid.uuid4().hex[:16]}-00"
        send(base, unsampled_parent, hook)
        wait_for_webhook(received, 3)
        send(base, None, hook)
        wait_for_webhook(received, 6)
        agent_runs = [line.split()[3] for line in agent_log.read_text().splitlines() if line.startswith("run ")]
        hook_parents = [h.get("traceparent", "") for h, _ in received]
        assert len(agent_runs) == 2 and len(hook_parents) >= 6, (agent_runs, hook_parents)
        assert all(p.endswith("-00") for p in agent_runs + hook_parents), (agent_runs, hook_parents)
        first, second = agent_runs[0].split("-")[1], agent_runs[1].split("-")[1]
        assert first == unsampled_trace and second != unsampled_trace
        assert {p.split("-")[1] for p in hook_parents} == {first, second}

        # A sampled caller is followed; its spans arrive after anything the two above exported.
        sampled_trace = sampled_parent.split("-")[1]
        send(base, sampled_parent, hook)
        spans = receiver.wait_for(
            lambda r: (lambda t: t if by_kind(t, "client", "POST agent") else None)(r.trace(sampled_trace)),
            what="the sampled trace's agent call",
        )
        assert {"SendMessage", "send tasks", "process tasks"} <= {s["name"] for s in spans}
        assert {s["trace_id"] for s in receiver.spans} == {sampled_trace}, "an unsampled trace was exported"
    finally:
        stop(proc, agent)


def test_grpc_metadata_carries_the_trace(receiver):
    import grpc

    grpc_port = free_port()
    base, proc = host(receiver, "sqlite", "--grpc-addr", f"127.0.0.1:{grpc_port}")
    try:
        trace_id, caller_span, parent = traceparent()
        channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        get_task = channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")
        missing = b"no-such-task"
        request = bytes([0x12, len(missing)]) + missing  # GetTaskRequest{id = 2}
        with pytest.raises(grpc.RpcError) as refused:
            get_task(request, metadata=[("traceparent", parent), ("x-api-key", API_KEY)], timeout=10)
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        [server] = receiver.wait_for(lambda r: by_kind(r.trace(trace_id), "server"), what="the gRPC server span")
        assert server["parent"] == caller_span
        assert server["name"] == "GetTask"
        assert server["attrs"]["rpc.system"] == "grpc"
        assert server["attrs"]["gen_ai.agent.a2a.protocol"] == "GRPC"
        assert server["attrs"]["gen_ai.agent.a2a.task_id"] == "no-such-task"
        assert server["attrs"]["rpc.grpc.status_code"] == 5
        assert server["attrs"]["error.type"] == "TASK_NOT_FOUND"
    finally:
        stop(proc)


def test_log_lines_carry_trace_and_task_ids(receiver):
    agent_url, agent, _ = start_agent()
    base, proc = host(receiver, "sqlite", "--agent-url", agent_url, "--log-format", "json", log_name="observability-json.log")
    try:
        trace_id, _, parent = traceparent()
        hook, _ = webhook_receiver()
        task = send(base, parent, hook.replace("/hook", "/hook/secret-path"))
        receiver.wait_for(lambda r: by_kind(r.trace(trace_id), "client", "POST agent"), what="the agent call span")
        lines = [json.loads(line) for line in (LOGS / "observability-json.log").read_text().splitlines() if line.startswith("{")]
        ended = [line for line in lines if line.get("fields", {}).get("message") == "turn ended"]
        assert ended, lines[-5:]
        for line in ended:
            assert line["trace_id"] == trace_id
            assert len(line["span_id"]) == 16
            assert line["task_id"] == task["id"]
            assert line["context_id"] == task["contextId"]
        assert SECRET_TEXT not in json.dumps(lines) and API_KEY not in json.dumps(lines)
    finally:
        stop(proc, agent)


def exporter_threads(pid):
    names = [Path(f"/proc/{pid}/task/{t}/comm").read_text().strip() for t in os.listdir(f"/proc/{pid}/task")]
    return [n for n in names if n.startswith("otlp-export")]


@pytest.mark.parametrize("off", ["unset", "sdk_disabled"])
def test_with_tracing_off_no_exporter_runs_and_nothing_is_sent(receiver, off):
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": ""} if off == "unset" else {"OTEL_SDK_DISABLED": "true"}
    base, proc = host(receiver, "sqlite", env=env)
    try:
        _, _, parent = traceparent()
        hook, _ = webhook_receiver()
        send(base, parent, hook)
        time.sleep(1.5)  # several of the batch processor's 100 ms schedules
        assert receiver.requests == 0
        assert exporter_threads(proc.pid) == []
    finally:
        stop(proc)


def test_with_tracing_on_the_exporter_runs_on_its_own_thread(receiver):
    base, proc = host(receiver, "sqlite")
    try:
        assert exporter_threads(proc.pid) == ["otlp-export"]
    finally:
        stop(proc)


def metric_points(receiver):
    """{metric name: [(attributes, point)]} of everything the receiver got."""
    from otlp import _value

    out = {}
    with receiver.lock:
        requests = list(receiver.metrics)
    for req in requests:
        for rm in req.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    data = getattr(m, m.WhichOneof("data"))
                    for p in data.data_points:
                        attrs = {kv.key: _value(kv.value) for kv in p.attributes}
                        out.setdefault(m.name, []).append((attrs, p, m.unit))
    return out


def test_metrics_arrive_with_the_documented_names(receiver):
    agent_url, agent, _ = start_agent()
    base, proc = host(receiver, "sqlite", "--agent-url", agent_url, env={"OTEL_METRIC_EXPORT_INTERVAL": "300"})
    try:
        _, _, parent = traceparent()
        hook, received = webhook_receiver()
        task = send(base, parent, hook.replace("/hook", "/hook/secret-path"))
        stream = httpx.post(base, json={"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "missing"}},
                            headers={"X-API-Key": API_KEY, "A2A-Version": "1.0"}, timeout=10)
        assert stream.json()["error"]["code"] == -32001
        wanted = {"a2a.server.operation.duration", "a2a.tasks.finished", "a2a.agent.turn.duration", "a2a.queue.lag",
                  "a2a.push.deliveries", "a2a.store.operation.duration"}
        points = receiver.wait_for(lambda r: (lambda p: p if wanted <= set(p) else None)(metric_points(r)),
                                   what="the metrics")
        ops = {(a["gen_ai.agent.a2a.operation.name"], a["a2a.outcome"], a.get("error.type")) for a, _, _ in
               points["a2a.server.operation.duration"]}
        assert ("SendMessage", "ok", None) in ops
        assert ("GetTask", "client_error", "TASK_NOT_FOUND") in ops
        assert all(unit == "s" for _, _, unit in points["a2a.server.operation.duration"])
        finished = {a["gen_ai.agent.a2a.status"]: p.as_int for a, p, _ in points["a2a.tasks.finished"]}
        assert finished.get("TASK_STATE_COMPLETED", 0) >= 1
        turns = [p.count for a, p, _ in points["a2a.agent.turn.duration"] if a["gen_ai.agent.a2a.status"] == "TASK_STATE_COMPLETED"]
        assert turns and max(turns) >= 1
        assert any(a["messaging.destination.name"] == "tasks" and p.count >= 1 for a, p, _ in points["a2a.queue.lag"])
        assert any(a["a2a.push.outcome"] == "delivered" and a["a2a.push.attempt"] == "1" and p.as_int >= 1
                   for a, p, _ in points["a2a.push.deliveries"])
        store_ops = {a["a2a.store.operation"] for a, _, _ in points["a2a.store.operation.duration"]}
        assert {"create", "load", "update"} <= store_ops
        assert received and task["id"]
    finally:
        stop(proc, agent)


def test_open_streams_are_counted(receiver):
    agent_url, agent, _ = start_agent(word_delay="0.2")
    base, proc = host(receiver, "sqlite", "--agent-url", agent_url, env={"OTEL_METRIC_EXPORT_INTERVAL": "100"})

    def streams(r):
        return [p.as_int for a, p, _ in metric_points(r).get("a2a.server.active_streams", [])
                if a["gen_ai.agent.a2a.operation.name"] == "SendStreamingMessage"]

    try:
        words = " ".join(f"w{i}" for i in range(15))  # about 3 s of chunks
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": words}]}}}
        headers = {"X-API-Key": API_KEY, "A2A-Version": "1.0", "Accept": "text/event-stream"}
        with httpx.stream("POST", base, json=body, headers=headers, timeout=20) as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            next(lines)
            # Counted while it lives...
            receiver.wait_for(lambda r: 1 in streams(r), seconds=5, what="the open stream counted")
            for _ in lines:
                pass
        # ...and no longer once it ended.
        receiver.wait_for(lambda r: streams(r)[-1:] == [0], what="the open-streams gauge back at 0")
    finally:
        stop(proc, agent)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_the_cli_starts_or_continues_a_trace(receiver, binding):
    a2a = os.environ.get("A2A_BIN")
    if not a2a:
        pytest.fail("A2A_BIN is not set (run through scripts/test)")
    grpc_port = free_port()
    base, proc = host(receiver, "sqlite", "--agent", "echo", "--grpc-addr", f"127.0.0.1:{grpc_port}")
    env = {**os.environ, "A2A_API_KEY": API_KEY}
    try:
        # A new trace per command; --json names it on stderr.
        r = subprocess.run([a2a, "--json", "--binding", binding, "send", base, "traced"], capture_output=True,
                           text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr
        trace_id = json.loads(r.stderr.splitlines()[0])["traceId"]
        assert len(trace_id) == 32
        servers = receiver.wait_for(lambda r: [s for s in by_kind(r.trace(trace_id), "server")
                                               if s["name"] == "SendMessage"], what="the CLI's trace")
        assert servers[0]["attrs"]["gen_ai.agent.a2a.protocol"] == binding
        # A given traceparent is continued.
        given, caller, parent = traceparent()
        r = subprocess.run([a2a, "--binding", binding, "--traceparent", parent, "send", base, "traced"],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr
        [server] = receiver.wait_for(lambda r: [s for s in by_kind(r.trace(given), "server") if s["name"] == "SendMessage"],
                                     what="the continued trace")
        assert server["parent"] == caller
        bad = subprocess.run([a2a, "--traceparent", "nonsense", "card", base], capture_output=True, text=True,
                             timeout=60, env=env)
        assert bad.returncode == 2 and "traceparent" in bad.stderr
    finally:
        stop(proc)


def test_otlp_over_grpc():
    """`--otlp-protocol grpc`: the same spans reach an OTLP/gRPC receiver (grpcio, the official service)."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    got = []

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):  # noqa: N802 (the service's name)
            got.extend(s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    receiver = Receiver()  # unused by this host: it proves nothing goes over HTTP instead
    base, proc = host(receiver, "sqlite", "--otlp-protocol", "grpc",
                      env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_METRICS_EXPORTER": "none"})
    try:
        trace_id, caller, parent = traceparent()
        hook, _ = webhook_receiver()
        send(base, parent, hook)
        for _ in range(100):  # bounded: 10 s
            if any(s.trace_id.hex() == trace_id and s.name == "SendMessage" for s in got):
                break
            time.sleep(0.1)
        [server_span] = [s for s in got if s.trace_id.hex() == trace_id and s.name == "SendMessage"]
        assert server_span.parent_span_id.hex() == caller
        assert receiver.requests == 0
    finally:
        stop(proc)
        server.stop(0)
        receiver.close()


def test_the_gateway_carries_the_trace_to_the_upstream_agent(receiver):
    # The upstream: an A2A agent (a2a-local with the echo agent) exporting to the same receiver.
    upstream, upstream_proc = host(receiver, "sqlite", "--agent", "echo", log_name="observability-upstream.log")
    base, proc = host(receiver, "sqlite", "--agent-a2a", upstream, log_name="observability-gateway.log",
                      env={"AGENT_A2A_API_KEY": API_KEY})
    try:
        trace_id, _, parent = traceparent()
        hook, _ = webhook_receiver()
        task = send(base, parent, hook)
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"

        def joined(r):
            spans = r.trace(trace_id)
            calls = by_kind(spans, "client", "POST a2a")
            servers = [s for s in by_kind(spans, "server") if s["parent"] in {c["span_id"] for c in calls}]
            return (spans, calls, servers) if calls and servers else None

        spans, [call], servers = receiver.wait_for(joined, what="the upstream's server span")
        assert all(s["name"] in ("SendStreamingMessage", "SendMessage", "GetTask") for s in servers), servers
        [turn] = [s for s in spans if s["name"].startswith("invoke_agent") and s["span_id"] == call["parent"]]
        assert turn["attrs"]["gen_ai.agent.a2a.task_id"] == task["id"]
        no_secrets(receiver.spans)
    finally:
        stop(proc, upstream_proc)
