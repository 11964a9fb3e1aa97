"""`arena curate`: the command over a real database file, its JSON summary, metrics and exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from datasets import Features, List, Value
from prometheus_client import REGISTRY
from typer.testing import CliRunner

import curation.formats
from curation.curate import Curation
from curation.formats import FORMATS, ExportRow, Format
from curation.stages.stage import MAIN
from neurons.cli import app
from storage.db import make_engine, make_sessionmaker, upgrade
from tests.curation.planted import GOLDEN_EVAL_SHARE, golden_population, store, task, trace

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["curate", *args])
    return result.exit_code, result.output


def database(path: Path, *, leak: bool = False) -> str:
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        if leak:
            # A train task shares its gold product with a protected held-out task: the split cannot
            # move a protected task, so the export is refused.
            a = task(1, cluster="lc-golden-0")
            b = task(2, cluster="lc-golden-6", gold="g00001", pool="never_touch")
            store(session, [a, b], [trace(1, a)])
        else:
            golden_population(session)
    engine.dispose()
    return url


def test_curate_writes_the_export_and_prints_the_funnel_as_json(tmp_path: Path) -> None:
    url = database(tmp_path / "arena.db")
    out = tmp_path / "export"
    code, output = run("--db", url, "--out", str(out), "--eval-share", str(GOLDEN_EVAL_SHARE), "--json")
    assert code == 0, output
    summary = json.loads(output)
    assert summary["stages"]["normalise"]["in"] == 11
    assert summary["audit"]["ok"] is True
    funnel = json.loads((out / "funnel.json").read_text())
    assert summary["exports"] == funnel["exports"]
    for fmt in ("sft", "kto", "dpo", "grpo"):
        lines = (out / f"{fmt}.jsonl").read_text().splitlines()
        assert len(lines) == summary["exports"][fmt]["train"]
    assert (out / "manifest.json").exists() and (out / "README.md").exists()
    seen = REGISTRY.get_sample_value("arena_curation_rows", {"stage": "normalise", "direction": "in"})
    assert seen == 11


def test_curate_options_reach_the_funnel(tmp_path: Path) -> None:
    url = database(tmp_path / "arena.db")
    out = tmp_path / "export"
    args = ["--db", url, "--out", str(out), "--format", "sft,kto", "--min-reasoning", "0.95"]
    code, output = run(*args, "--axis", "A,B", "--split-by", "none", "--json")
    assert code == 0, output
    summary = json.loads(output)
    assert set(summary["exports"]) == {"sft", "kto", "axis_b"}
    assert summary["stages"]["reasoning_gate"]["dropped"] == {"below_min_reasoning": 10}
    assert summary["splits"]["eval"]["traces"] == 0
    assert not (out / "dpo.jsonl").exists()


def test_curate_prints_a_table_without_json(tmp_path: Path) -> None:
    url = database(tmp_path / "arena.db")
    code, output = run("--db", url, "--out", str(tmp_path / "export"))
    assert code == 0, output
    assert "normalise" in output and "no_trajectory 1" in output and "wrote" in output


def test_bad_input_exits_2(tmp_path: Path) -> None:
    url = database(tmp_path / "arena.db")
    out = str(tmp_path / "export")
    for args, message in [
        (["--format", "sft,orpo"], "--format"),
        (["--unscored", "maybe"], "--unscored"),
        (["--split-by", "task"], "--split-by"),
        (["--axis", "Z"], "unknown axis label"),
    ]:
        code, output = run("--db", url, "--out", out, *args)
        assert code == 2 and message in output, (args, output)
    code, output = run("--db", "nonsense://", "--out", out)
    assert code == 2 and "--db" in output
    code, output = run("--db", f"sqlite:///{tmp_path / 'missing.db'}", "--out", out)
    assert code == 2 and "no database file" in output
    assert not (tmp_path / "missing.db").exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    code, output = run("--db", f"sqlite:///{empty}", "--out", out)
    assert code == 2 and "no schema version" in " ".join(output.split())


def test_a_leaking_split_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    url = database(tmp_path / "arena.db", leak=True)
    out = tmp_path / "export"
    code, output = run("--db", url, "--out", str(out), "--eval-share", str(GOLDEN_EVAL_SHARE))
    assert code == 1 and "split leaks" in output
    assert not out.exists()


# ------------------------------------------------------------------ a format added in a test only


def _answer_rows(curation: Curation) -> Iterator[ExportRow]:
    for row in curation.workspace.kept(MAIN):
        yield ExportRow(
            {"task_id": row.task_id, "answer": list(row.answer)},
            row.episode_id,
            row.task_id,
            row.cluster,
            (row,),
        )


def _answer_check(row: dict[str, Any], tools: set[str], problems: list[str]) -> None:
    if not row["answer"]:
        problems.append("answer must name a product")


ANSWERS = Format(
    name="answers",
    features=Features({"task_id": Value("string"), "answer": List(Value("string"))}),
    build=_answer_rows,
    check=_answer_check,
    card_columns=("task_id", "answer"),
    dataset_type="each kept trace's answer",
    trainer="RewardTrainer",
)


def test_a_format_added_in_a_test_is_exported_by_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new format is its record and its entry in ``FORMATS``: nothing else changes for it."""
    monkeypatch.setattr(curation.formats, "FORMATS", (*FORMATS, ANSWERS))
    url = database(tmp_path / "arena.db")
    out = tmp_path / "export"
    code, output = run(
        "--db",
        url,
        "--out",
        str(out),
        "--format",
        "kto,answers",
        "--eval-share",
        str(GOLDEN_EVAL_SHARE),
        "--miner-axis-sample",
        "0",
        "--json",
    )
    assert code == 0, output
    summary = json.loads(output)
    assert summary["exports"]["answers"] == summary["exports"]["kto"]  # one row per kept trace
    assert summary["exports"]["answers"]["train"] > 0
    for side in ("", "eval/"):
        rows = [json.loads(line) for line in (out / f"{side}answers.jsonl").read_text().splitlines()]
        assert len(rows) == summary["exports"]["answers"][side.rstrip("/") or "train"]
        assert all(set(row) == {"task_id", "answer"} and row["answer"] for row in rows)
        table = pq.read_table(out / f"{side}answers.parquet")
        assert table.num_rows == len(rows) and Features.from_arrow_schema(table.schema) == ANSWERS.features
    card = (out / "README.md").read_text(encoding="utf-8")
    assert ANSWERS.card_line in card and "| `answers.jsonl` | answers | train |" in card
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"]["answers.jsonl"]["provenance"]  # episode ids, as for any format
    assert "answers" not in summary["origins"]  # no provenance columns: not counted native / converted
