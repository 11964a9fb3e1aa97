"""`arena curate`: the command over a real database file, its JSON summary, metrics and exit codes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime
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
from neurons.miner.agents.scripted import scripted_agent
from neurons.validator.components import curation_exporter
from neurons.validator.process import serve
from neurons.validator.settings import ValidatorSettings
from storage.db import make_engine, make_sessionmaker, upgrade
from storage.paths import record_paths
from tests.curation.planted import GOLDEN_EVAL_SHARE, golden_population, store, task, trace
from tests.neurons.conftest import LocalNet
from tests.neurons.rig import failing_agent, next_world, serve_miners, world_validator

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    """The exit code and stdout and stderr together (errors and warnings go to stderr)."""
    result = runner.invoke(app, ["curate", *args])
    return result.exit_code, result.output


def run_json(*args: str) -> tuple[dict[str, Any], str]:
    """The ``--json`` summary (stdout) and stderr of a run that succeeds."""
    result = runner.invoke(app, ["curate", *args, "--json"])
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary, result.stderr


@pytest.fixture(autouse=True)
def no_validator_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ~/.arena/validator on this machine: only what the database records and the flags count."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


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
    summary, stderr = run_json("--db", url, "--out", str(out), "--eval-share", str(GOLDEN_EVAL_SHARE))
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
    summary, _ = run_json(*args, "--axis", "A,B", "--split-by", "none")
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
    args = ["--db", url, "--out", str(out), "--format", "kto,answers", "--eval-share", str(GOLDEN_EVAL_SHARE)]
    summary, _ = run_json(*args, "--miner-axis-sample", "0")
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


# ------------------------------------------------------------------ conversion that cannot run


def test_without_an_index_the_command_says_what_conversion_left_and_the_fix(tmp_path: Path) -> None:
    url = database(tmp_path / "arena.db")
    out = tmp_path / "export"
    args = ("--eval-share", str(GOLDEN_EVAL_SHARE), "--miner-axis-sample", "0")
    summary, stderr = run_json("--db", url, "--out", str(out), *args)
    assert summary["exports"]["axis_b"]["train"] == 1
    line = next(line for line in stderr.splitlines() if "conversion did not run" in line)
    assert "no validator recorded one" in line and "1 traces set aside" in line and "fix: --index DIR" in line
    off = json.loads((out / "funnel.json").read_text())["stages"]["convert"]["notes"]["off"]
    assert off["set_aside"] == {"axis_b": 1} and off["fix"].startswith("--index DIR")
    assert "no validator recorded one" in off["reason"]


def test_an_index_the_validator_recorded_elsewhere_is_named(tmp_path: Path) -> None:
    url = database(tmp_path / "arena.db")
    engine = make_engine(url)
    gone = tmp_path / "validator-machine" / "index"
    with make_sessionmaker(engine)() as session:
        record_paths(session, index=gone, worlds=tmp_path / "worlds", at=datetime.now(UTC))
    engine.dispose()
    _, stderr = run_json("--db", url, "--out", str(tmp_path / "export"))
    assert f"the validator recorded {gone}, which is not on this machine" in stderr
    code, output = run("--db", url, "--out", str(tmp_path / "export"), "--no-convert")
    assert code == 0 and "conversion did not run" not in output  # off by choice: nothing to warn about


# ------------------------------------------------------------------ the database of a validator


async def _world_round(net: LocalNet, settings: ValidatorSettings) -> dict[str, Any] | None:
    """The validator's first world round, and its export: a start commits its round secret, the next runs."""
    async with AsyncExitStack() as stack:
        await serve_miners(stack, net, {"miner1": scripted_agent, "miner2": failing_agent})
        await next_world(net)
        first = await serve(settings, once=True, exporter=curation_exporter(settings))
        assert first is not None and first["round"]["result"] == "no_commitment", first
        await next_world(net)
        return await serve(settings, once=True, exporter=curation_exporter(settings))


def test_curate_given_only_the_database_exports_what_its_validator_exported(
    make_net: Callable[..., LocalNet], world_base_dir: Path, tmp_path: Path
) -> None:
    net = make_net(block_seconds=0.25)  # a new world every 2 s
    settings = world_validator(net, tmp_path, world_base_dir)  # as the demo runs one
    report = asyncio.run(_world_round(net, settings))
    assert report is not None and report["round"]["result"] == "ok" and report["failed"] == [], report
    own = settings.export_path()  # the validator's export job, converting on its own index and packs
    own_funnel = json.loads((own / "funnel.json").read_text())
    assert sum(own_funnel["origins"]["kto"].values()) > 0 and own_funnel["origins"]["kto"]["converted"] > 0
    out = tmp_path / "curated"
    code, output = run("--db", settings.database_url(), "--out", str(out))  # no other flag
    assert code == 0 and "warning" not in output, output
    exported = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.jsonl"))}
    assert exported == {str(p.relative_to(own)): p.read_bytes() for p in sorted(own.rglob("*.jsonl"))}
    funnel = json.loads((out / "funnel.json").read_text())
    assert funnel["stages"] == own_funnel["stages"] and funnel["exports"] == own_funnel["exports"]
    empty = tmp_path / "no-packs"
    empty.mkdir()  # the index found, the world packs not: the world traces cannot convert, and it says so
    code, output = run(
        "--db", settings.database_url(), "--out", str(tmp_path / "blind"), "--worlds", str(empty)
    )
    assert code == 0 and "traces not converted (unknown_world); fix: --worlds DIR" in output, output
    converted = tmp_path / "converted.jsonl"  # arena convert finds them the same way
    result = runner.invoke(
        app, ["convert", "--db", settings.database_url(), "--out", str(converted), "--json"]
    )
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)["counts"]
    assert counts["converted"] > 0 and "dropped:unknown_world" not in counts, counts
