"""The `a2a` command line against agents it cannot trust (tests/cli/hostile.py, on 127.0.0.1): a file
part named to climb out of the folder, control sequences in every text an agent sends, answers
without end (a call's body, the card, a stream answered with JSON), a stream that never finishes,
a redirect to another origin with credentials on the request, a card that names a token URL
elsewhere for the OAuth client secret. Each case ends with a clear error and a failure exit code
in bounded memory and time, or is made harmless. Needs $A2A_BIN."""

import base64
import json
import os
import subprocess
import time

import pytest

from hostile import CARD_PATH, Hostile, card_for, endless, json_answer, redirect, rpc_error, rpc_result, sse
from test_cli import a2a_bin

PAYLOAD = b"bytes the server chose\n"
RAW = base64.b64encode(PAYLOAD).decode()
CLIMB = "../../../../"


def run(*args, cwd=None, timeout=60):
    """`a2a ARGS`, its output decoded as printed (no newline translation: a raw CR stays visible)."""
    r = subprocess.run([a2a_bin(), *args], capture_output=True, timeout=timeout, cwd=cwd)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                       r.stderr.decode(errors="replace"))


# --- file parts --------------------------------------------------------------------------------------


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def saved_paths(stdout, cwd):
    """The paths the command line says it saved, resolved from its working folder."""
    paths = []
    for line in stdout.splitlines():
        if line.startswith("saved "):
            shown = line[len("saved "):].rsplit(" (", 1)[0]
            paths.append((cwd / shown).resolve())
    return paths


