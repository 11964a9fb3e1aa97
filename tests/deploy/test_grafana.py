"""Grafana dashboards and provisioning: generated, parseable PromQL, only exported names, wired to compose."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import DEPLOY
from tests.deploy.promql import metric_names, plain_promql

GRAFANA = DEPLOY / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))
EXPECTED = {"arena-validator-overview", "arena-miners", "arena-judge", "arena-toolserver", "arena-chain"}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("arena_dashboards", GRAFANA / "dashboards.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(path: Path) -> dict[str, Any]:
    board: dict[str, Any] = json.loads(path.read_text())
    return board


def _panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def _expressions() -> list[tuple[str, str]]:
    return [
        (f"{path.stem}/{panel['id']}/{n}", target["expr"])
        for path in DASHBOARDS
        for panel in _panels(_load(path))
        for n, target in enumerate(panel.get("targets", []))
    ]


def test_the_five_dashboards_exist() -> None:
    assert {_load(path)["uid"] for path in DASHBOARDS} == EXPECTED
    assert all(path.stem == _load(path)["uid"] for path in DASHBOARDS)


def test_committed_dashboards_match_the_generator() -> None:
    generator = _generator()
    built = generator.build()
    assert sorted(built) == [path.name for path in DASHBOARDS]
    for path in DASHBOARDS:
        assert path.read_text() == generator.render(built[path.name]), (
            f"{path.name}: run python {GRAFANA}/dashboards.py"
        )


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_dashboard_structure(path: Path) -> None:
    board = _load(path)
    panels = list(_panels(board))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    assert sum(1 for p in panels if p["type"] != "row") >= 5
    for panel in panels:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        assert panel["description"], panel["title"]
        assert panel["datasource"]["uid"] == "arena-prometheus"
    # No two panels overlap on the grid.
    cells = [
        (x, y)
        for p in panels
        for x in range(p["gridPos"]["x"], p["gridPos"]["x"] + p["gridPos"]["w"])
        for y in range(p["gridPos"]["y"], p["gridPos"]["y"] + p["gridPos"]["h"])
    ]
    assert len(cells) == len(set(cells))


def test_every_panel_expression_parses(promtool: str, tmp_path: Path) -> None:
    # promtool has no bare "parse" command: each expression becomes a recording rule, which
    # `promtool check rules` parses with Prometheus's own PromQL parser.
    expressions = _expressions()
    rules = [
        {"record": f"panel:expr_{n}", "expr": plain_promql(expr)} for n, (_, expr) in enumerate(expressions)
    ]
    path = tmp_path / "panels.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    done = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(expressions)} rules found" in done.stdout


def test_panels_reference_only_exported_metrics(exported_metric_names: frozenset[str]) -> None:
    unknown = {
        where: sorted(metric_names(plain_promql(expr)) - exported_metric_names - {"up"})
        for where, expr in _expressions()
    }
    assert not {where: names for where, names in unknown.items() if names}


def test_every_arena_metric_is_on_some_dashboard(exported_metric_names: frozenset[str]) -> None:
    used = {name for _, expr in _expressions() for name in metric_names(plain_promql(expr))}
    families = {name.removesuffix("_bucket") for name in used}
    arena = {
        name
        for name in exported_metric_names
        if name.startswith("arena_") and not name.endswith(("_created", "_sum", "_count", "_bucket"))
    }
    histograms = {name.removesuffix("_bucket") for name in exported_metric_names if name.endswith("_bucket")}
    missing = sorted((arena | histograms) - families - used)
    assert not missing


def test_provisioning_points_at_the_mounted_dashboards_and_prometheus() -> None:
    provider = yaml.safe_load((GRAFANA / "provisioning/dashboards/arena.yml").read_text())["providers"][0]
    datasource = yaml.safe_load((GRAFANA / "provisioning/datasources/prometheus.yml").read_text())[
        "datasources"
    ][0]
    compose = yaml.safe_load((DEPLOY / "validator/compose.yml").read_text())
    grafana = compose["services"]["grafana"]
    mounts = dict(volume.split(":")[:2] for volume in grafana["volumes"])
    assert mounts["../grafana/dashboards"] == provider["options"]["path"]
    assert mounts["../grafana/provisioning"] == "/etc/grafana/provisioning"
    assert datasource["uid"] == "arena-prometheus"
    assert datasource["url"] == "http://prometheus:9090" and "prometheus" in compose["services"]
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{provider['options']['path']}/arena-validator-overview.json"
