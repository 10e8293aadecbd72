"""Helpers shared by the Python suites (tests/interop, tests/edge)."""

import socket
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, procs, what, seconds):
    """Polls `url` until it answers 200 (bounded: `seconds` x 10 tries); fails if a process exits."""
    for _ in range(seconds * 10):
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what} exited early (see its log)")
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start in {seconds} s")
