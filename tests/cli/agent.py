"""A small agent over HTTP (docs/agent-http.md) for the command-line tests, standard library only:
  "ask ..."       asks for a name (INPUT_REQUIRED); the follow-up is greeted: "Hello, <text>!"
  "slow a b c"    streams the words 0.3 s apart (a cancel stops it)
  "file"          answers with a file part (report.txt)
  "fail"          ends FAILED
  anything else   echoes the text, with the names and sizes of attached files
Usage: python3 agent.py PORT"""
import base64, sys, time
from http.server import ThreadingHTTPServer
from pathlib import Path

cancelled = set()


def artifact(parts, append=False, last=True):
    return {"artifactUpdate": {"artifact": {"artifactId": "answer", "parts": parts}, "append": append, "lastChunk": last}}


def status(state, text=None):
    s = {"state": state}
    if text:
        s["message"] = {"role": "ROLE_AGENT", "parts": [{"text": text}]}
    return {"statusUpdate": {"status": s}}


def turn(request, emit):
    parts = request["message"]["parts"]
    text = " ".join(p.get("text", "") for p in parts if "text" in p).strip()
    if not request["isNewTask"]:
        emit(artifact([{"text": f"Hello, {text}!"}]))
        return emit(status("TASK_STATE_COMPLETED"))
    if text.startswith("ask"):
        return emit(status("TASK_STATE_INPUT_REQUIRED", "What is your name?"))
    if text == "fail":
        return emit(status("TASK_STATE_FAILED", "it went wrong on purpose"))
    if text == "file":
        raw = base64.b64encode(b"quarterly numbers\n").decode()
        emit(artifact([{"raw": raw, "filename": "report.txt", "mediaType": "text/plain"}]))
        return emit(status("TASK_STATE_COMPLETED"))
    emit(status("TASK_STATE_WORKING"))
    if text.startswith("slow"):
        words = text.split()[1:]
        for i, word in enumerate(words):
            time.sleep(0.3)
            if request["run"]["id"] in cancelled:
                return
            emit(artifact([{"text": word + " "}], append=i > 0, last=i == len(words) - 1))
        return emit(status("TASK_STATE_COMPLETED"))
    files = [f"{p.get('filename')} ({len(base64.b64decode(p['raw']))} bytes)" for p in parts if "raw" in p]
    emit(artifact([{"text": text + ("; files: " + ", ".join(files) if files else "")}]))
    emit(status("TASK_STATE_COMPLETED"))


if __name__ == "__main__":
    # The example agent's HTTP server (the contract's framing, cancel requests), with these turns.
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples/agents/python/agent.py"
    spec = importlib.util.spec_from_file_location("example_agent", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    example.turn = turn
    example.cancelled = cancelled
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), example.Handler)
    print("listening", flush=True)
    server.serve_forever()
