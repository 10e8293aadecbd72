"""Authentication with a real OpenID provider: the npm package oidc-provider (tests/oidc/provider.mjs)
on 127.0.0.1 issues client-credentials JWT access tokens, and a2a-local verifies them (OpenID
discovery, JWKS, audiences, scopes) beside API keys, on the default store (SQLite) and on --store aws
(moto). The official a2a-sdk client authenticates from the card's declared schemes (its
AuthInterceptor) on both bindings; two clients are two principals that cannot see each other's
tasks; per-operation scopes; key rotation at the provider while the server runs; and every refusal
with its exact status, WWW-Authenticate challenge and error body on JSON-RPC and HTTP+JSON.
Needs $A2A_LOCAL_BIN, Node 22 on PATH, tests/oidc/node_modules (scripts/setup) and, for the AWS half,
the moto variables scripts/test exports."""

import base64
import contextlib
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.card_resolver import A2ACardResolver
from a2a.types import a2a_pb2 as pb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from support import a2a_local, free_port, stop  # noqa: E402

pytestmark = pytest.mark.anyio

AUDIENCE = "http://agent.test/a2a"
SHORT = "http://agent.test/short"  # tokens for this audience live 1 s
OPS_KEY = "ops-key-1"
LOGS = Path(os.environ.get("A2A_TEST_LOGS", "/tmp"))


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


