"""An A2A agent in Python behind a2a-serverless (docs/agent-http.md), standard library only.
Locally:  python3 agent.py 9000   then   a2a-local --agent-url http://127.0.0.1:9000/
On AWS:   the Lambda handler `agent.handler` behind a Function URL (infra/template.yaml, AgentRuntime=python).
It answers a message word by word as one artifact streamed in chunks, and asks back when sent nothing."""
import base64, json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(os.environ.get("WORD_DELAY", "0.05"))
cancelled = set()  # run ids a cancel request named


def turn(request, emit):
    """One turn: emit(event) sends an A2A 1.0 event; returns early when the run is cancelled."""
    text = " ".join(p.get("text", "") for p in request["message"]["parts"]).strip()
    if not text:
        question = {"role": "ROLE_AGENT", "parts": [{"text": "What should I answer?"}]}
        return emit({"statusUpdate": {"status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": question}}})
    emit({"statusUpdate": {"status": {"state": "TASK_STATE_WORKING"}}})
    words = text.split()
    emit({"artifactUpdate": {"artifact": {"artifactId": "answer", "name": "answer", "parts": [{"text": "You said:"}]}}})
    for i, word in enumerate(words):
        time.sleep(DELAY)
        if request["run"]["id"] in cancelled:
            return print(f"cancelled {request['run']['id']}", flush=True)
        emit({"artifactUpdate": {"artifact": {"artifactId": "answer", "parts": [{"text": " " + word}]},
                                 "append": True, "lastChunk": i == len(words) - 1}})
    emit({"statusUpdate": {"status": {"state": "TASK_STATE_COMPLETED"}}})


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the standard library's name)
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if os.environ.get("AGENT_TOKEN") and self.headers.get("Authorization") != "Bearer " + os.environ["AGENT_TOKEN"]:
            return self.send_error(401)
        if request["kind"] == "cancel":
            cancelled.add(request["run"]["id"])
            print(f"cancel requested {request['run']['id']}", flush=True)
            return self.send_response(204) or self.end_headers()
        # The host's trace context: spans this agent opens under it join the task's trace.
        print(f"run {request['run']['id']} traceparent {self.headers.get('traceparent')}", flush=True)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()

        def emit(event):
            try:
                self.wfile.write(json.dumps(event).encode() + b"\n")
                self.wfile.flush()
            except OSError:  # the host closed the run: it was cancelled
                cancelled.add(request["run"]["id"])
        turn(request, emit)

    def log_message(self, *args):
        pass


def handler(event, context):
    """AWS Lambda behind a Function URL: the same turn, answered as one JSON array (Python's runtime buffers)."""
    body = event.get("body") or "{}"
    request = json.loads(base64.b64decode(body) if event.get("isBase64Encoded") else body)
    if request["kind"] == "cancel":
        return {"statusCode": 204}
    events = []
    turn(request, events.append)
    return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(events)}


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 9000), Handler)
    print(f"agent listening on http://127.0.0.1:{server.server_address[1]}/", flush=True)
    server.serve_forever()
