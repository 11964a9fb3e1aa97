"""`arena validator`: help, flags into settings, and exit code 2 on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from neurons.cli import app

pytestmark = pytest.mark.usefixtures("no_arena_env")


def test_help_shows_an_example() -> None:
    result = CliRunner().invoke(app, ["validator", "--help"])
    assert result.exit_code == 0
    assert "Example: arena validator" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["--network", "nowhere", "--netuid", "1"],
        ["--network", "finney"],  # no netuid
        ["--network", "local", "--netuid", "1"],  # no chain file
        ["--netuid", "1"],  # 0.0.0.0 on finney and no --toolserver-url: miners could not reach us
        [
            "--netuid",
            "1",
            "--toolserver-url",
            "http://203.0.113.1:8092",
            "--judge-url",
            "http://x/v1",
        ],  # no model
        ["--netuid", "1", "--toolserver-url", "ftp://203.0.113.1"],
        ["--netuid", "1", "--toolserver-url", "http://203.0.113.1:8092", "--tasks-per-round", "0"],
    ],
)
def test_bad_flags_exit_2(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["validator", *args])
    assert result.exit_code == 2
    assert "invalid validator settings" in result.output


def test_flags_reach_the_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def fake_main(overrides: dict[str, Any], *, once: bool, json_output: bool) -> None:
        seen.update(overrides=overrides, once=once, json=json_output)

    monkeypatch.setattr("neurons.validator.process.main", fake_main)
    monkeypatch.setenv("ARENA_JUDGE__MODEL", "judge")
    args = ["--network", "local", "--local-chain", "c.db", "--netuid", "2", "--judge-url", "http://j/v1"]
    args += ["--db-url", "sqlite:///x.db", "--upgrade-db", "--port", "9000", "--once", "--json"]
    args += ["--tasks-per-round", "3"]
    result = CliRunner().invoke(app, ["validator", *args])
    assert result.exit_code == 0, result.output
    assert seen["once"] and seen["json"]
    overrides = seen["overrides"]
    assert overrides["judge"] == {"base_url": "http://j/v1"} and overrides["db_upgrade"] is True
    assert (overrides["netuid"], overrides["port"], overrides["db_url"]) == (2, 9000, "sqlite:///x.db")
    assert overrides["round"] == {"tasks_per_round": 3}  # a section's flag lands in its section
    assert "host" not in overrides  # absent flags leave the environment in force


def test_a_missing_wallet_exits_2(tmp_path: Path) -> None:
    args = ["--netuid", "1", "--network", "local", "--local-chain", str(tmp_path / "chain.db")]
    args += ["--wallet-path", str(tmp_path / "nowhere"), "--data-dir", str(tmp_path / "data"), "--once"]
    result = CliRunner().invoke(app, ["validator", *args])
    assert result.exit_code == 2
    assert "no hotkey" in result.output
