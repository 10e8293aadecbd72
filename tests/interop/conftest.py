"""Starts `a2a-local` (the binary in $A2A_LOCAL_BIN) on a free 127.0.0.1 port for the session, with
the gRPC binding on a second one (the card declares it)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from support import data_dir_args, free_port  # noqa: E402

KEYS = {"alice": "key-alice", "bob": "key-bob"}


@pytest.fixture(scope="session")
def anyio_backend():
    return "asyncio"


def start_local(binary, port, args):
    """Starts a2a-local on 127.0.0.1:`port` with `args`; waits (bounded) for its card."""
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([binary, "--addr", f"127.0.0.1:{port}", *args, *data_dir_args(args)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for _ in range(100):  # bounded: 100 x 0.1 s
        try:
            if httpx.get(f"{base}/.well-known/agent-card.json", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"a2a-local exited: {proc.stdout.read().decode()}")
        time.sleep(0.1)
    stop_local(proc)
    raise RuntimeError("a2a-local did not start in 10 s")


def stop_local(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def server():
    binary = os.environ.get("A2A_LOCAL_BIN")
    if not binary:
        pytest.fail("A2A_LOCAL_BIN is not set (run through scripts/test)")
    extra = os.environ.get("A2A_LOCAL_ARGS", "").split()
    proc, base = start_local(binary, free_port(), [
        "--grpc-addr", f"127.0.0.1:{free_port()}",
        "--agent", "conformance",
        "--api-keys", ",".join(f"{p}:{k}" for p, k in KEYS.items()),
        "--extended-card", str(HERE / "extended-card.json"),
        *extra,
    ])
    try:
        yield base
    finally:
        stop_local(proc)
