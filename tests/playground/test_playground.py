"""The playground (/playground of a2a-local) in a real browser: Debian's chromium, headless, driven by
Selenium through chromedriver, against a2a-local on loopback with the Python example agent behind it
(examples/agents/python/agent.py: streams word by word, asks back when sent nothing) and a signed
card. Each step saves a screenshot into $A2A_TEST_LOGS/playground/. Also: a second agent (the
official a2a-sdk server, tests/cli/sdk_agent.py) through the relay, and the relay's refusals."""

import http.client
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from support import a2a_local, free_port, required, stop, wait_ready

ROOT = Path(__file__).resolve().parents[2]
KEYS = ROOT / "shared" / "tests" / "fixtures" / "signing"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT = 20  # seconds any one thing on the page may take


@pytest.fixture(scope="module")
def shots():
    folder = Path(os.environ.get("A2A_TEST_LOGS", "/tmp")) / "playground"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def agent():
    """The Python example agent: one word every 0.25 s."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "examples/agents/python/agent.py"), str(port)],
                            env={**os.environ, "WORD_DELAY": "0.25"}, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    time.sleep(0.5)
    yield f"http://127.0.0.1:{port}/"
    stop(proc)


@pytest.fixture(scope="module")
def host(agent, shots):
    required("A2A_LOCAL_BIN")
    log = open(shots / "a2a-local.log", "w")
    base, proc = a2a_local(["--agent-url", agent, "--webhook-allow", "127.0.0.1/32",
                            "--card-signing-key", f"es256={KEYS / 'es256.pem'}"], log=log)
    yield base
    stop(proc)
    log.close()


@pytest.fixture(scope="module")
def sdk_agent():
    """The official a2a-sdk 1.x server (JSON-RPC at /): "slow a b c" streams the words."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests/cli/sdk_agent.py"), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_ready(f"{base}/.well-known/agent-card.json", [proc], "the a2a-sdk agent", 30)
    yield base
    stop(proc)


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail(f"{CHROMIUM} or {CHROMEDRIVER} is missing: scripts/setup installs chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800",
                "--no-first-run", "--disable-extensions", "--proxy-server=direct://", "--proxy-bypass-list=*"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()


class Page:
    shots_taken = 0  # one numbering for every page of the run, so the screenshots sort in order

    def __init__(self, driver, shots):
        self.d = driver
        self.shots = shots

    def by(self, css):
        return self.d.find_element(By.CSS_SELECTOR, css)

    def all(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def text(self, css):
        found = self.all(css)
        return found[0].text if found else ""

    def until(self, what, check, seconds=WAIT):
        try:
            # A check may read an element the page replaced meanwhile: it is read again.
            wait = WebDriverWait(self.d, seconds, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,))
            return wait.until(lambda _: check())
        except Exception as e:  # noqa: BLE001 (the screenshot says what the page showed)
            self.shot(f"failed-{what}")
            raise AssertionError(f"{what}: not seen in {seconds} s") from e

    def shot(self, name):
        Page.shots_taken += 1
        self.d.save_screenshot(str(self.shots / f"{Page.shots_taken:02d}-{name}.png"))

    def tab(self, name):
        self.by(f"#tab-{name}").click()
        self.until(f"the {name} view", lambda: self.by(f"#view-{name}").is_displayed())

    def send(self, text):
        box = self.by("#message")
        box.clear()
        box.send_keys(text)
        box.send_keys(Keys.CONTROL, Keys.ENTER)

    def rows(self):
        """The task table's cells, read in one go."""
        return self.d.execute_script(
            "return [...document.querySelectorAll('#tasks tbody tr')].map(r => [...r.cells].map(c => c.textContent))")

    def state(self):
        badges = self.all("#transcript li.agent .task-state")
        return badges[-1].text if badges else ""

    def artifact(self):
        parts = self.all("#transcript li.agent .artifact-parts")
        return parts[-1].text if parts else ""


@pytest.fixture(scope="module")
def page(browser, host, shots):
    p = Page(browser, shots)
    browser.get(f"{host}/playground/")
    return p


def test_the_card_is_read_checked_and_its_signature_verified(page, host):
    page.until("the card report", lambda: page.by("#card-report").is_displayed())
    assert page.text("#card-written-for") == "written for A2A 1.0"
    assert page.text("#card-v1") == "1.0: complete"  # the 1.0.1 JSON schema and the members the proto requires
    assert page.text("#card-v03") == "0.3: complete"  # what a 0.3 client reads there, against the 0.3.0 schema
    page.until("the signature check", lambda: page.text("#card-signature").startswith("signature verified"))
    assert "es256" in page.text("#card-signature")
    bindings = [row.text for row in page.all("#card-interfaces tbody tr")]
    assert any("JSONRPC" in b for b in bindings) and any("HTTP+JSON" in b for b in bindings), bindings
    page.shot("card")


def test_tabs_are_keyboard_usable(page):
    page.by("#tab-card").click()
    page.by("#tab-card").send_keys(Keys.ARROW_RIGHT)
    page.until("the chat tab selected by the arrow key", lambda: page.by("#tab-chat").get_attribute("aria-selected") == "true")
    assert page.d.switch_to.active_element == page.by("#tab-chat")
    assert page.by("#view-chat").is_displayed() and not page.by("#view-card").is_displayed()


def test_a_streamed_artifact_grows_chunk_by_chunk(page):
    page.tab("chat")
    words = "alpha beta gamma delta epsilon zeta"
    page.send(words)
    seen = []
    deadline = time.time() + WAIT
    while time.time() < deadline and page.state() != "completed":
        text = page.artifact()
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        time.sleep(0.03)
    assert page.state() == "completed", page.state()
    assert page.artifact() == "You said: " + words
    growing = [t for t in seen if t != page.artifact()]
    assert len(growing) >= 3, f"the artifact should be seen growing, saw {seen}"
    assert all(page.artifact().startswith(t) for t in seen), seen
    page.shot("streamed-artifact")


def test_input_required_is_answered_in_place(page):
    page.by("#new-task").click()
    page.send("")
    page.until("the agent's question", lambda: page.state() == "input required")
    assert "What should I answer?" in page.text("#transcript li.agent .question")
    task_line = page.text("#chat-task")
    page.shot("input-required")
    page.send("forty two")
    page.until("the answered task completing", lambda: page.state() == "completed")
    assert page.artifact() == "You said: forty two"
    assert page.text("#chat-task") == task_line, "the answer continued the same task"
    page.shot("input-answered")


def test_a_slow_task_is_cancelled(page):
    page.by("#new-task").click()
    page.send(" ".join(f"w{i}" for i in range(60)))
    page.until("the first chunks", lambda: "w1" in page.artifact())
    page.until("the cancel button", lambda: page.by("#cancel-task").is_enabled())
    page.by("#cancel-task").click()
    page.until("the task canceled", lambda: page.state() == "canceled")
    assert "w59" not in page.artifact()
    page.shot("canceled")


def test_tasks_are_listed_and_one_opened(page):
    page.tab("tasks")
    page.by("#list-form button[type=submit]").click()
    page.until("the task list", lambda: len(page.rows()) >= 3)
    states = {row[1] for row in page.rows()}
    assert {"COMPLETED", "CANCELED"} <= states, page.rows()
    page.by("#filter-status").send_keys("TASK_STATE_CANCELED")
    page.by("#list-form button[type=submit]").click()
    page.until("the canceled ones only", lambda: {row[1] for row in page.rows()} == {"CANCELED"})
    # Paging: two at a time, the next page holds the others.
    page.by("#filter-status").send_keys("any")
    page.by("#page-size").clear()
    page.by("#page-size").send_keys("2")
    page.by("#list-form button[type=submit]").click()
    page.until("a page of two", lambda: len(page.rows()) == 2 and page.by("#next-page").is_enabled())
    first = [row[0] for row in page.rows()]
    page.by("#next-page").click()
    page.until("the next page", lambda: [row[0] for row in page.rows()] != first, seconds=10)
    second = [row[0] for row in page.rows()]
    assert second and not set(first) & set(second), (first, second)
    page.by("#filter-status").send_keys("TASK_STATE_CANCELED")
    page.by("#page-size").clear()
    page.by("#page-size").send_keys("20")
    page.by("#list-form button[type=submit]").click()
    page.until("the canceled ones again", lambda: {row[1] for row in page.rows()} == {"CANCELED"})
    page.all("#tasks tbody tr")[0].click()
    page.until("the task's detail", lambda: page.by("#task-detail").is_displayed() and "CANCELED" in page.text("#task-title"))
    assert "w0" in page.text("#task-history")
    page.shot("tasks")


def test_a_signed_delivery_reaches_the_catcher_and_is_verified(page):
    page.tab("chat")
    page.by("#new-task").click()
    page.send("")
    page.until("the agent's question", lambda: page.state() == "input required")
    page.tab("push")
    page.by("#new-catcher").click()
    page.until("the catcher's URL", lambda: "/playground/hooks/" in page.text("#catcher-url"))
    page.by("#push-token").send_keys("secret-token-1")
    page.by("#register").click()
    page.until("the registration", lambda: page.text("#push-state").startswith("registered"))
    page.tab("chat")
    page.send("push me")
    page.until("the answered task completing", lambda: page.state() == "completed")
    page.tab("push")
    page.until("the deliveries up to the completion",
               lambda: any("TASK_STATE_COMPLETED" in d.text for d in page.all("#deliveries li")))
    deliveries = page.all("#deliveries li")
    assert len(deliveries) >= 4, [d.text for d in deliveries]  # working, the artifact and its chunks, completed
    for d in deliveries:
        assert "signature verified (es256)" in d.text, d.text
        assert "token secret-token-1" in d.text, d.text
    page.shot("push-deliveries")


def test_every_call_is_in_the_console_and_copyable(page):
    page.tab("console")
    calls = page.all("#console li")
    assert len(calls) >= 6
    assert any("SendStreamingMessage" in c.text for c in calls)
    buttons = [b.text for b in page.all("#console li button")]
    assert "Copy as curl" in buttons and "Copy as a2a" in buttons
    page.shot("console")
    # The copied lines run: the ListTasks call as curl, and as the a2a command line.
    listed = [c for c in calls if '"ListTasks"' in c.text]
    assert listed, [c.text[:80] for c in calls]
    copies = {b.text: b.get_attribute("data-copy") for b in listed[0].find_elements(By.CSS_SELECTOR, "button")}
    out = subprocess.run(["bash", "-c", copies["Copy as curl"]], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and '"tasks"' in out.stdout, (copies["Copy as curl"], out.stdout, out.stderr)
    cli = copies["Copy as a2a"].split(" ", 1)[1]
    out = subprocess.run(["bash", "-c", f'"$A2A_BIN" --json {cli}'], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "A2A_BIN": required("A2A_BIN")})
    assert out.returncode == 0 and '"id"' in out.stdout, (cli, out.stdout, out.stderr)


def test_a_stream_resumes_after_a_reload(page, host):
    page.tab("chat")
    page.by("#new-task").click()
    page.send(" ".join(f"r{i}" for i in range(16)))
    page.until("the first chunks", lambda: "r2" in page.artifact())
    page.d.refresh()
    page.until("the card after the reload", lambda: page.by("#card-report").is_displayed())
    page.tab("chat")
    page.until("the resume button", lambda: page.by("#resubscribe").is_displayed())
    page.by("#resubscribe").click()
    page.until("the resumed stream to the end", lambda: page.state() == "completed")
    text = page.artifact()
    assert text.endswith("r15"), text
    # After Last-Event-ID: only the events not seen before the reload, so not the artifact's start.
    assert not text.startswith("You said:"), text
    page.shot("resumed")


def test_another_agent_through_the_relay(page, sdk_agent):
    box = page.by("#agent-url")
    box.clear()
    box.send_keys(sdk_agent)
    page.by("#connect-button").click()
    page.until("the other agent's card", lambda: page.text("#card-state").startswith(f"Card read from {sdk_agent}"))
    # The a2a-sdk 1.x server serves a 1.0 card only: a 0.3 client would miss its url and protocolVersion.
    assert page.text("#card-v1") == "1.0: complete"
    assert page.text("#card-v03") == "0.3: 2 problem(s)"
    assert "0.3: $.url: is required" in page.text("#card-problems")
    page.tab("chat")
    page.by("#new-task").click()
    page.send("slow one two three")
    page.until("the other agent's stream to the end", lambda: page.state() == "completed")
    assert page.artifact().split() == ["one", "two", "three"]
    page.shot("other-agent")


def test_the_relay_refuses_private_and_link_local_addresses(page, host):
    box = page.by("#agent-url")
    box.clear()
    box.send_keys("http://169.254.169.254/")
    page.by("#connect-button").click()
    page.tab("card")
    page.until("the refusal", lambda: "not allowed" in page.text("#card-state"))
    page.shot("relay-refused")
    for url in ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://192.168.1.1/", "http://[fe80::1]/"]:
        r = httpx.post(f"{host}/playground/api/relay", json={"url": url, "method": "GET"}, timeout=10)
        assert r.status_code == 400, (url, r.status_code, r.text)
        assert r.headers["x-playground-relay"] == "refused"
        assert r.json()["error"]["details"][0]["metadata"]["field"] == "url"


def test_another_site_cannot_use_the_relay(host):
    """Cross-site request forgery: a page elsewhere can make a visitor's browser post a form or a
    text/plain body, with its own Origin; the APIs that act take neither."""
    call = {"url": f"{host}/.well-known/agent-card.json", "method": "GET"}
    r = httpx.post(f"{host}/playground/api/relay", content=json.dumps(call), headers={"content-type": "text/plain"}, timeout=10)
    assert r.status_code == 415, r.text
    r = httpx.post(f"{host}/playground/api/relay", json=call, headers={"origin": "http://evil.example"}, timeout=10)
    assert (r.status_code, r.json()["error"]["status"]) == (403, "PERMISSION_DENIED"), r.text
    r = httpx.post(f"{host}/playground/api/catchers", json={}, headers={"origin": "null"}, timeout=10)
    assert r.status_code == 403, r.text
    # The page's own origin (and no Origin at all, as from curl) is served.
    r = httpx.post(f"{host}/playground/api/relay", json=call, headers={"origin": host}, timeout=10)
    assert r.status_code == 200 and r.json()["name"], r.text


def test_the_page_fits_a_phone(page, host):
    page.d.set_window_size(390, 844)
    try:
        page.d.get(f"{host}/playground/")
        page.until("the card report", lambda: page.by("#card-report").is_displayed())
        width = page.d.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], f"the page scrolls sideways at phone width: {width}"
        page.shot("phone")
        # Dark by the system setting.
        background = "return getComputedStyle(document.body).backgroundColor"
        light = page.d.execute_script(background)
        page.d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        dark = page.d.execute_script(background)
        assert light == "rgb(255, 255, 255)" and dark == "rgb(13, 17, 23)", (light, dark)
        page.shot("phone-dark")
    finally:
        page.d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        page.d.set_window_size(1280, 800)


