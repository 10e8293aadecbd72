"""A real OTLP/HTTP receiver for the tests: POST /v1/traces (and /v1/metrics) with protobuf bodies,
decoded with the official opentelemetry-proto messages. Spans are kept as plain dicts so that the
tests assert on what a collector would see."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


class Receiver:
    """Starts on a free 127.0.0.1 port; `endpoint` is the base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT."""

    def __init__(self):
        self.spans = []
        self.metrics = []
        self.requests = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with receiver.lock:
                    receiver.requests += 1
                if self.path == "/v1/traces":
                    req = trace_service_pb2.ExportTraceServiceRequest()
                    req.ParseFromString(body)
                    receiver._add_spans(req)
                    answer = trace_service_pb2.ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    req = metrics_service_pb2.ExportMetricsServiceRequest()
                    req.ParseFromString(body)
                    with receiver.lock:
                        receiver.metrics.append(req)
                    answer = metrics_service_pb2.ExportMetricsServiceResponse()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                out = answer.SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _add_spans(self, req):
        with self.lock:
            for rs in req.resource_spans:
                resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append({
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(),
                            "name": s.name,
                            "kind": KINDS.get(s.kind, str(s.kind)),
                            "attrs": {kv.key: _value(kv.value) for kv in s.attributes},
                            "events": [(e.name, {kv.key: _value(kv.value) for kv in e.attributes}) for e in s.events],
                            "status": s.status.code,
                            "resource": resource,
                        })

    def trace(self, trace_id):
        with self.lock:
            return [s for s in self.spans if s["trace_id"] == trace_id]

    def wait_for(self, predicate, seconds=15, what="spans"):
        """Polls (bounded) until `predicate(self)` is true; returns its value."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = predicate(self)
            if found:
                return found
            time.sleep(0.1)
        with self.lock:
            names = sorted({(s["name"], s["trace_id"][:8]) for s in self.spans})
        raise AssertionError(f"{what} did not arrive in {seconds} s; received: {names}")

    def close(self):
        self.server.shutdown()
