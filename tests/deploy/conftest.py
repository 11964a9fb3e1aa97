"""Fixtures for the deploy/ checks: the deploy folder, the checker tools, and the exported metric names."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.network import start_running_network, wait_for_rounds

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def tool(name: str) -> str:
    """Path of a checker binary; skips when absent (fails under CI, where `make tools` installs it)."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} not found: run `make tools` (apt-get install prometheus docker-compose)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def promtool() -> str:
    """The promtool binary (Debian package prometheus)."""
    return tool("promtool")


@pytest.fixture(scope="session")
def docker_compose() -> str:
    """The docker-compose binary (Debian package docker-compose)."""
    return tool("docker-compose")


@pytest.fixture(scope="session")
def exposition(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What a running local network serves on /metrics: its validator's, then its solving miner's.

    The one source of metric names for every deploy check: a validator and two miners run as
    real processes (``tests/e2e/network.py``) until the validator has completed a round.
    """
    net, validator, miners = start_running_network(tmp_path_factory.mktemp("metrics-net"))
    try:
        wait_for_rounds(validator, 1)
        return "".join(httpx.get(f"{p.base}/metrics", timeout=10.0).text for p in (validator, miners[0]))
    finally:
        net.stop()


@pytest.fixture(scope="session")
def exported_metric_names(exposition: str) -> frozenset[str]:
    """Every series name the app exports, as Prometheus stores it (with _total, _bucket, _sum, _count...).

    A metric the process declares (HELP and TYPE lines) but has not observed yet (no error, no
    curation run) counts too, under the series names its type gives it.
    """
    names: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        names.update(sample.name for sample in family.samples)
        if not family.samples:
            names.update(f"{family.name}{suffix}" for suffix in _SERIES.get(family.type, ("",)))
    return frozenset(names)


_SERIES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}