class Provider:
    """oidc-provider on a free 127.0.0.1 port; `restart(rotate=True)` adds a new signing key."""

    def __init__(self, tmp: Path):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.keys = tmp / f"keys-{self.port}.json"
        self.log = LOGS / f"oidc-provider-{self.port}.log"
        self.proc = None
        self.start()

    def start(self, *flags):
        out = open(self.log, "a")
        self.proc = subprocess.Popen(
            ["node", str(HERE / "provider.mjs"), str(self.port), str(self.keys), *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=HERE,
        )
        for _ in range(100):  # bounded: 10 s
            try:
                if httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"oidc-provider exited: {self.log.read_text()}")
            time.sleep(0.1)
        raise RuntimeError("oidc-provider did not start")

    def restart(self, rotate=False):
        stop(self.proc)
        self.start(*(["--rotate"] if rotate else []))

    def token(self, client, scope="a2a.call", resource=AUDIENCE):
        form = {
            "grant_type": "client_credentials",
            "client_id": client,
            "client_secret": f"{client}-secret",
            "scope": scope,
            "resource": resource,
        }
        r = httpx.post(f"{self.issuer}/token", data=form, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()["access_token"]

    def kid(self, token):
        return json.loads(b64d(token.split(".")[0]))["kid"]


def b64d(part):
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def b64e(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def start_server(provider, backend, extra=()):
    args = [
        "--agent", "conformance",
        "--oidc-issuer", provider.issuer,
        "--oidc-audiences", f"{AUDIENCE},{SHORT}",
        "--oidc-required-scopes", "a2a.call",
        "--oidc-token-url", f"{provider.issuer}/token",
        "--oidc-leeway-secs", "0",
        "--operation-scopes", "push=a2a.push,GetExtendedAgentCard=a2a.admin",
        "--api-keys", f"ops:{OPS_KEY}",
        "--webhook-allow", "127.0.0.1/32",
        "--extended-card", str(HERE / "extended-card.json"),
        *extra,
    ]
    if backend == "aws":
        if not os.environ.get("AWS_ENDPOINT_URL"):
            pytest.fail("AWS_ENDPOINT_URL is not set (scripts/test starts moto)")
        args += ["--store", "aws", "--create-resources"]
        os.environ["TABLE_NAME"] = f"oidc-{uuid.uuid4().hex[:12]}"
    path = LOGS / f"a2a-local-oidc-{backend}-{uuid.uuid4().hex[:6]}.log"
    base, proc = a2a_local(args, log=open(path, "w"))
    return base, proc, path


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    p = Provider(tmp_path_factory.mktemp("oidc"))
    yield p
    stop(p.proc)


@pytest.fixture(scope="module", params=["sqlite", "aws"])
def server(request, provider):
    base, proc, _ = start_server(provider, request.param)
    yield base
    stop(proc)


def rpc(base, method, params, token=None, headers=None):
    h = {"A2A-Version": "1.0", **(headers or {})}
    if token:
        h["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    return httpx.post(f"{base}/", json=body, headers=h, timeout=30)


def rest(base, method, path, token=None, body=None, headers=None):
    h = {"A2A-Version": "1.0", **(headers or {})}
    if token:
        h["Authorization"] = f"Bearer {token}"
    return httpx.request(method, f"{base}{path}", json=body, headers=h, timeout=30)


def message(text="hello"):
    return {"message": {"messageId": f"m-{uuid.uuid4().hex}", "role": "ROLE_USER", "parts": [{"text": text}]}}


# --- the card and the official SDK -----------------------------------------------------------------


async def test_card_declares_the_configured_schemes_and_the_sdk_reads_them(server, provider):
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, server).get_agent_card()
    schemes = card.security_schemes
    assert set(schemes) == {"oidc", "oauth2", "apiKey"}
    assert schemes["oidc"].open_id_connect_security_scheme.open_id_connect_url == (
        f"{provider.issuer}/.well-known/openid-configuration"
    )
    flow = schemes["oauth2"].oauth2_security_scheme.flows.client_credentials
    assert flow.token_url == f"{provider.issuer}/token"
    assert set(flow.scopes) == {"a2a.call", "a2a.push", "a2a.admin"}
    assert "CreateTaskPushNotificationConfig" in flow.scopes["a2a.push"]
    assert schemes["apiKey"].api_key_security_scheme.name == "X-API-Key"
    required = [dict((k, list(v.list)) for k, v in r.schemes.items()) for r in card.security_requirements]
    assert required == [{"oidc": ["a2a.call"]}, {"oauth2": ["a2a.call"]}, {"apiKey": []}]


@contextlib.asynccontextmanager
async def sdk_client(server, binding, scheme, token, streaming):
    """The official client, resolving the card and authenticating by its declared `scheme` (the
    SDK's AuthInterceptor) with `token`; yields (client, the call context naming the session)."""
    store = InMemoryContextCredentialStore()
    await store.set_credentials("session", scheme, token)
    async with httpx.AsyncClient(timeout=30) as http:
        config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding], httpx_client=http)
        client = await ClientFactory(config).create_from_url(server, interceptors=[AuthInterceptor(store)])
        yield client, ClientCallContext(state={"sessionId": "session"})


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_sdk_client_authenticates_from_the_card(server, provider, binding):
    token = provider.token("alice", "a2a.call a2a.push")
    async with sdk_client(server, binding, "oidc", token, streaming=False) as (client, ctx):
        msg = pb.Message(message_id=f"m-{uuid.uuid4().hex}", role=pb.ROLE_USER, parts=[pb.Part(text="hi")])
        events = [e async for e in client.send_message(pb.SendMessageRequest(message=msg), context=ctx)]
        task = events[0].task
        assert task.status.state == pb.TASK_STATE_COMPLETED
        got = await client.get_task(pb.GetTaskRequest(id=task.id), context=ctx)
        assert got.id == task.id
        config = pb.TaskPushNotificationConfig(task_id=task.id, url="http://127.0.0.1:9/hook")
        created = await client.create_task_push_notification_config(config, context=ctx)
        assert created.task_id == task.id
        # Without credentials the same client is refused.
        with pytest.raises(Exception) as refused:
            await client.get_task(pb.GetTaskRequest(id=task.id))
        assert "401" in str(refused.value) or "uthenticat" in str(refused.value)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_sdk_streams_with_a_token(server, provider, binding):
    async with sdk_client(server, binding, "oauth2", provider.token("bob"), streaming=True) as (client, ctx):
        msg = pb.Message(message_id=f"tck-stream-ordering-{uuid.uuid4().hex}", role=pb.ROLE_USER, parts=[pb.Part(text="s")])
        events = [e async for e in client.send_message(pb.SendMessageRequest(message=msg), context=ctx)]
        assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED


# --- principals ---------------------------------------------------------------------------------------


def test_two_clients_are_two_principals(server, provider):
    alice, bob = provider.token("alice"), provider.token("bob")
    task = rpc(server, "SendMessage", message(), alice).json()["result"]["task"]
    mine = rpc(server, "GetTask", {"id": task["id"]}, alice).json()
    assert mine["result"]["id"] == task["id"]
    theirs = rpc(server, "GetTask", {"id": task["id"]}, bob).json()
    assert theirs["error"]["code"] == -32001
    assert rest(server, "GET", f"/tasks/{task['id']}", bob).status_code == 404
    listed = rest(server, "GET", "/tasks", bob).json()
    assert task["id"] not in [t["id"] for t in listed.get("tasks", [])]
    assert task["id"] in [t["id"] for t in rest(server, "GET", "/tasks", alice).json()["tasks"]]
    # An API key is another principal again, beside the bearer tokens.
    by_key = rest(server, "GET", f"/tasks/{task['id']}", headers={"X-API-Key": OPS_KEY})
    assert by_key.status_code == 404
    assert rest(server, "POST", "/message:send", body=message(), headers={"X-API-Key": OPS_KEY}).status_code == 200


# --- refusals -----------------------------------------------------------------------------------------


def challenges(resp):
    return resp.headers.get_list("www-authenticate")