def test_the_http_json_binding_streams_too(page, host):
    page.d.get(f"{host}/playground/")
    page.until("the card report", lambda: page.by("#card-report").is_displayed())
    page.tab("chat")
    page.by("#binding").send_keys("HTTP+JSON")
    assert page.by("#binding").get_attribute("value") == "rest"
    page.send("over rest now")
    page.until("the task completing over HTTP+JSON", lambda: page.state() == "completed")
    assert page.artifact() == "You said: over rest now"
    page.tab("console")
    assert "/message:stream" in page.text("#console li")
    page.shot("http-json")


def test_an_api_key_typed_in_the_page_reaches_a_host_that_requires_it(browser, agent, shots):
    key = "k-" + os.urandom(8).hex()
    log_path = shots / "a2a-local-api-key.log"
    with open(log_path, "w") as log:
        base, proc = a2a_local(["--agent-url", agent, "--api-keys", f"alice:{key}"], log=log)
        try:
            p = Page(browser, shots)
            browser.get(f"{base}/playground/")
            p.until("the request for credentials", lambda: "requires credentials" in p.text("#card-state"))
            assert p.by("#credentials").get_attribute("open") is not None
            p.by("#api-key").send_keys(key + "-wrong")
            p.by("#connect-button").click()
            p.until("the refusal of a wrong key", lambda: "requires credentials" in p.text("#card-state"))
            p.by("#api-key").clear()
            p.by("#api-key").send_keys(key)
            assert p.text("#credentials-state") == "(X-API-Key)"
            p.by("#connect-button").click()
            p.until("the card report", lambda: p.by("#card-report").is_displayed())
            p.tab("chat")
            p.send("with the key")
            p.until("the task completing", lambda: p.state() == "completed")
            p.shot("api-key")
        finally:
            stop(proc)
    assert key not in log_path.read_text(), "the key was logged"


