"""`arena eval --world`: the scripted agent on a world pack, each call at its world version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.index import SearchIndex
from arena.world.compile import compile_world
from arena.world.pack import save_pack
from neurons.cli import app
from neurons.evaluation.records import SAMPLES_FILE, SampleRecord, read_records

runner = CliRunner()


@pytest.fixture(scope="module")
def pack_dir(world_base: SearchIndex, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_pack(compile_world("eval-world", world_base), tmp_path_factory.mktemp("pack") / "w")


def test_eval_runs_on_a_pack_and_logs_world_versions(
    world_base_dir: Path, pack_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        ["eval", "--index", str(world_base_dir), "--world", str(pack_dir), "--agent", "scripted",
         "--k", "1", "--out", str(out), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((pack_dir / "manifest.json").read_text())
    results = json.loads((out / "results.json").read_text())
    assert results["run"]["world_id"] == manifest["world_id"]
    assert results["run"]["pack_hash"] == manifest["pack_hash"]
    records = read_records(out / SAMPLES_FILE, SampleRecord)
    tasks = [
        json.loads(line)["task"]["task_id"] for line in (pack_dir / "tasks.jsonl").read_text().splitlines()
    ]
    assert {task_id for task_id, _ in records} == set(tasks)
    logs = [entry for record in records.values() for entry in record.log]
    assert logs and all(entry.world_version is not None for entry in logs)
    assert f"on world {manifest['world_id']}" in result.stderr


def test_a_pack_over_another_base_or_with_tasks_is_refused(
    fixture_index_dir: Path, world_base_dir: Path, pack_dir: Path, tmp_path: Path
) -> None:
    other = runner.invoke(
        app, ["eval", "--index", str(fixture_index_dir), "--world", str(pack_dir), "--agent", "scripted",
              "--out", str(tmp_path / "a")],
    )  # fmt: skip
    assert other.exit_code == 2 and "was compiled over base" in other.stderr
    both = runner.invoke(
        app, ["eval", "--index", str(world_base_dir), "--world", str(pack_dir), "--tasks", str(pack_dir),
              "--agent", "scripted", "--out", str(tmp_path / "b")],
    )  # fmt: skip
    assert both.exit_code == 2 and "not both" in both.stderr
    (pack_dir.parent / "bad").mkdir()
    missing = runner.invoke(
        app, ["eval", "--index", str(world_base_dir), "--world", str(pack_dir.parent / "bad"), "--agent",
              "scripted", "--out", str(tmp_path / "c")],
    )  # fmt: skip
    assert missing.exit_code == 2 and "no world pack" in missing.stderr


def test_a_world_run_on_arena_3_asks_its_shopper_and_rejudges_on_its_pack(
    world_base: SearchIndex, world_base_dir: Path, pack_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        ["eval", "--index", str(world_base_dir), "--world", str(pack_dir), "--agent", "scripted",
         "--toolset", "arena-3", "--k", "1", "--out", str(out), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    run = json.loads((out / "run.json").read_text())
    manifest = json.loads((pack_dir / "manifest.json").read_text())
    assert run["fingerprint"]["pack_hash"] == manifest["pack_hash"] and run["pack"] == str(pack_dir.resolve())
    records = read_records(out / SAMPLES_FILE, SampleRecord)
    answers = [json.loads(e.result) for r in records.values() for e in r.log if e.tool == "ask_user"]
    assert answers and all("answer" in a for a in answers)  # the task's shopper answered, not an error
    before = (out / "judgments.jsonl").read_text()
    assert '"shopper"' in before  # judged with the task's profile
    again = runner.invoke(app, ["eval", "rejudge", str(out), "--json"])
    assert again.exit_code == 0, again.stderr
    assert (out / "judgments.jsonl").read_text() == before  # on its pack, as the run judged it
    other = save_pack(compile_world("eval-world-other", world_base), tmp_path / "other")
    refused = runner.invoke(app, ["eval", "rejudge", str(out), "--world", str(other)])
    assert refused.exit_code == 2 and "not the run's" in refused.stderr