def assert_refused(resp_rpc, resp_rest, status, challenge, reason):
    for resp in (resp_rpc, resp_rest):
        assert resp.status_code == status, resp.text
        assert challenges(resp) == challenge, challenges(resp)
    assert resp_rpc.json()["error"]["code"] == {401: -32010, 403: -32012}[status]
    assert resp_rpc.json()["error"]["data"][0]["reason"] == reason
    assert resp_rest.json()["error"]["code"] == status
    assert resp_rest.json()["error"]["details"][0]["reason"] == reason


def invalid(why):
    return [f'Bearer realm="a2a", error="invalid_token", error_description="{why}"']


def both(base, token=None, headers=None):
    return (
        rpc(base, "ListTasks", {}, token, headers),
        rest(base, "GET", "/tasks", token, headers=headers),
    )


def forged(token, header=None, payload=None, key=None):
    h, p, _ = token.split(".")
    h = b64e(json.dumps(header).encode()) if header else h
    p = b64e(json.dumps(payload).encode()) if payload else p
    if key is None:
        return f"{h}.{p}."
    sig = hmac.new(key, f"{h}.{p}".encode(), hashlib.sha256).digest()
    return f"{h}.{p}.{b64e(sig)}"


def test_no_credentials_get_a_challenge_for_every_scheme_without_an_error_code(server):
    assert_refused(*both(server), 401, ['Bearer realm="a2a", scope="a2a.call"', 'ApiKey header="X-API-Key"'], "UNAUTHENTICATED")
    # Another Authorization scheme is no credential either.
    assert_refused(
        *both(server, headers={"Authorization": "Basic YWxpY2U6eA=="}),
        401,
        ['Bearer realm="a2a", scope="a2a.call"', 'ApiKey header="X-API-Key"'],
        "UNAUTHENTICATED",
    )


def test_bad_tokens_are_invalid_tokens(server, provider, tmp_path):
    good = provider.token("alice")
    header = json.loads(b64d(good.split(".")[0]))
    payload = json.loads(b64d(good.split(".")[1]))
    cases = [
        ("not-a-jwt", "the token is not a well-formed JWT"),
        (forged(good, header={**header, "alg": "none"}), "tokens signed with none are not accepted"),
        (forged(good, payload={**payload, "sub": "bob"}), "the token&apos;s signature does not verify"),
        (provider.token("alice", resource="http://other.test/api"), "the token is for another audience"),
    ]
    # HMAC with the provider's public key as the secret (the algorithm-confusion attack).
    jwks = httpx.get(f"{provider.issuer}/jwks", timeout=5).json()
    hs = forged(good, header={**header, "alg": "HS256"}, key=json.dumps(jwks["keys"][0]).encode())
    cases.append((hs, "tokens signed with HS256 are not accepted"))
    for token, why in cases:
        why = why.replace("&apos;", "'")
        assert_refused(*both(server, token), 401, invalid(why), "UNAUTHENTICATED")
    # Another issuer's token (same client, same audience, its own keys).
    other = Provider(tmp_path)
    try:
        foreign = other.token("alice")
    finally:
        stop(other.proc)
    resp_rpc, resp_rest = both(server, foreign)
    for resp in (resp_rpc, resp_rest):
        assert resp.status_code == 401
        assert challenges(resp)[0].startswith('Bearer realm="a2a", error="invalid_token", error_description="')
    # An expired token (1 s lifetime, no leeway configured in this test).
    short = provider.token("alice", resource=SHORT)
    assert rpc(server, "ListTasks", {}, short).status_code == 200
    time.sleep(2.1)
    assert_refused(*both(server, short), 401, invalid("the token has expired"), "UNAUTHENTICATED")


