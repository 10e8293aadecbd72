"""What the suites of tests/cli share: tests/support.py on the path, the anyio backend, and agents
built with the official SDKs started on 127.0.0.1."""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from support import free_port, stop, wait_ready  # noqa: E402


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


def spawn_agent(python, script, *args, stdout=None, env=None):
    """`python script PORT args...` on a free port, once its card answers: (base URL, process)."""
    port = free_port()
    proc = subprocess.Popen([python, str(HERE / script), str(port), *args], stdout=stdout, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_ready(f"{url}/.well-known/agent-card.json", [proc], script, 30)
    return url, proc


@pytest.fixture(scope="module")
def sdk():
    """An agent built with the official a2a-sdk 1.x server (sdk_agent.py), gRPC too."""
    url, proc = spawn_agent(sys.executable, "sdk_agent.py", "--grpc", str(free_port()))
    yield url
    stop(proc)
