"""An OTLP/HTTP sink for scripts/bench: answers every export at once and counts the spans it got
(decoded with the official opentelemetry-proto messages when importable, else one per export).
GET /count answers the count. Loopback only."""

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
except ImportError:  # the count falls back to requests
    trace_service_pb2 = None

count = 0
lock = threading.Lock()


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (the standard library's name)
        global count
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        spans = 1
        if trace_service_pb2 is not None and self.path == "/v1/traces":
            req = trace_service_pb2.ExportTraceServiceRequest()
            req.ParseFromString(body)
            spans = sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
        with lock:
            count += spans if self.path == "/v1/traces" else 0
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):  # noqa: N802
        body = str(count).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
