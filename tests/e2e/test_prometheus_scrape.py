"""A real Prometheus scrapes a separate process serving ``neurons.metrics`` and sees the rounds counter grow.

The scraped process stands in for the validator until it lands; the harness (``tests/e2e/prometheus.py``)
is the one the validator e2e test uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.prometheus import Prometheus, free_port

# Serves render_latest() on /metrics and completes a "round" every 0.3 s, in multiprocess mode
# (PROMETHEUS_MULTIPROC_DIR set), as a validator with several uvicorn workers runs.
_TARGET = """
import sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from neurons import metrics

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body, content_type = metrics.render_latest()
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", content_type)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

def rounds():
    while True:
        metrics.ROUNDS.labels(result="ok").inc()
        time.sleep(0.3)

threading.Thread(target=rounds, daemon=True).start()
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


@pytest.fixture
def target(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    multiproc = tmp_path / "metrics"
    multiproc.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(multiproc)}
    process = subprocess.Popen([sys.executable, "-c", _TARGET, str(port)], env=env)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def prometheus(tmp_path: Path, target: str) -> Iterator[Prometheus]:
    try:
        server = Prometheus(tmp_path / "prometheus", {"arena-validator": target})
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _wait_for(prometheus: Prometheus, expr: str, timeout: float = 30.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = prometheus.value(expr)
        if value is not None:
            return value
        time.sleep(0.5)
    raise AssertionError(f"{expr} returned nothing within {timeout}s")


def test_prometheus_sees_the_rounds_counter_increase(prometheus: Prometheus) -> None:
    assert _wait_for(prometheus, 'up{job="arena-validator"} == 1') == 1
    first = _wait_for(prometheus, 'sum(arena_rounds_total{job="arena-validator"})')
    time.sleep(2.5)  # at least two more scrapes at 1 s
    second = _wait_for(prometheus, 'sum(arena_rounds_total{job="arena-validator"})')
    assert second > first
    assert _wait_for(prometheus, 'sum(increase(arena_rounds_total{job="arena-validator"}[10s]))') > 0
