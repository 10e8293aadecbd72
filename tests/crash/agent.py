"""An agent for the crash tests, behind the HTTP agent contract (docs/agent-http.md): it answers a
message with one artifact streamed word by word (WORD_DELAY apart) and logs each run it is given,
as one JSON line `{"run": ..., "attempt": ..., "task": ...}`, to the file named by its second
argument; the message "poison" makes it fail (HTTP 500) every time. It outlives the a2a-local processes the tests kill, so it sees every delivery."""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(os.environ.get("WORD_DELAY", "0.03"))
LOG = open(sys.argv[2], "a", buffering=1)
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (the standard library's name)
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if request["kind"] == "cancel":
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        run = request["run"]
        with LOCK:
            LOG.write(json.dumps({"run": run["id"], "attempt": run["attempt"], "task": request["task"]["id"]}) + "\n")
        text = " ".join(p.get("text", "") for p in request["message"]["parts"]).split()
        if text == ["poison"]:  # a message this agent crashes on, every time
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Connection", "close")
        self.end_headers()
        events = [{"statusUpdate": {"status": {"state": "TASK_STATE_WORKING"}}}]
        for i, word in enumerate(text):
            chunk = {"artifactId": "answer", "parts": [{"text": word if i == 0 else " " + word}]}
            events.append({"artifactUpdate": {"artifact": chunk, "append": i > 0, "lastChunk": i == len(text) - 1}})
        events.append({"statusUpdate": {"status": {"state": "TASK_STATE_COMPLETED"}}})
        try:
            for event in events:
                self.wfile.write(json.dumps(event).encode() + b"\n")
                self.wfile.flush()
                time.sleep(DELAY)
        except OSError:
            pass  # the host went away (killed): its next process delivers the run again

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print(f"agent listening on http://127.0.0.1:{server.server_address[1]}/", flush=True)
    server.serve_forever()
