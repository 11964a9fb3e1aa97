"""`arena world compile` and `arena world show`: a pack written, summarised, verified; tampering refused."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from neurons.cli import app

runner = CliRunner()


def test_compile_then_show_summarises_the_pack(world_base_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "world"
    compiled = runner.invoke(
        app, ["world", "compile", "--seed", "cli", "--base", str(world_base_dir), "--out", str(out), "--json"]
    )
    assert compiled.exit_code == 0, compiled.output
    # stdout alone: a log handler an earlier test left on stderr may add lines to ``output``.
    summary = json.loads(compiled.stdout)
    shown = runner.invoke(app, ["world", "show", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == {k: v for k, v in summary.items() if k not in ("out", "seconds")}
    assert summary["seed_hex"] == b"cli".hex() and summary["tasks"]["total"] > 0
    text = runner.invoke(app, ["world", "show", str(out)])
    assert text.exit_code == 0 and summary["world_id"] in text.output


def test_show_refuses_a_tampered_pack(world_base_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "world"
    assert (
        runner.invoke(
            app, ["world", "compile", "--seed", "cli", "--base", str(world_base_dir), "--out", str(out)]
        ).exit_code
        == 0
    )
    (out / "delta.json").write_text("{}\n")
    result = runner.invoke(app, ["world", "show", str(out)])
    assert result.exit_code == 2
    assert "delta.json" in result.output


def test_compile_reports_a_missing_base(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["world", "compile", "--seed", "x", "--base", str(tmp_path / "none"), "--out", str(tmp_path / "w")],
    )
    assert result.exit_code == 2 and "no search index" in result.output
