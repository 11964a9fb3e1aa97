"""A real Prometheus scrapes a running local network's validator and sees the rounds counter grow."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.network import LocalNetwork, Process, start_running_network, wait_for_rounds
from tests.e2e.prometheus import Prometheus


@pytest.fixture
def network(tmp_path: Path) -> Iterator[tuple[LocalNetwork, Process]]:
    # Multiprocess mode, as the compose stack and the systemd unit run the validator.
    (tmp_path / "metrics").mkdir()
    net, validator, _ = start_running_network(
        tmp_path / "net", env={"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    )
    try:
        yield net, validator
    finally:
        net.stop()


@pytest.fixture
def prometheus(tmp_path: Path, network: tuple[LocalNetwork, Process]) -> Iterator[Prometheus]:
    _, validator = network
    try:
        server = Prometheus(tmp_path / "prometheus", {"arena-validator": f"127.0.0.1:{validator.port}"})
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _wait_for(prometheus: Prometheus, expr: str, timeout: float = 60.0, above: float | None = None) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = prometheus.value(expr)
        if value is not None and (above is None or value > above):
            return value
        time.sleep(0.5)
    raise AssertionError(
        f"{expr} returned nothing{'' if above is None else f' above {above}'} within {timeout}s"
    )


def test_prometheus_sees_the_validators_rounds_counter_increase(
    prometheus: Prometheus, network: tuple[LocalNetwork, Process]
) -> None:
    _, validator = network
    wait_for_rounds(validator, 1)
    assert _wait_for(prometheus, 'up{job="arena-validator"} == 1') == 1
    first = _wait_for(prometheus, 'sum(arena_rounds_total{job="arena-validator"})')
    second = _wait_for(prometheus, 'sum(arena_rounds_total{job="arena-validator"})', above=first)
    assert second > first
    assert _wait_for(prometheus, 'sum(increase(arena_rounds_total{job="arena-validator"}[30s]))') > 0
    assert _wait_for(prometheus, 'sum(arena_episodes_total{job="arena-validator",end="completed"})') > 0
    assert _wait_for(prometheus, 'arena_build_info{job="arena-validator",role="validator"}') == 1
