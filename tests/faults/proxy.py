"""A fault proxy between the AWS SDK clients of a2a-local and the moto server (loopback only).

Every request is forwarded to moto unless a rule picks it: a rule names an operation (the
`X-Amz-Target` of DynamoDB and SQS's JSON protocol, e.g. `DynamoDB_20120810.TransactWriteItems`, or
a prefix of one, e.g. `DynamoDB_`), the share of its calls it hits, and the fault:

- `throttle`: the service's throttling error (DynamoDB `ProvisionedThroughputExceededException` or
  `ThrottlingException`, SQS `RequestThrottled`), HTTP 400 as AWS answers it;
- `500`, `503`: an internal error / service unavailable;
- `reset`: the connection closed with a TCP reset, no answer;
- `latency`: the call delayed by `delay` seconds, then forwarded.

A fault strikes `before` the call reaches moto (nothing happened) or `after` it (the call took
effect, its answer is lost: the case that tests idempotency). Choices come from a seeded random
generator, so a run can be replayed; every injected fault is counted by operation and kind.

Why a proxy of our own: toxiproxy and similar tools work at the TCP level (no per-operation faults,
no AWS error bodies) and are not on the registries the project installs from; moto has no fault
injection. This is one stdlib module, bounded: a thread per connection (the SDK keeps a small
pool), bodies read by Content-Length only, one upstream connection per thread.
"""

import http.client
import json
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

MAX_BODY = 16 << 20

# The error each service answers a throttled call with (status, JSON body).
THROTTLED = {
    "DynamoDB_": (400, {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                        "message": "The level of configured provisioned throughput for the table was exceeded."}),
    "AmazonSQS.": (400, {"__type": "com.amazonaws.sqs#RequestThrottled", "message": "Request is throttled."}),
}
FAILED = {
    "500": (500, {"__type": "com.amazonaws#InternalFailure", "message": "Internal failure (injected)."}),
    "503": (503, {"__type": "com.amazonaws#ServiceUnavailable", "message": "Service unavailable (injected)."}),
}


@dataclass
class Rule:
    """`share` of the calls whose operation starts with `op` get `fault`, `when` before or after moto."""

    op: str
    fault: str
    share: float
    when: str = "before"
    delay: float = 0.0


class FaultProxy:
    def __init__(self, upstream, seed=30):
        self.upstream = urlparse(upstream)
        self.rules = []
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.calls = {}  # op -> calls seen
        self.injected = {}  # (op, fault, when) -> count
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 (the stdlib's name)
                proxy.handle(self)

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client gone mid-answer (a2a-local killed): nothing to tell

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.local = threading.local()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set(self, *rules):
        with self.lock:
            self.rules = list(rules)

    def clear(self):
        self.set()

    def totals(self):
        with self.lock:
            return dict(self.calls), dict(self.injected)

    def injected_count(self):
        with self.lock:
            return sum(self.injected.values())

    def pick(self, op):
        with self.lock:
            self.calls[op] = self.calls.get(op, 0) + 1
            for rule in self.rules:
                if op.startswith(rule.op) and self.rng.random() < rule.share:
                    key = (op, rule.fault, rule.when)
                    self.injected[key] = self.injected.get(key, 0) + 1
                    return rule
        return None

    def forward(self, method, path, headers, body):
        conn = getattr(self.local, "conn", None)
        for attempt in range(2):  # a kept connection moto closed: once more on a new one
            if conn is None:
                conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
                self.local.conn = conn
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                return response.status, response.getheaders(), response.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                conn = self.local.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def handle(self, req):
        length = int(req.headers.get("content-length", 0))
        if length > MAX_BODY:
            req.send_error(413)
            return
        body = req.rfile.read(length)
        op = req.headers.get("x-amz-target", "") or f"{req.command} {req.path.split('?')[0]}"
        rule = self.pick(op)
        if rule and rule.fault == "latency":
            time.sleep(rule.delay)
            rule = None
        if rule and rule.when == "before":
            return self.strike(req, op, rule)
        headers = {k: v for k, v in req.headers.items() if k.lower() not in ("connection", "keep-alive")}
        try:
            status, answer_headers, answer = self.forward(req.command, req.path, headers, body)
        except (http.client.HTTPException, OSError):
            req.send_error(502)
            return
        if rule:  # after: the call took effect; its answer is lost
            return self.strike(req, op, rule)
        req.send_response(status)
        for k, v in answer_headers:
            if k.lower() not in ("connection", "transfer-encoding", "content-length", "server", "date"):
                req.send_header(k, v)
        req.send_header("content-length", str(len(answer)))
        req.end_headers()
        req.wfile.write(answer)

    def strike(self, req, op, rule):
        if rule.fault == "reset":
            # SO_LINGER 0: close() sends a RST, the client sees the connection reset mid-call.
            req.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            req.close_connection = True
            req.connection.close()
            return
        if rule.fault == "throttle":
            status, body = next((v for k, v in THROTTLED.items() if op.startswith(k)), FAILED["503"])
        else:
            status, body = FAILED[rule.fault]
        payload = json.dumps(body).encode()
        req.send_response(status)
        req.send_header("content-type", "application/x-amz-json-1.0")
        req.send_header("x-amzn-errortype", body["__type"].split("#")[-1])
        req.send_header("content-length", str(len(payload)))
        req.end_headers()
        req.wfile.write(payload)

    def close(self):
        self.server.shutdown()
