"""Amazon Bedrock AgentCore Runtime's A2A container contract (docs/agentcore.md), driven against
`a2a-local --preset agentcore` on loopback: the `/ping` health check (Healthy, HealthyBusy while a
turn runs, `time_of_last_update` moving only when the status changes, no credentials needed), the
agent card at the well-known path naming the runtime's URL, JSON-RPC 1.0 and 0.3 on `POST /` with the
runtime's session header; behind the runtime's JWT authorizer, the principal taken from the token it
forwards. The runtime itself (its proxy, SigV4 or OAuth in front, the microVMs)
cannot run here; docs/agentcore.md says what that leaves untested."""
import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from support import a2a_local, free_port, stop, wait_ready  # noqa: E402

RUNTIME_URL = "https://bedrock-agentcore.us-east-1.amazonaws.com/runtimes/arn%3Aaws%3Abedrock-agentcore%3Aus-east-1%3A123456789012%3Aruntime%2Fa2a_agent-AbCdEf1234/invocations/"
SESSION = "a2a-serverless-agentcore-session-0001"  # 33 to 256 characters, as the runtime sends
KEY = "agentcore-test-key"
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEfGhI"


@pytest.fixture(scope="module")
def agent():
    """The crash tests' HTTP agent: one artifact chunk per word, WORD_DELAY apart."""
    port = free_port()
    log = os.path.join(os.environ.get("A2A_TEST_LOGS", "/tmp"), "agentcore-agent-runs.log")
    script = os.path.join(os.path.dirname(__file__), "..", "crash", "agent.py")
    proc = subprocess.Popen([sys.executable, script, str(port), log], env={**os.environ, "WORD_DELAY": "0.05"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="POST", data=b'{"kind":"cancel"}',
                                                          headers={"Content-Type": "application/json"}), timeout=1)
            break
        except urllib.error.HTTPError:
            break
        except OSError:
            time.sleep(0.05)
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def server(agent):
    logs = os.environ.get("A2A_TEST_LOGS", "/tmp")
    log = open(os.path.join(logs, "agentcore-a2a-local.log"), "w")
    base, proc = a2a_local(["--preset", "agentcore", "--agent-url", agent, "--api-keys", f"caller:{KEY}"],
                           log=log, env={"AGENTCORE_RUNTIME_URL": RUNTIME_URL})
    yield base
    stop(proc)
    log.close()


def call(base, method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def rpc(base, method, params, version=None):
    headers = {"X-Api-Key": KEY, "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": SESSION}
    if version:
        headers["A2A-Version"] = version
    status, body = call(base, "POST", "/", {"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params},
                        headers)
    assert status == 200, body
    assert "result" in body, body
    return body["result"]


def ping(base):
    status, body = call(base, "GET", "/ping")
    assert status == 200, body
    assert set(body) == {"status", "time_of_last_update"}, body
    assert isinstance(body["time_of_last_update"], int), body
    return body


def wait_for(base, status, seconds):
    """The first /ping answer with `status` within `seconds` (None if none)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        seen = ping(base)
        if seen["status"] == status:
            return seen
        time.sleep(0.05)
    return None


def test_ping_answers_healthy_without_credentials_and_its_time_stays_put(server):
    first = ping(server)
    assert first["status"] == "Healthy"
    assert abs(first["time_of_last_update"] - time.time()) < 600
    time.sleep(1.1)
    assert ping(server) == first, "the time moves only when the status changes"
    # A2A itself still asks for the key.
    status, _ = call(server, "POST", "/", {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
                     {"A2A-Version": "1.0"})
    assert status == 401


def test_ping_answers_get_only(server):
    status, _ = call(server, "POST", "/ping", {})
    assert status == 405


def test_the_card_names_the_runtime_url(server):
    status, card = call(server, "GET", "/.well-known/agent-card.json")
    assert status == 200
    urls = [i["url"] for i in card["supportedInterfaces"]]
    assert RUNTIME_URL.rstrip("/") in [u.rstrip("/") for u in urls], urls
    assert any(i["protocolBinding"] == "JSONRPC" for i in card["supportedInterfaces"]), card


def test_jsonrpc_1_0_on_the_root_path(server):
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hello agentcore"}]}
    task = rpc(server, "SendMessage", {"message": message}, "1.0")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    text = "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])
    assert "hello" in text and "agentcore" in text, task


def test_jsonrpc_0_3_on_the_root_path(server):
    message = {"messageId": str(uuid.uuid4()), "role": "user", "kind": "message",
               "parts": [{"kind": "text", "text": "hello from 0.3"}]}
    task = rpc(server, "message/send", {"message": message})
    assert task["kind"] == "task" and task["status"]["state"] == "completed", task


def test_ping_says_busy_while_a_turn_runs(server):
    words = " ".join(f"w{i}" for i in range(40))  # 40 chunks, 0.05 s apart: about 2 s of work
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": words}]}
    before = ping(server)
    task = rpc(server, "SendMessage", {"message": message, "configuration": {"returnImmediately": True}}, "1.0")["task"]
    busy = wait_for(server, "HealthyBusy", 5)
    assert busy, "never HealthyBusy while the turn ran"
    assert busy["time_of_last_update"] >= before["time_of_last_update"]
    idle = wait_for(server, "Healthy", 20)
    assert idle and idle["time_of_last_update"] >= busy["time_of_last_update"], idle
    done = rpc(server, "GetTask", {"id": task["id"]}, "1.0")
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done


def forwarded(sub, issuer=ISSUER):
    """A bearer token as the runtime forwards it once its JWT authorizer verified it (a Cognito
    access token's claims; a2a-local does not check the signature again, so any will do)."""
    def b64(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    claims = {"iss": issuer, "sub": sub, "client_id": "agentcore-client", "token_use": "access",
              "scope": "a2a/call", "exp": int(time.time()) + 300}
    return {"Authorization": f"Bearer {b64({'alg': 'RS256', 'kid': 'k1'})}.{b64(claims)}.c2lnbmF0dXJl",
            "A2A-Version": "1.0", "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": SESSION}


def test_behind_the_runtimes_jwt_authorizer_the_principal_is_the_forwarded_tokens_subject(agent):
    logs = os.environ.get("A2A_TEST_LOGS", "/tmp")
    with open(os.path.join(logs, "agentcore-oauth-a2a-local.log"), "w") as log:
        base, proc = a2a_local(["--preset", "agentcore", "--agent-url", agent, "--oidc-issuer", ISSUER], log=log,
                               env={"AGENTCORE_RUNTIME_URL": RUNTIME_URL})
        try:
            def send(headers, method, params):
                return call(base, "POST", "/", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                            headers)

            message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "mine"}]}
            status, body = send(forwarded("alice"), "SendMessage", {"message": message})
            assert status == 200 and "result" in body, body
            task_id = body["result"]["task"]["id"]
            status, body = send(forwarded("alice"), "GetTask", {"id": task_id})
            assert body["result"]["id"] == task_id, body
            # Another subject does not see it; no token, or one from another issuer, is refused.
            status, body = send(forwarded("bob"), "GetTask", {"id": task_id})
            assert body["error"]["code"] == -32001, body
            status, _ = send({"A2A-Version": "1.0"}, "GetTask", {"id": task_id})
            assert status == 401
            status, body = send(forwarded("alice", "https://issuer.elsewhere.test"), "GetTask", {"id": task_id})
            assert status == 401 and "another issuer" in json.dumps(body), body
            ping(base)  # the health check needs no token
        finally:
            stop(proc)