def file_task(artifact_id, parts):
    return {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": artifact_id, "parts": parts}]}


def answer_with_files(h, req):
    """SendMessage: a task whose file parts name their way out; SendStreamingMessage: the same as
    events; a message whose id climbs when the text asks for a message."""
    text = req.rpc["params"]["message"]["parts"][0]["text"]
    parts = [{"raw": RAW}, {"raw": RAW, "filename": CLIMB + "evil.txt"}, {"raw": RAW, "filename": ".profile"},
             {"raw": RAW, "filename": "..\\..\\win.bat"}, {"raw": RAW, "filename": ".."}]
    if req.rpc["method"] == "SendStreamingMessage":
        update = {"taskId": "t1", "contextId": "c1", "artifact": {"artifactId": CLIMB + "s", "parts": parts[:1]},
                  "lastChunk": True}
        done = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
        return sse(h, req, [{"task": {**file_task(CLIMB + "s", []), "status": {"state": "TASK_STATE_WORKING"}}},
                            {"artifactUpdate": update}, {"statusUpdate": done}])
    if text == "message":
        return rpc_result(h, req, {"message": {"messageId": CLIMB + "m", "role": "ROLE_AGENT", "parts": parts[:1]}})
    rpc_result(h, req, {"task": file_task(CLIMB + "x", parts)})


@pytest.mark.parametrize("how", ["task", "message", "stream"])
def test_file_parts_are_saved_only_in_the_working_folder_under_safe_names(tmp_path, how):
    """An artifact or message id of ../../../../x named the file when the part had no name: the
    bytes landed four folders up. Now every file lands in the folder, named plainly, reported."""
    work = tmp_path / "a" / "b" / "c" / "d" / "work"
    work.mkdir(parents=True)
    (work / "x-0.bin").write_text("mine")  # never overwritten
    with Hostile(rpc=answer_with_files) as agent:
        args = ["send", agent.base, "message" if how == "message" else "files"] + (["--stream"] if how == "stream" else [])
        r = run(*args, cwd=work, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    everything = files_under(tmp_path)
    assert all(f.startswith("a/b/c/d/work/") for f in everything), everything
    assert (work / "x-0.bin").read_text() == "mine"
    saved = saved_paths(r.stdout, work)
    assert saved and sorted(str(p.relative_to(tmp_path)) for p in saved) == sorted(
        f for f in everything if f != "a/b/c/d/work/x-0.bin"), (r.stdout, everything)
    for path in saved:
        assert path.parent == work.resolve() and not path.name.startswith("."), path
        assert path.read_bytes() == PAYLOAD
    if how == "task":
        assert sorted(p.name for p in saved) == ["1-x-0.bin", "evil.txt", "profile", "win.bat", "x-4.bin"]


def test_file_parts_go_to_the_output_dir_the_user_chose(tmp_path):
    out = tmp_path / "downloads"
    out.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    with Hostile(rpc=answer_with_files) as agent:
        r = run("--output-dir", str(out), "send", agent.base, "files", cwd=work, timeout=30)
        assert r.returncode == 0, r.stderr
        assert files_under(work) == [] and len(files_under(out)) == 5
        assert all(p.parent == out.resolve() for p in saved_paths(r.stdout, work)), r.stdout
        missing = run("--output-dir", str(tmp_path / "nope"), "send", agent.base, "files", cwd=work, timeout=30)
    assert missing.returncode == 7 and "cannot save a file part" in missing.stderr, missing.stderr
    assert files_under(work) == []


def test_an_answer_of_many_file_parts_fills_no_folder(tmp_path):
    """Tiny parts by the thousand (in artifacts of 500, each within the protocol's 1024 parts): 1000
    are saved, then a clear error and exit 7."""
    def many(h, req):
        task = file_task("f", [{"raw": RAW}] * 500)
        task["artifacts"] += [{"artifactId": f"f{i}", "parts": [{"raw": RAW}] * 500} for i in range(2)]
        rpc_result(h, req, {"task": task})
    with Hostile(rpc=many) as agent:
        r = run("send", agent.base, "files", cwd=tmp_path, timeout=60)
    assert r.returncode == 7 and "more than 1000 file parts; the rest are not saved" in r.stderr, r.stderr
    assert len(files_under(tmp_path)) == 1000 and r.stderr.count("a2a: error") == 1


# --- terminal control sequences -------------------------------------------------------------------------

TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CLEAR = "\x1b[2J\x1b[H"
FAKE_LINE = "\r\x1b[2K[  1.0s] \x1b[1;32mCOMPLETED\x1b[0m"
EVIL = f"{TITLE}{CLIPBOARD}{CLEAR}text{FAKE_LINE}\u009b2J\x7f\u202e"


def controls(text):
    """The characters a terminal acts on, but newline and tab."""
    return sorted({c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f or c == "\u202e"})


def evil_task():
    message = {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": EVIL}]}
    parts = [{"text": EVIL}, {"data": {"k": EVIL}}, {"url": f"https://x/{EVIL}"},
             {"raw": RAW, "filename": f"{EVIL}.txt"}]
    return {"id": f"t{EVIL}", "contextId": f"c{EVIL}", "status": {"state": "TASK_STATE_COMPLETED", "message": message},
            "artifacts": [{"artifactId": "a1", "name": EVIL, "parts": parts}]}


def answer_evil(h, req):
    method = req.rpc["method"]
    if method == "SendMessage":
        return rpc_result(h, req, {"task": evil_task()})
    if method == "SendStreamingMessage":
        working = {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING", "message": {
            "messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": EVIL}]}}}
        chunk = {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": EVIL}]},
                 "lastChunk": True}
        done = {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        return sse(h, req, [{"task": {"id": f"t{EVIL}", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}},
                            {"statusUpdate": working}, {"artifactUpdate": chunk}, {"statusUpdate": done}])
    if method == "ListTasks":
        return rpc_result(h, req, {"tasks": [evil_task()], "nextPageToken": EVIL, "pageSize": 1, "totalSize": 1})
    rpc_error(h, req, -32001, f"no such task {EVIL}")


def test_control_sequences_from_the_agent_are_shown_escaped_and_kept_in_json(tmp_path):
    skill = {"id": "s", "name": EVIL, "description": EVIL, "tags": ["t"]}
    with Hostile(rpc=answer_evil) as agent:
        agent.card = card_for(agent.base, name=EVIL, description=EVIL, version=EVIL, skills=[skill])
        runs = {
            "card": run("card", agent.base),
            "send": run("send", agent.base, "hi", cwd=tmp_path),
            "stream": run("send", agent.base, "hi", "--stream", cwd=tmp_path),
            "list": run("list", agent.base),
            "error": run("get", agent.base, "t1"),
        }
        as_json = run("--json", "card", agent.base)
    for name, r in runs.items():
        assert controls(r.stdout + r.stderr) == [], (name, r.stdout, r.stderr)
        assert "\\x1b]0;pwned\\x07" in r.stdout + r.stderr, (name, r.stdout, r.stderr)
    assert "\\x1b]52;c;" in runs["card"].stdout and "\\u{9b}2J" in runs["send"].stdout
    assert runs["error"].returncode == 4
    assert json.loads(as_json.stdout)["name"] == EVIL, "--json keeps the exact text"


# --- size and time bounds ------------------------------------------------------------------------------


def run_measured(*args, seconds=60):
    """`a2a ARGS`: (exit code, stderr, peak resident memory in MB, wall seconds); killed after
    `seconds`. The child is reaped with wait4 for its own resource usage (not Popen's wait)."""
    started = time.monotonic()
    proc = subprocess.Popen([a2a_bin(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = started + seconds
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, proc.stderr.read().decode(errors="replace"), usage.ru_maxrss / 1024, elapsed


#: Peak memory allowed: the binary itself, plus one answer of the default 16 MiB limit and its parse.
MAX_RSS_MB = 120


def huge_answer(declared):
    """SendMessage answered with a valid 200 MB JSON message, its length declared or not."""
    def answer(h, req):
        head = json.dumps({"jsonrpc": "2.0", "id": req.rpc["id"], "result": {"message": {
            "messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "@"}]}}}).encode()
        prefix, suffix = head.split(b"@")
        size = 200 << 20
        h.send_response(200)
        h.send_header("content-type", "application/json")
        if declared:
            h.send_header("content-length", str(len(prefix) + size + len(suffix)))
        h.end_headers()
        h.wfile.write(prefix)
        for _ in range(size // 65536):
            h.wfile.write(b"a" * 65536)
        h.wfile.write(suffix)
    return answer


@pytest.mark.parametrize("declared", [True, False])
def test_a_huge_answer_is_refused_in_bounded_memory(declared):
    with Hostile(rpc=huge_answer(declared)) as agent:
        code, err, rss, _ = run_measured("send", agent.base, "hi")
    assert code == 8 and "larger than the limit of 16777216 bytes" in err and "--max-answer-size" in err, err
    assert rss < MAX_RSS_MB, f"peak {rss:.0f} MB"


def test_the_answer_limit_is_a_flag():
    def small(h, req):
        rpc_result(h, req, {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x" * 4000}]}})
    with Hostile(rpc=small) as agent:
        assert run("send", agent.base, "hi").returncode == 0
        low = run("--max-answer-size", "2K", "send", agent.base, "hi")
        assert low.returncode == 8 and "2048 bytes" in low.stderr, low.stderr
        assert run("--max-answer-size", "lots", "send", agent.base, "hi").returncode == 2


def test_an_endless_card_is_refused_in_bounded_memory_and_time():
    routes = {("GET", CARD_PATH): lambda h, req: endless(h, "application/json", prefix=b'{"name": "')}
    with Hostile(routes=routes) as agent:
        code, err, rss, elapsed = run_measured("card", agent.base)
    assert code == 8 and "larger than the limit" in err, err
    assert rss < MAX_RSS_MB and elapsed < 15, (rss, elapsed)


def test_a_stream_answered_with_endless_json_is_refused_in_bounded_memory_and_time():
    def answer(h, req):
        endless(h, "application/json", prefix=b'{"jsonrpc": "2.0", "id": 1, "result": {"x": "')
    with Hostile(rpc=answer) as agent:
        code, err, rss, elapsed = run_measured("send", agent.base, "hi", "--stream")
    assert code == 8 and "larger than the limit" in err, err
    assert rss < MAX_RSS_MB and elapsed < 15, (rss, elapsed)


def never_ending(kind):
    """A stream that starts a task and never ends it: WORKING events, or keep-alive comments only,
    every 0.2 s (bounded here: 30 s)."""
    def answer(h, req):
        task = {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"}}}

        def forever(write):
            for i in range(150):
                if kind == "events":
                    update = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
                    body = json.dumps({"jsonrpc": "2.0", "id": req.rpc["id"], "result": {"statusUpdate": update}})
                    write(f"id: {i + 1}\ndata: {body}\n\n".encode())
                else:
                    write(b": keep-alive\n\n")
                time.sleep(0.2)
        sse(h, req, [task], then=forever)
    return answer


@pytest.mark.parametrize("kind", ["events", "keep-alives"])
def test_a_stream_that_never_ends_is_closed_after_max_time(kind):
    with Hostile(rpc=never_ending(kind)) as agent:
        code, err, _, elapsed = run_measured("--timeout", "1", "--max-time", "2", "send", agent.base, "hi", "--stream")
    assert code == 3 and "did not end within the limit of 2 s" in err and "--max-time" in err, err
    assert elapsed < 10, elapsed


# --- credentials and redirects -------------------------------------------------------------------------

KEY, TOKEN, SECRET = "key-4f1c2b", "token-9a7e3d", "secret-c0ffee"


def task_answer(h, req):
    rpc_result(h, req, {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}})


@pytest.mark.parametrize("credential", [["--api-key", KEY], ["--token", TOKEN]])
def test_credentials_never_follow_a_redirect_to_another_origin(credential):
    with Hostile(rpc=task_answer) as elsewhere, Hostile() as agent:
        scheme = {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Agent-Key"}}}
        agent.card = card_for(agent.base, securitySchemes=scheme)
        agent.routes[("POST", "/")] = lambda h, req: redirect(h, f"{elsewhere.base}/")
        r = run(*credential, "send", agent.base, "hi")
        assert r.returncode == 3 and "redirected to another origin" in r.stderr, r.stderr
        # The card too: a redirect elsewhere is not followed.
        agent.routes[("GET", CARD_PATH)] = lambda h, req: redirect(h, f"{elsewhere.base}{CARD_PATH}", 302)
        assert run(*credential, "card", agent.base).returncode == 3
        assert elsewhere.requests == [], [q.text() for q in elsewhere.requests]
        # Within the origin, a redirect is followed, credentials on.
        del agent.routes[("GET", CARD_PATH)]
        agent.routes[("POST", "/")] = lambda h, req: redirect(h, "/rpc")
        agent.routes[("POST", "/rpc")] = task_answer
        r = run(*credential, "send", agent.base, "hi")
        assert r.returncode == 0, r.stderr
        assert credential[1] in agent.requests[-1].text()


def oauth_card(base, token_url):
    flow = {"clientCredentials": {"tokenUrl": token_url, "scopes": {}}}
    return card_for(base, securitySchemes={"oauth": {"oauth2SecurityScheme": {"flows": flow}}})


def token_answer(h, req):
    json_answer(h, {"access_token": "tok-1", "token_type": "Bearer", "expires_in": 300})


def test_the_client_secret_goes_only_to_a_token_url_given_or_on_the_cards_origin():
    oauth = ["--client-id", "me", "--client-secret", SECRET]
    with Hostile(routes={("POST", "/token"): token_answer}) as collector, Hostile(rpc=task_answer) as agent:
        agent.card = oauth_card(agent.base, f"{collector.base}/token")
        refused = run(*oauth, "send", agent.base, "hi")
        assert refused.returncode == 7 and "is not on the card's origin" in refused.stderr, refused.stderr
        assert collector.requests == [], "the secret was not sent"
        # On the card's own origin (plain HTTP: loopback): used.
        agent.routes[("POST", "/token")] = token_answer
        agent.card = oauth_card(agent.base, f"{agent.base}/token")
        ok = run(*oauth, "send", agent.base, "hi")
        assert ok.returncode == 0, ok.stderr
        assert SECRET in agent.requests[-2].text() and agent.requests[-1].headers["authorization"] == "Bearer tok-1"
        # A token URL the user gives is theirs to choose.
        given = run(*oauth, "--token-url", f"{collector.base}/token", "send", agent.base, "hi")
        assert given.returncode == 0, given.stderr
        assert SECRET in collector.requests[-1].text()
    for r in (refused, ok, given):
        assert SECRET not in r.stdout + r.stderr
