"""docs/operations.md keeps up with the metric catalogue and the alert rules."""

from __future__ import annotations

import re

import yaml

from tests.deploy.conftest import DEPLOY, ROOT

DOC = (ROOT / "docs" / "operations.md").read_text()


def _table_rows() -> dict[str, list[str]]:
    rows = re.findall(r"^\| `(arena_[a-z0-9_]+)` \| (\w+) \|([^|]*)\|", DOC, re.M)
    return {name: [kind, labels.strip()] for name, kind, labels in rows}


def test_metrics_table_lists_every_metric_with_its_type_and_labels() -> None:
    from prometheus_client.metrics import MetricWrapperBase

    from neurons import metrics

    expected = {}
    for metric in vars(metrics).values():
        if isinstance(metric, MetricWrapperBase):
            name = f"{metric._name}_total" if metric._type == "counter" else metric._name
            expected[name] = [metric._type, ", ".join(metric._labelnames)]
    assert _table_rows() == expected


def test_every_alert_runbook_anchor_has_a_section() -> None:
    headings = {f"docs/operations.md#{h.lower()}" for h in re.findall(r"^### (\w+)$", DOC, re.M)}
    for path in (DEPLOY / "prometheus").glob("alerts*.yml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                assert rule["annotations"]["runbook"] in headings, rule["alert"]
                assert rule["alert"] in DOC, rule["alert"]
