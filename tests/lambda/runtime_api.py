"""A Lambda Runtime API on 127.0.0.1 (the interface a function's runtime polls, as documented at
https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html): it hands out the events it is
given, holds `/next` open while it has none (as Lambda does), and records each answer as it arrived,
buffered or streamed (`Lambda-Runtime-Function-Response-Mode: streaming`, chunked). It also counts
how many invocations were in flight at once, which tells a function running several at a time
(Lambda Managed Instances, `AWS_LAMBDA_MAX_CONCURRENCY`) from one running them one by one."""
import json
import queue
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/2018-06-01/runtime"


class Answer:
    def __init__(self, headers, body, error=False):
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body
        self.error = error

    def json(self):
        return json.loads(self.body)


class RuntimeApi:
    def __init__(self):
        self.events = queue.Queue()
        self.answers = {}
        self.init_error = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Condition()
        self.closed = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path != f"{PREFIX}/invocation/next":
                    return self.reply(404, b"{}")
                while not api.closed.is_set():  # bounded: the test closes the API at its end
                    try:
                        request_id, event = api.events.get(timeout=0.2)
                        break
                    except queue.Empty:
                        continue
                else:
                    return self.reply(410, b"{}")
                with api.lock:
                    api.in_flight += 1
                    api.max_in_flight = max(api.max_in_flight, api.in_flight)
                deadline = int((time.time() + 60) * 1000)
                self.reply(200, json.dumps(event).encode(), {
                    "Lambda-Runtime-Aws-Request-Id": request_id,
                    "Lambda-Runtime-Deadline-Ms": str(deadline),
                    "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:test",
                    "Lambda-Runtime-Trace-Id": f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Sampled=0",
                })

            def do_POST(self):
                body = self.read_body()
                if self.path == f"{PREFIX}/init/error":
                    api.init_error = body
                    return self.reply(202, b"{}")
                parts = self.path[len(f"{PREFIX}/invocation/"):].split("/")
                if not self.path.startswith(f"{PREFIX}/invocation/") or len(parts) != 2:
                    return self.reply(404, b"{}")
                request_id, kind = parts
                # Counted out before the runtime hears back (and asks for its next event).
                with api.lock:
                    api.in_flight -= 1
                    api.answers[request_id] = Answer(dict(self.headers), body, error=kind == "error")
                    api.lock.notify_all()
                self.reply(202, b"{}")

            def read_body(self):
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = b""
                while True:  # bounded: the chunked body ends with a zero-size chunk
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                            pass
                        return body
                    body += self.rfile.read(size)
                    self.rfile.readline()

            def reply(self, status, body, headers=None):
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def invoke(self, event):
        """Queues `event`; returns its request id."""
        request_id = str(uuid.uuid4())
        self.events.put((request_id, event))
        return request_id

    def wait(self, request_ids, seconds):
        """The answers to `request_ids`, once all are in (at most `seconds`)."""
        deadline = time.time() + seconds
        with self.lock:
            while not all(r in self.answers for r in request_ids):  # bounded: the deadline
                left = deadline - time.time()
                assert left > 0, f"{sum(r in self.answers for r in request_ids)} of {len(request_ids)} answered"
                assert self.init_error is None, f"the function failed to start: {self.init_error!r}"
                self.lock.wait(min(left, 0.5))
            return [self.answers[r] for r in request_ids]

    def close(self):
        self.closed.set()
        self.server.shutdown()
