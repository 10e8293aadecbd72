"""Signed agent cards across implementations (spec §8.4), and signed push notifications. a2a-local signs its card with ES256, RS256
and EdDSA keys and the official a2a-sdk verifier (a2a-sdk[signing], PyJWT) accepts each signature
with the key from the served JWKS (the signature's jku); the a2a-sdk signer signs cards that
`a2a card --verify` accepts with keys from the jku on the card's origin; a tampered card is refused
both ways. Where the two canonical forms differ — a REQUIRED field present but empty, which §8.4.1
keeps and the SDK drops — the spec's worked example decides, and the SDK is the one that deviates."""

import base64
import hashlib
import json
import os
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import jwt
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import InvalidSignaturesError, create_agent_card_signer, create_signature_verifier
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from google.protobuf.json_format import MessageToDict, ParseDict
from jwt.api_jwk import PyJWK

from support import a2a_local, free_port, stop, webhook_receiver
from test_cli import run

KEYS = Path(__file__).resolve().parents[2] / "shared" / "tests" / "fixtures" / "signing"
ALGS = {"es256": "ES256", "rs256": "RS256", "eddsa": "EdDSA"}
CARD = {
    "name": "Signed agent",
    "description": "Signs its card",
    "version": "2.0.0",
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "echo", "name": "Echo", "description": "Echoes", "tags": ["test"]}],
}


@pytest.fixture(scope="module")
def signed_local(tmp_path_factory):
    card = tmp_path_factory.mktemp("card") / "card.json"
    card.write_text(json.dumps(CARD))
    keys = [f"{name}={KEYS / (name + '.pem')}" for name in ALGS]
    base, proc = a2a_local(["--agent", "echo", "--card", str(card), "--card-signing-key", ",".join(keys)])
    yield base
    stop(proc)


def sdk_verifier(only_kid):
    """The SDK's verifier with keys from each signature's jku, trusting only `only_kid`."""

    def key_provider(kid, jku):
        keys = httpx.get(jku, timeout=10).json()["keys"]
        (jwk,) = [k for k in keys if k["kid"] == only_kid]
        return PyJWK(jwk)

    return create_signature_verifier(key_provider, list(ALGS.values()))


