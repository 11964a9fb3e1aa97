"""`arena` server processes on loopback for the CLI tests: a free port, a health wait, a clean stop."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ARENA = [sys.executable, "-c", "from neurons.cli import main; main()"]


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> dict[str, object]:
    """Poll ``url``/health until it answers 200; fail when the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            response = httpx.get(f"{url}/health", timeout=1.0)
            if response.status_code == 200:
                body: dict[str, object] = response.json()
                return body
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("server did not become healthy")


@contextmanager
def serving(args: list[str], *, port: int) -> Iterator[str]:
    """Run ``arena <args>`` (which must listen on ``port``) until the block ends; yield its URL."""
    proc = subprocess.Popen([*ARENA, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def env_serve(index: Path, world: Path, port: int, *extra: str) -> list[str]:
    """The arguments of ``arena env serve`` over ``world`` on ``port``."""
    return ["env", "serve", "--index", str(index), "--world", str(world), "--port", str(port), *extra]