def test_files_and_data_parts_are_rendered(browser, shots):
    port = free_port()
    agent = subprocess.Popen([sys.executable, str(Path(__file__).parent / "parts_agent.py"), str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base, proc = a2a_local(["--agent-url", f"http://127.0.0.1:{port}/"])
    try:
        p = Page(browser, shots)
        browser.get(f"{base}/playground/")
        p.until("the card report", lambda: p.by("#card-report").is_displayed())
        p.tab("chat")
        p.send("show me parts")
        p.until("the task completing", lambda: p.state() == "completed")
        links = {a.text: a for a in p.all("#transcript li.agent .artifact a")}
        by_bytes = links["📎 hello.txt (text/plain)"]
        assert by_bytes.get_attribute("download") == "hello.txt"
        assert by_bytes.get_attribute("href").startswith("data:text/plain;base64,aGVsbG8sIGZpbGUK")
        assert links["📎 report.pdf (application/pdf)"].get_attribute("href") == "https://example.com/report.pdf"
        data = p.by("#transcript li.agent .artifact pre").text
        assert '"answer": 42' in data and '"items"' in data, data
        assert "three parts follow" in p.artifact()
        p.shot("parts")
    finally:
        stop(proc, agent)


class _StagePrefix(http.server.BaseHTTPRequestHandler):
    """Serves the host under /stage, as API Gateway's REST API serves a stage: the prefix is taken
    off before the host sees the path, and a path outside it is refused. Streams pass through."""

    upstream = ("127.0.0.1", 0)
    seen = []  # the paths asked, as they came

    def _forward(self):
        self.seen.append(self.path)
        if not self.path.startswith("/stage/") and self.path != "/stage":
            self.send_error(403, "outside the stage")
            return
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        skip = {"content-length", "connection", "transfer-encoding"}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
        conn = http.client.HTTPConnection(*self.upstream, timeout=WAIT)
        conn.request(self.command, self.path[len("/stage"):] or "/", body=body or None, headers=headers)
        answer = conn.getresponse()
        self.send_response(answer.status)
        for k, v in answer.getheaders():
            if k.lower() not in skip:
                self.send_header(k, v)
        self.send_header("connection", "close")
        self.end_headers()
        while chunk := answer.read1(65536):
            self.wfile.write(chunk)
            self.wfile.flush()
        conn.close()

    do_GET = do_POST = do_HEAD = _forward

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def staged(host):
    port = int(host.rsplit(":", 1)[1])
    handler = type("Handler", (_StagePrefix,), {"upstream": ("127.0.0.1", port), "seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    server.shutdown()


def test_the_page_works_under_a_path_prefix(browser, staged, shots):
    """Behind a path prefix (an API Gateway stage) the page finds its API, the agent that serves it,
    that agent's card and the keys that sign it under the prefix, and chats."""
    staged, seen = staged
    p = Page(browser, shots)
    browser.get(f"{staged}/stage/playground")
    p.until("the page, redirected under the prefix", lambda: browser.current_url == f"{staged}/stage/playground/")
    assert p.by("#agent-url").get_attribute("value") == f"{staged}/stage"
    p.until("the card report", lambda: p.by("#card-report").is_displayed())
    assert p.text("#card-v1") == "1.0: complete"
    p.until("the signature check", lambda: p.text("#card-signature").startswith("signature verified"))
    assert "es256" in p.text("#card-signature")
    # The card and its keys were read under the prefix (the card names this host's own URL, so the
    # chat itself may go there directly).
    assert {"/stage/.well-known/agent-card.json", "/stage/.well-known/jwks.json"} <= set(seen), seen
    # Nothing of the page's own reached outside the prefix (the browser asks for /favicon.ico itself).
    assert not [path for path in seen if not path.startswith("/stage") and path != "/favicon.ico"], seen
    p.tab("chat")
    p.send("under a prefix")
    p.until("the task completing", lambda: p.state() == "completed")
    assert p.artifact() == "You said: under a prefix"
    p.shot("under-a-prefix")
