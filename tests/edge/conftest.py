"""Starts the edge end to end on 127.0.0.1: `a2a-local` (the origin, publishing every event to the
edge) and `wrangler dev` running the built worker with its Durable Object. Needs $A2A_LOCAL_BIN and
`wrangler` on PATH (scripts/test sources the edge toolchain's env)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "observability"))
from otlp import Receiver  # noqa: E402
from support import data_dir_args, free_port, wait_ready  # noqa: E402

WORKER = ROOT / "functions" / "edge-worker"
KEYS = {"alice": "key-alice", "bob": "key-bob"}
SECRET = "edge-test-secret"
# The hub forgets a finished task this long after its end (short here, so a test can see it).
EVENT_TTL_SECS = 6
CARD = '{"name": "Edge test agent", "description": "Served from the edge."}'


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def otlp():
    """The OTLP receiver the origin exports its spans to (tests/observability/otlp.py)."""
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="session")
def edge(otlp):
    """Yields (edge base URL, origin base URL). The origin exports its traces to `otlp`."""
    binary = os.environ.get("A2A_LOCAL_BIN")
    if not binary:
        pytest.fail("A2A_LOCAL_BIN is not set (run through scripts/test)")
    if not shutil.which("wrangler") or not (WORKER / "build" / "index.js").exists():
        pytest.fail("wrangler or the built worker is missing (run scripts/edge-toolchain and scripts/edge-build)")
    logs = Path(os.environ.get("A2A_TEST_LOGS", tempfile.mkdtemp()))
    logs.mkdir(parents=True, exist_ok=True)
    origin_port, edge_port = free_port(), free_port()
    origin, base = f"http://127.0.0.1:{origin_port}", f"http://127.0.0.1:{edge_port}"
    state = tempfile.mkdtemp(prefix="a2a-edge-state-")
    local = subprocess.Popen(
        [
            binary,
            "--addr", f"127.0.0.1:{origin_port}",
            "--agent", "conformance",
            "--api-keys", ",".join(f"{p}:{k}" for p, k in KEYS.items()),
            "--public-url", base,
            "--edge-url", base,
            "--edge-publish-secret", SECRET,
            *data_dir_args(),
        ],
        stdout=open(logs / "edge-origin.log", "w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100",
             "OTEL_SERVICE_NAME": "edge-origin"},
    )
    wrangler = subprocess.Popen(
        [
            "wrangler", "dev",
            "--config", str(ROOT / "infra" / "wrangler.toml"),
            "--ip", "127.0.0.1",
            "--port", str(edge_port),
            "--inspector-port", str(free_port()),
            "--persist-to", state,
            "--show-interactive-dev-session=false",
            "--var", f"ORIGIN_URL:{origin}",
            "--var", f"PUBLISH_SECRET:{SECRET}",
            "--var", f"AGENT_CARD:{CARD}",
            "--var", "KEEP_ALIVE_SECS:1",
            "--var", f"EVENT_TTL_SECS:{EVENT_TTL_SECS}",
        ],
        cwd=WORKER,
        stdout=open(logs / "edge-wrangler.log", "w"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "CI": "1", "WRANGLER_SEND_METRICS": "false"},
    )
    try:
        wait_ready(f"{origin}/.well-known/agent-card.json", [local], "a2a-local", 10)
        wait_ready(f"{base}/.well-known/agent-card.json", [wrangler, local], "wrangler dev", 90)
        yield base, origin
    finally:
        for p in (wrangler, local):
            p.terminate()
        for p in (wrangler, local):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(state, ignore_errors=True)
