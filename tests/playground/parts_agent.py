"""A test agent behind the HTTP agent contract (docs/agent-http.md) whose answer carries every kind of
part the playground renders: text, a file by bytes, a file by URL and a data part.
Usage: python3 parts_agent.py PORT"""
import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PARTS = [
    {"text": "three parts follow"},
    {"raw": base64.b64encode(b"hello, file\n").decode(), "mediaType": "text/plain", "filename": "hello.txt"},
    {"url": "https://example.com/report.pdf", "mediaType": "application/pdf", "filename": "report.pdf"},
    {"data": {"answer": 42, "items": ["a", "b"]}},
]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the standard library's name)
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if request["kind"] == "cancel":
            return self.send_response(204) or self.end_headers()
        events = [
            {"statusUpdate": {"status": {"state": "TASK_STATE_WORKING"}}},
            {"artifactUpdate": {"artifact": {"artifactId": "parts", "name": "parts", "parts": PARTS}, "lastChunk": True}},
            {"statusUpdate": {"status": {"state": "TASK_STATE_COMPLETED"}}},
        ]
        body = "".join(json.dumps(e) + "\n" for e in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