def test_scopes_globally_and_per_operation(server, provider):
    # carol's token lacks the scope every request needs.
    carol = provider.token("carol", "a2a.admin")
    assert_refused(
        *both(server, carol),
        403,
        ['Bearer realm="a2a", error="insufficient_scope", scope="a2a.call"'],
        "PERMISSION_DENIED",
    )
    # bob may call but not manage push configs, nor read the extended card.
    bob = provider.token("bob")
    task = rpc(server, "SendMessage", message(), bob).json()["result"]["task"]
    config = {"taskId": task["id"], "url": "http://127.0.0.1:9/hook"}
    resp_rpc = rpc(server, "CreateTaskPushNotificationConfig", config, bob)
    resp_rest = rest(server, "POST", f"/tasks/{task['id']}/pushNotificationConfigs", bob, config)
    push = ['Bearer realm="a2a", error="insufficient_scope", scope="a2a.push"']
    assert_refused(resp_rpc, resp_rest, 403, push, "PERMISSION_DENIED")
    assert resp_rpc.json()["error"]["data"][0]["metadata"]["scope"] == "a2a.push"
    assert_refused(
        rpc(server, "GetExtendedAgentCard", {}, bob),
        rest(server, "GET", "/extendedAgentCard", bob),
        403,
        ['Bearer realm="a2a", error="insufficient_scope", scope="a2a.admin"'],
        "PERMISSION_DENIED",
    )
    # alice has them.
    alice = provider.token("alice", "a2a.call a2a.push a2a.admin")
    task = rpc(server, "SendMessage", message(), alice).json()["result"]["task"]
    config["taskId"] = task["id"]
    assert rpc(server, "CreateTaskPushNotificationConfig", config, alice).json()["result"]["taskId"] == task["id"]
    assert rest(server, "GET", "/extendedAgentCard", alice).json()["name"] == "Extended OIDC test agent"
    # The 0.3 binding is checked the same way.
    resp = httpx.post(
        f"{server}/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/set",
              "params": {"taskId": task["id"], "pushNotificationConfig": {"url": "http://127.0.0.1:9/h"}}},
        headers={"Authorization": f"Bearer {bob}"},
        timeout=30,
    )
    assert resp.status_code == 403 and challenges(resp) == push


# --- key rotation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "aws"])
def test_key_rotation_while_the_server_runs(tmp_path, backend):
    provider = Provider(tmp_path)
    os.environ["RUST_LOG"] = "debug"  # the most the server would ever log
    try:
        base, proc, log = start_server(provider, backend)
    finally:
        del os.environ["RUST_LOG"]
    try:
        old = provider.token("alice")
        assert rpc(base, "ListTasks", {}, old).status_code == 200
        provider.restart(rotate=True)
        new = provider.token("alice")
        assert provider.kid(new) != provider.kid(old)
        assert json.loads(b64d(new.split(".")[0]))["alg"] == "ES256"
        # The unknown kid makes the server fetch the keys again, at most once per 5 s: bounded wait.
        deadline = time.monotonic() + 15
        while True:
            resp = rpc(base, "ListTasks", {}, new)
            if resp.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert resp.status_code == 200, resp.text
        # The old key is still published: its tokens still verify.
        assert rpc(base, "ListTasks", {}, old).status_code == 200
        # Refused tokens are described, never quoted; nothing of a token reaches the log.
        assert rpc(base, "ListTasks", {}, old[:-8] + "AAAAAAAA").status_code == 401
    finally:
        stop(proc, provider.proc)
    text = log.read_text()
    assert text.count("oidc: signing keys fetched") >= 2, "logging was on: the first fetch and the rotation's"
    for token in (old, new):
        for part in token.split("."):
            assert part[:24] not in text


# --- the a2a command line as an OAuth 2.0 client ---------------------------------------------------


def test_the_command_line_gets_its_token_from_the_client_credentials_flow(server, provider):
    """`a2a` with a client id and secret. The card's oauth2 scheme names the provider's token URL,
    on another origin than the card's (another port): the client secret is not sent there on the
    card's word (exit 7, the reason said); with that token URL given (A2A_TOKEN_URL) the token comes
    from the provider. The secret never appears in what it prints."""
    binary = os.environ.get("A2A_BIN")
    if not binary:
        pytest.fail("A2A_BIN is not set (run through scripts/test)")
    env = {**os.environ, "A2A_CLIENT_ID": "alice", "A2A_CLIENT_SECRET": "alice-secret", "A2A_SCOPES": "a2a.call"}
    env.pop("A2A_TOKEN_URL", None)
    declared = subprocess.run([binary, "send", server, "hi"], capture_output=True, text=True, env=env, timeout=60)
    assert declared.returncode == 7 and f"the card's token URL {provider.issuer}/token is not on the card's origin" in declared.stderr, declared.stderr
    env["A2A_TOKEN_URL"] = f"{provider.issuer}/token"
    ok = subprocess.run([binary, "--json", "send", server, "hello with a token"], capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["status"]["state"] == "TASK_STATE_COMPLETED"
    # Without the scope every request needs: the agent's 403, told apart from a connection failure.
    narrow = {**env, "A2A_SCOPES": "a2a.admin"}
    refused = subprocess.run([binary, "send", server, "hi"], capture_output=True, text=True, env=narrow, timeout=60)
    assert refused.returncode == 4 and "PERMISSION_DENIED" in refused.stderr
    wrong = {**env, "A2A_CLIENT_SECRET": "not-the-secret"}
    bad = subprocess.run([binary, "send", server, "hi"], capture_output=True, text=True, env=wrong, timeout=60)
    assert bad.returncode == 7 and "token endpoint" in bad.stderr
    for r in (declared, ok, refused, bad):
        assert "alice-secret" not in r.stdout + r.stderr
