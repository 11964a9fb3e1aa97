"""What commands print on stderr: an error is one unwrapped line, whatever its length or the width."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from neurons.cli import app

runner = CliRunner()


def _long_path(tmp_path: Path) -> Path:
    # Longer than any terminal is wide, so a console that wraps at a width must break it.
    return tmp_path / ("a-directory-with-a-long-name-" * 6) / "missing-tasks.jsonl"


@pytest.mark.parametrize("columns", ["40", "80", "400"])
def test_an_error_about_a_long_path_is_one_line(tmp_path: Path, columns: str) -> None:
    missing = _long_path(tmp_path)
    result = runner.invoke(app, ["tasks", "audit", str(missing)], env={"COLUMNS": columns})
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(missing) in lines[0], result.stderr


def test_every_command_group_reports_errors_the_same_way(tmp_path: Path) -> None:
    missing = _long_path(tmp_path)
    commands = [
        ["tasks", "audit", str(missing)],
        ["curate", "--db", f"sqlite:///{missing}", "--out", str(tmp_path / "out")],
        ["catalog", "build", "--catalog", str(missing), "--index", str(tmp_path / "index")],
        ["eval", "compare", str(missing), str(missing)],
    ]
    for args in commands:
        result = runner.invoke(app, args, env={"COLUMNS": "60"})
        assert result.exit_code == 2, (args, result.output)
        first = result.stderr.splitlines()[0]
        assert first.startswith("error: ") and str(missing) in first, (args, result.stderr)
