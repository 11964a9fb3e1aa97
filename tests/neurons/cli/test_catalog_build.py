import json
from pathlib import Path

from typer.testing import CliRunner

from arena.index import open_index
from neurons.cli import app

runner = CliRunner()


def test_catalog_build_writes_an_index_and_reports_json(tmp_path: Path, fixture_catalog_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "catalog",
            "build",
            "--catalog",
            str(fixture_catalog_path),
            "--index",
            str(tmp_path / "i"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["products"] == 20 and report["bad_rows"] == 0
    with open_index(tmp_path / "i") as index:
        assert index.catalog_version == report["catalog_version"]


def test_catalog_build_summarises_bad_rows(tmp_path: Path, fixture_catalog_path: Path) -> None:
    lines = fixture_catalog_path.read_text().splitlines()
    catalog = tmp_path / "c.jsonl"
    catalog.write_text("\n".join([*lines[:3], lines[0], "{oops"]) + "\n")
    result = runner.invoke(
        app, ["catalog", "build", "--catalog", str(catalog), "--index", str(tmp_path / "i")]
    )
    assert result.exit_code == 0, result.output
    assert "indexed 3 products" in result.stdout
    assert "2 bad rows skipped (1 duplicate ids)" in result.stdout


def test_catalog_build_rejects_bad_input_with_exit_2(tmp_path: Path, fixture_catalog_path: Path) -> None:
    missing = runner.invoke(
        app, ["catalog", "build", "--catalog", str(tmp_path / "no.jsonl"), "--index", "x"]
    )
    assert missing.exit_code == 2 and "not found" in missing.output
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "file").write_text("x")
    refused = runner.invoke(
        app, ["catalog", "build", "--catalog", str(fixture_catalog_path), "--index", str(occupied)]
    )
    assert refused.exit_code == 2 and "refusing" in refused.output


def test_catalog_build_help_has_an_example() -> None:
    result = runner.invoke(app, ["catalog", "build", "--help"])
    assert result.exit_code == 0 and "Example: arena catalog build" in result.output
