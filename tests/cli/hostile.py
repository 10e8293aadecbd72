"""A hostile A2A agent for the command line's tests: an HTTP server on 127.0.0.1 that serves a card
and answers JSON-RPC calls however a test scripts it (a path in a file part's name, control
sequences in its text, endless bodies, redirects elsewhere), and records every request it gets."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CARD_PATH = "/.well-known/agent-card.json"


def card_for(base, **fields):
    """A 1.0 card whose one interface is JSON-RPC at `base`, streaming; `fields` override."""
    return {
        "name": "Hostile agent",
        "description": "Answers as it likes",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "Skill", "description": "Does things", "tags": ["t"]}],
        **fields,
    }


class Request:
    """One request as the server got it; `rpc` is the JSON-RPC call of a POST, if it is one."""

    def __init__(self, method, path, headers, body):
        self.method, self.path, self.headers, self.body = method, path, headers, body
        try:
            self.rpc = json.loads(body) if body else None
        except ValueError:
            self.rpc = None

    def text(self):
        """Everything the client sent, for looking for a secret in it."""
        return f"{self.method} {self.path}\n" + "\n".join(f"{k}: {v}" for k, v in self.headers.items()) + "\n" + \
            self.body.decode(errors="replace")


class Hostile:
    """Serves `routes` ({(method, path): handler(h, request)}); GET of the card path serves
    `self.card` (a card for this server unless set) and POST / goes to `rpc(h, request)` when given.
    Handlers answer with `json_answer`, `rpc_result`, `sse`, `endless` or `redirect`."""

    def __init__(self, rpc=None, routes=None):
        self.requests = []
        self.routes = dict(routes or {})
        self.rpc = rpc
        self.card = None
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self, method):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                hostile.requests.append(req)
                route = hostile.routes.get((method, self.path))
                try:
                    if route:
                        route(self, req)
                    elif method == "GET" and self.path == CARD_PATH:
                        json_answer(self, hostile.card if hostile.card is not None else card_for(hostile.base))
                    elif method == "POST" and self.path == "/" and hostile.rpc:
                        hostile.rpc(self, req)
                    else:
                        json_answer(self, {"error": "not here"}, status=404)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: what a bounded client does

            def do_GET(self):  # noqa: N802 (the stdlib's name)
                self.handle_one("GET")

            def do_POST(self):  # noqa: N802
                self.handle_one("POST")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def json_answer(h, value, status=200):
    body = json.dumps(value).encode()
    h.send_response(status)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def rpc_result(h, req, result):
    """The JSON-RPC response carrying `result` to the call `req`."""
    json_answer(h, {"jsonrpc": "2.0", "id": req.rpc.get("id"), "result": result})


def rpc_error(h, req, code, message):
    json_answer(h, {"jsonrpc": "2.0", "id": req.rpc.get("id"), "error": {"code": code, "message": message}})


def sse(h, req, results, then=None):
    """An event stream of JSON-RPC responses carrying `results`; then `then(write)` if given (the
    connection closes when it returns)."""
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.end_headers()

    def write(raw):
        h.wfile.write(raw)
        h.wfile.flush()

    for i, result in enumerate(results):
        write(f"id: {i}\ndata: {json.dumps({'jsonrpc': '2.0', 'id': req.rpc.get('id'), 'result': result})}\n\n".encode())
    if then:
        then(write)


def endless(h, content_type, prefix=b"", chunk=b"a" * 65536, max_bytes=200 << 20, seconds=20):
    """A 200 whose body never ends for the client: `prefix`, then `chunk` again and again, with no
    length (the connection closes at the end). Bounded here (`max_bytes`, `seconds`) so that a
    client that does not bound it still ends."""
    h.send_response(200)
    h.send_header("content-type", content_type)
    h.end_headers()
    h.wfile.write(prefix)
    sent, deadline = len(prefix), time.monotonic() + seconds
    while sent < max_bytes and time.monotonic() < deadline:
        h.wfile.write(chunk)
        sent += len(chunk)


def redirect(h, location, status=307):
    h.send_response(status)
    h.send_header("location", location)
    h.send_header("content-length", "0")
    h.end_headers()