def test_the_sdk_verifies_a2a_local_signatures_of_every_algorithm(signed_local):
    body = httpx.get(f"{signed_local}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}, timeout=10).json()
    assert len(body["signatures"]) == 3
    card = ParseDict(body, pb.AgentCard(), ignore_unknown_fields=True)
    for kid in ALGS:
        sdk_verifier(kid)(card)  # raises unless the signature of `kid` verifies
    card.name = "Evil agent"
    for kid in ALGS:
        with pytest.raises(InvalidSignaturesError):
            sdk_verifier(kid)(card)
    jwks = httpx.get(f"{signed_local}/.well-known/jwks.json", timeout=10).json()
    assert sorted((k["kid"], k["alg"]) for k in jwks["keys"]) == sorted(ALGS.items())
    assert all("d" not in k for k in jwks["keys"]), "no private parts"


def test_the_sdk_verifies_signatures_made_in_kms(tmp_path):
    """--card-signing-kms: the private keys stay in KMS (moto); a card large enough that KMS signs
    its digest (signing input over 4096 bytes) verifies with the SDK and with `a2a card --verify`."""
    if not os.environ.get("AWS_ENDPOINT_URL"):
        pytest.fail("AWS_ENDPOINT_URL is not set (scripts/test starts moto)")
    import boto3

    kms = boto3.client("kms", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    ec_key = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
    rsa_key = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"]
    alias = f"alias/card-{uuid.uuid4().hex[:8]}"
    kms.create_alias(AliasName=alias, TargetKeyId=ec_key)
    skills = [{"id": f"s{i}", "name": f"Skill {i}", "description": "Does one thing well and says so at length",
               "tags": ["kms"]} for i in range(60)]
    card = tmp_path / "card.json"
    card.write_text(json.dumps({**CARD, "skills": skills}))
    base, proc = a2a_local(["--agent", "echo", "--card", str(card),
                            "--card-signing-kms", f"kms-ec={alias},kms-rsa={rsa_key}"])
    try:
        body = httpx.get(f"{base}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}, timeout=10).json()
        assert [json.loads(base64.urlsafe_b64decode(s["protected"] + "=="))["alg"] for s in body["signatures"]] == ["ES256", "RS256"]
        assert len(json.dumps(body)) > 6000, "large enough to be signed by digest"
        parsed = ParseDict(body, pb.AgentCard(), ignore_unknown_fields=True)
        for kid in ["kms-ec", "kms-rsa"]:
            sdk_verifier(kid)(parsed)
        parsed.skills[59].name = "Evil skill"
        with pytest.raises(InvalidSignaturesError):
            sdk_verifier("kms-ec")(parsed)
        r = run("card", base, "--verify")
        assert r.returncode == 0 and "kid kms-ec (ES256)" in r.stdout, r.stdout + r.stderr
    finally:
        stop(proc)
    # A key that cannot sign ES256/RS256 stops the start with the reason.
    p384 = kms.create_key(KeySpec="ECC_NIST_P384", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
    r = subprocess.run([os.environ["A2A_LOCAL_BIN"], "--addr", f"127.0.0.1:{free_port()}", "--agent", "echo",
                        "--card-signing-kms", p384], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and f"--card-signing-kms: KMS key {p384} signs with ECDSA_SHA_384 only" in r.stderr, r.stderr


def test_our_command_line_verifies_the_signed_card(signed_local):
    r = run("card", signed_local, "--verify")
    assert r.returncode == 0 and "signature verified: kid es256 (ES256)" in r.stdout, r.stdout + r.stderr


class Files:
    """A static HTTP server on 127.0.0.1: path -> JSON."""

    def __init__(self):
        self.files = {}
        files = self.files

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body).encode() if body is not None else b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def files():
    f = Files()
    yield f
    f.server.shutdown()


def sdk_signed(card_json, name, jku):
    """The card signed by the SDK's signer with the test key `name`, and that key's public JWK."""
    pem = (KEYS / f"{name}.pem").read_bytes()
    private = load_pem_private_key(pem, password=None)
    algorithm = jwt.get_algorithm_by_name(ALGS[name])
    jwk = json.loads(algorithm.to_jwk(private.public_key()))
    jwk.update(kid=f"py-{name}", alg=ALGS[name], use="sig")
    header = {"alg": ALGS[name], "typ": "JOSE", "kid": f"py-{name}", "jku": jku}
    card = create_agent_card_signer(pem, header)(ParseDict(card_json, pb.AgentCard()))
    return MessageToDict(card), jwk


def full_card(base):
    return {**CARD, "supportedInterfaces": [{"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True}}


@pytest.mark.parametrize("name", list(ALGS))
def test_cards_the_sdk_signs_verify_here(files, name):
    jku = f"{files.base}/.well-known/jwks.json"
    card, jwk = sdk_signed(full_card(files.base), name, jku)
    files.files["/.well-known/jwks.json"] = {"keys": [jwk]}
    files.files["/.well-known/agent-card.json"] = card
    r = run("card", files.base, "--verify")
    assert r.returncode == 0 and f"signature verified: kid py-{name} ({ALGS[name]})" in r.stdout, r.stdout + r.stderr
    files.files["/.well-known/agent-card.json"] = {**card, "description": "Tampered"}
    r = run("card", files.base, "--verify")
    assert r.returncode == 9 and "does not match" in r.stderr, r.stderr


def test_a_jku_on_another_origin_is_not_fetched_unless_allowed(files):
    other = Files()
    try:
        jku = f"{other.base}/jwks.json"
        card, jwk = sdk_signed(full_card(files.base), "es256", jku)
        other.files["/jwks.json"] = {"keys": [jwk]}
        files.files["/.well-known/agent-card.json"] = card
        r = run("card", files.base, "--verify")
        assert r.returncode == 9 and "not on the card's origin" in r.stderr, r.stderr
        assert run("card", files.base, "--verify", "--allow-jku", other.base).returncode == 0
    finally:
        other.server.shutdown()


def test_where_the_sdk_deviates_the_spec_example_decides(files, tmp_path):
    """§8.4.1's example keeps REQUIRED fields that are empty ("description": "", "skills": [] stay in
    the canonical form); the SDK's canonical form drops every empty value. A card served as the spec
    writes it (REQUIRED fields always present) therefore carries an SDK signature over other bytes
    than the spec's: it does not verify here. Filled REQUIRED fields: the two agree."""
    card_json = {**full_card(files.base), "description": "", "skills": []}
    card, jwk = sdk_signed(card_json, "es256", f"{files.base}/.well-known/jwks.json")
    assert "description" not in card, "proto JSON leaves the empty fields out"
    files.files["/.well-known/agent-card.json"] = {**card, "description": "", "skills": []}
    jwks = tmp_path / "trusted.json"
    jwks.write_text(json.dumps({"keys": [jwk]}))
    r = run("card", files.base, "--verify", "--trusted-jwks", str(jwks))
    assert r.returncode == 9 and "does not match" in r.stderr, r.stderr
    files.files["/.well-known/agent-card.json"] = card  # as the SDK serializes it: both forms agree
    assert run("card", files.base, "--verify", "--trusted-jwks", str(jwks)).returncode == 0
    card, jwk = sdk_signed(full_card(files.base), "es256", f"{files.base}/.well-known/jwks.json")
    files.files["/.well-known/agent-card.json"] = card
    jwks.write_text(json.dumps({"keys": [jwk]}))
    assert run("card", files.base, "--verify", "--trusted-jwks", str(jwks)).returncode == 0


def test_with_trusted_keys_a_jku_counts_for_nothing(files, tmp_path):
    """A card its host altered and re-signed with a key of its own, published at a jku on the card's
    origin: with --trusted-jwks it does not verify (only the trusted keys count, no jku is fetched);
    without trusted keys, the jku on the card's origin is what there is to go by."""
    jku = f"{files.base}/.well-known/jwks.json"
    card, trusted = sdk_signed(full_card(files.base), "es256", jku)
    jwks = tmp_path / "trusted.json"
    jwks.write_text(json.dumps({"keys": [trusted]}))
    files.files["/.well-known/jwks.json"] = {"keys": [trusted]}
    files.files["/.well-known/agent-card.json"] = card
    assert run("card", files.base, "--verify", "--trusted-jwks", str(jwks)).returncode == 0
    resigned, own = sdk_signed({**full_card(files.base), "description": "Altered"}, "rs256", jku)
    files.files["/.well-known/jwks.json"] = {"keys": [trusted, own]}
    files.files["/.well-known/agent-card.json"] = resigned
    assert run("card", files.base, "--verify").returncode == 0
    r = run("card", files.base, "--verify", "--trusted-jwks", str(jwks))
    assert r.returncode == 9 and "only the trusted keys count" in r.stderr, r.stderr
    both = run("card", files.base, "--verify", "--trusted-jwks", str(jwks), "--allow-jku", files.base)
    assert both.returncode == 2 and "cannot be used with" in both.stderr, both.stderr


@pytest.mark.parametrize("backend", ["sqlite", "aws"])
def test_push_notifications_are_signed_and_verify_with_pyjwt(backend, tmp_path):
    """Each webhook POST carries A2A-Notification-Signature, a JWT a receiver checks with PyJWT and
    the agent's JWKS: issuer the agent, audience the webhook URL, the body's SHA-256, jti stable per
    event (retries deduplicate), seq = A2A-Event-ID."""
    hook, received = webhook_receiver(raw=True)
    card = tmp_path / "card.json"
    card.write_text(json.dumps(CARD))
    args = ["--agent", "echo", "--card", str(card), "--webhook-allow", "127.0.0.1/32",
            "--card-signing-key", f"hooks={KEYS / 'eddsa.pem'},{KEYS / 'es256.pem'}"]
    if backend == "aws":
        if not os.environ.get("AWS_ENDPOINT_URL"):
            pytest.fail("AWS_ENDPOINT_URL is not set (scripts/test starts moto)")
        args += ["--store", "aws", "--create-resources"]
    env_table = os.environ.get("TABLE_NAME")
    os.environ["TABLE_NAME"] = f"signing-{uuid.uuid4().hex[:12]}"
    try:
        base, proc = a2a_local(args)
    finally:
        os.environ.pop("TABLE_NAME") if env_table is None else os.environ.__setitem__("TABLE_NAME", env_table)
    try:
        jwks = httpx.get(f"{base}/.well-known/jwks.json", timeout=10).json()
        send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "signed hooks"}]},
            "configuration": {"taskPushNotificationConfig": {"url": hook, "id": "cfg-1", "token": "t"}}}}
        task = httpx.post(f"{base}/", json=send, headers={"A2A-Version": "1.0"}, timeout=30).json()["result"]["task"]
        for _ in range(100):  # bounded: 10 s
            if any(b"TASK_STATE_COMPLETED" in body for _, body in received):
                break
            time.sleep(0.1)
        assert received, "no notification arrived"
        jtis = set()
        for headers, body in received:
            token = headers["a2a-notification-signature"]
            header = jwt.get_unverified_header(token)
            assert header["typ"] == "JWT" and header["kid"] == "hooks" and header["jku"] == f"{base}/.well-known/jwks.json"
            (jwk,) = [k for k in jwks["keys"] if k["kid"] == header["kid"]]
            claims = jwt.decode(token, PyJWK(jwk).key, algorithms=["EdDSA"], audience=hook, issuer=base)
            digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
            assert claims["body_sha256"] == digest
            assert claims["taskId"] == task["id"] and str(claims["seq"]) == headers["a2a-event-id"]
            assert claims["jti"] == f"{task['id']}/cfg-1/{claims['seq']}" and claims["exp"] > claims["iat"]
            assert headers["a2a-notification-token"] == "t", "the existing headers stay"
            jtis.add(claims["jti"])
            with pytest.raises(jwt.InvalidAudienceError):
                jwt.decode(token, PyJWK(jwk).key, algorithms=["EdDSA"], audience="http://elsewhere/hook", issuer=base)
            tampered = body.replace(b"signed hooks", b"evil hooks")
            if tampered != body:
                assert base64.urlsafe_b64encode(hashlib.sha256(tampered).digest()).rstrip(b"=").decode() != claims["body_sha256"]
        assert len(jtis) == len(received), "one jti per event"
    finally:
        stop(proc)
