"""Prometheus config and alert rules: promtool accepts them, the unit tests pass, names are real."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import DEPLOY
from tests.deploy.promql import metric_names

PROMETHEUS = DEPLOY / "prometheus"
RULE_FILES = [PROMETHEUS / "alerts.yml", PROMETHEUS / "alerts-miner.yml"]
# Series that are not the app's: Prometheus's own, and node-exporter's for the disk alerts.
OUTSIDE_NAMES = {
    "up",
    "node_filesystem_avail_bytes",
    "node_filesystem_size_bytes",
    "node_filesystem_readonly",
}


def _promtool(promtool: str, *args: str | Path, cwd: Path = PROMETHEUS) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def _rules(path: Path) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(path.read_text())["groups"] for rule in group["rules"]]


@pytest.mark.parametrize("config", ["prometheus.yml", "miner.yml"])
def test_config_passes_promtool_check_config(promtool: str, config: str) -> None:
    done = _promtool(promtool, "check", "config", config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_rules_pass_promtool_check_rules(promtool: str, path: Path) -> None:
    done = _promtool(promtool, "check", "rules", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(_rules(path))} rules found" in done.stdout


def test_promtool_check_rules_rejects_a_broken_expression(promtool: str, tmp_path: Path) -> None:
    # The check above means something only if promtool refuses bad PromQL.
    bad = tmp_path / "bad.yml"
    bad.write_text("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: sum(rate(x[5m])\n")
    assert _promtool(promtool, "check", "rules", bad).returncode != 0


@pytest.mark.parametrize("tests", ["alerts_test.yml", "alerts_miner_test.yml"])
def test_alert_unit_tests_pass(promtool: str, tests: str) -> None:
    done = _promtool(promtool, "test", "rules", tests, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_alerts_reference_only_exported_metrics(path: Path, exported_metric_names: frozenset[str]) -> None:
    unknown = {
        rule["alert"]: sorted(metric_names(rule["expr"]) - exported_metric_names - OUTSIDE_NAMES)
        for rule in _rules(path)
    }
    assert not {alert: names for alert, names in unknown.items() if names}


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_every_alert_has_severity_summary_and_runbook(path: Path) -> None:
    for rule in _rules(path):
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], rule["alert"]
        assert annotations["runbook"].startswith("docs/operations.md#"), rule["alert"]


def test_each_config_loads_the_rules_of_its_stack() -> None:
    validator = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    miner = yaml.safe_load((PROMETHEUS / "miner.yml").read_text())
    assert [r.split()[0] for r in validator["rule_files"]] == ["alerts.yml"]
    assert [r.split()[0] for r in miner["rule_files"]] == ["alerts-miner.yml"]
    jobs = {job["job_name"] for job in validator["scrape_configs"]}
    assert {"arena-validator", "node"} <= jobs  # the jobs the validator alerts select
    assert "arena-miner" in {job["job_name"] for job in miner["scrape_configs"]}
