"""The playground's OAuth 2.0 client credentials: the token URL read from the card, a token asked of a
real OpenID provider (npm oidc-provider, tests/oidc/provider.mjs) through the relay, then used as the
bearer token of every call. Needs Node 22 on PATH (scripts/test sources the edge toolchain's)."""

import os
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By

from support import a2a_local, stop
from test_playground import Page, browser, shots  # noqa: F401 (fixtures)

HERE = Path(__file__).resolve().parent
OIDC = HERE.parent / "oidc"
AUDIENCE = "http://agent.test/a2a"


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    import sys

    Path(os.environ.get("A2A_TEST_LOGS", "/tmp")).mkdir(parents=True, exist_ok=True)  # the provider logs there
    sys.path.insert(0, str(OIDC))
    from test_oidc import Provider

    p = Provider(tmp_path_factory.mktemp("oidc"))
    yield p
    stop(p.proc)


def test_a_client_credentials_token_from_the_cards_token_url(browser, provider, shots):  # noqa: F811
    log_path = shots / "a2a-local-oauth.log"
    with open(log_path, "w") as log:
        base, proc = a2a_local(["--agent", "echo", "--oidc-issuer", provider.issuer, "--oidc-audiences", AUDIENCE,
                                "--oidc-required-scopes", "a2a.call", "--oidc-token-url", f"{provider.issuer}/token"], log=log)
        try:
            p = Page(browser, shots)
            browser.get(f"{base}/playground/")
            p.until("the request for credentials", lambda: "requires credentials" in p.text("#card-state"))
            # The card is public: the page offers the token URL of its client credentials flow.
            assert p.by("#token-url").get_attribute("value") == f"{provider.issuer}/token"
            p.by("#client-id").send_keys("bob")
            p.by("#client-secret").send_keys("bob-secret")
            p.by("#scope").send_keys("a2a.call")
            p.by("#resource").send_keys(AUDIENCE)
            p.by("#get-token").click()
            p.until("the token", lambda: p.text("#token-state").startswith("token received"))
            assert p.text("#credentials-state") == "(Authorization)"
            p.by("#connect-button").click()
            p.until("the card report", lambda: p.by("#card-report").is_displayed())
            schemes = p.text("#card-schemes")
            assert "oauth2" in schemes.lower() or "oauth" in schemes.lower(), schemes
            p.tab("chat")
            p.send("with a token")
            p.until("the task completing", lambda: p.state() == "completed")
            assert p.artifact() == "with a token"
            p.shot("oauth-client-credentials")
            # The console shows the token call without the form that carries the secret.
            p.tab("console")
            token_call = [c.text for c in p.all("#console li") if "/token" in c.text.split("\n")[0]]
            assert token_call and "bob-secret" not in token_call[0], token_call
            assert all("bob-secret" not in c.text for c in p.all("#console li"))
            # The public token API reaches this card's token URLs only.
            r = httpx.post(f"{base}/playground/api/token", json={"tokenUrl": "http://127.0.0.1:9/token", "form": "x=1"}, timeout=10)
            assert r.status_code == 400 and r.json()["error"]["details"][0]["metadata"]["field"] == "tokenUrl", r.text
        finally:
            stop(proc)
    assert "bob-secret" not in log_path.read_text()
