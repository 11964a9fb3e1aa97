"""Fixtures for the deploy/ checks: the deploy folder, the checker tools, and the exported metric names."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

# Touch every labelled metric once (with a placeholder label value) so that each one is rendered,
# then print what /metrics would serve. Runs in a clean process so this test run's registry stays
# untouched and no multiprocess directory is involved.
_RENDER = """
import sys
from prometheus_client.metrics import MetricWrapperBase
from neurons import metrics
for metric in vars(metrics).values():
    if isinstance(metric, MetricWrapperBase) and metric._labelnames:
        metric.labels(*["x"] * len(metric._labelnames))
sys.stdout.write(metrics.render_latest()[0].decode())
"""


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
def exposition() -> str:
    """The text /metrics serves. The one source of metric names for every deploy check.

    Today it is rendered from ``neurons.metrics`` with every labelled metric touched; once the
    validator process exists this becomes a scrape of a running validator (and miner).
    """
    env = {key: value for key, value in os.environ.items() if key != "PROMETHEUS_MULTIPROC_DIR"}
    done = subprocess.run(
        [sys.executable, "-c", _RENDER],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return done.stdout


@pytest.fixture(scope="session")
def exported_metric_names(exposition: str) -> frozenset[str]:
    """Every series name the app exports, as Prometheus stores it (with _total, _bucket, _sum, _count...)."""
    return frozenset(
        sample.name for family in text_string_to_metric_families(exposition) for sample in family.samples
    )
