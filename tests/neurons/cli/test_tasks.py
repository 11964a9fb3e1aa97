import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.tasks import load_tasks, save_tasks
from arena.types import Task
from neurons.cli import app

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.output


@pytest.fixture()
def imported(shoppingbench_files: list[Path], tmp_path: Path) -> Path:
    out = tmp_path / "tasks.jsonl"
    code, output = run(
        "tasks", "import", "--format", "shoppingbench", *map(str, shoppingbench_files), "--out", str(out)
    )
    assert code == 0, output
    return out


def test_import_all_shoppingbench_tasks_as_json(shoppingbench_files: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    code, output = run("tasks", "import", *map(str, shoppingbench_files), "--out", str(out), "--json")
    assert code == 0, output
    summary = json.loads(output)
    assert summary["tasks"] == 900 and summary["bad"] == 0
    tasks = load_tasks(out)
    assert len(tasks) == 900 and all(t.leak_cluster for t in tasks)


def test_bad_input_exits_2(tmp_path: Path) -> None:
    code, output = run(
        "tasks", "import", "--format", "csv", str(tmp_path / "x"), "--out", str(tmp_path / "o")
    )
    assert code == 2 and "--format" in output
    code, output = run("tasks", "audit", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "not found" in output


def test_pools_audit_draw_retire_export(imported: Path, tmp_path: Path) -> None:
    pooled = tmp_path / "pooled.jsonl"
    code, output = run(
        "tasks",
        "assign-pools",
        str(imported),
        "--practice",
        "0.1",
        "--never-touch",
        "0.1",
        "--out",
        str(pooled),
        "--json",
    )
    assert code == 0, output
    pools = json.loads(output)["pools"]
    assert pools["practice"] >= 90 and pools["never_touch"] >= 90
    code, output = run("tasks", "audit", str(pooled), "--json")
    assert code == 0, output
    assert json.loads(output)["ok"] is True

    env = {"ARENA_ROUND_SECRET": "s3cret"}
    code, first = run("tasks", "draw", str(pooled), "--round", "4", "--n", "5", "--json", env=env)
    assert code == 0, first
    drawn = json.loads(first)["task_ids"]
    assert (
        len(drawn) == 5
        and run("tasks", "draw", str(pooled), "--round", "4", "--n", "5", "--json", env=env)[1] == first
    )
    assert run("tasks", "draw", str(pooled), "--round", "4")[0] == 2  # no secret

    retired = tmp_path / "retired.jsonl"
    served = [arg for task_id in drawn for arg in ("--served", task_id)]
    assert run("tasks", "retire", str(pooled), *served, "--out", str(retired))[0] == 0
    after = {t.task_id: t.pool for t in load_tasks(retired)}
    assert all(after[task_id] == "retired" for task_id in drawn)

    suite = tmp_path / "practice.json"
    code, output = run("tasks", "export", str(retired), "--format", "oro", "--out", str(suite))
    assert code == 0, output
    assert len(json.loads(suite.read_text())) == pools["practice"]


def test_audit_fails_on_a_planted_leak(imported: Path, tmp_path: Path) -> None:
    tasks = load_tasks(imported)
    practice = tasks[0].model_copy(update={"pool": "practice"})
    twin = Task.model_validate(tasks[1].model_dump() | {"query": practice.query + "!", "task_id": ""})
    leaky = tmp_path / "leaky.jsonl"
    save_tasks([practice, *tasks[2:], twin], leaky)
    code, output = run("tasks", "audit", str(leaky), "--json")
    assert code == 1
    report = json.loads(output)
    assert report["ok"] is False and "query" in {v["rule"] for v in report["violations"]}
    code, output = run("tasks", "export", str(leaky), "--out", str(tmp_path / "x.jsonl"))
    assert code == 1 and not (tmp_path / "x.jsonl").exists()


def test_generate_is_deterministic_and_clustered(synth_index_dir: Path, tmp_path: Path) -> None:
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for out in outs:
        code, output = run(
            "tasks",
            "generate",
            "--index",
            str(synth_index_dir),
            "--n",
            "30",
            "--seed",
            "7",
            "--out",
            str(out),
            "--json",
        )
        assert code == 0, output
    assert outs[0].read_bytes() == outs[1].read_bytes()
    tasks = load_tasks(outs[0])
    assert len(tasks) == 30 and all(t.leak_cluster and t.pool == "held_out" for t in tasks)
    code, output = run(
        "tasks",
        "generate",
        "--index",
        str(synth_index_dir),
        "--n",
        "3",
        "--intents",
        "bogus",
        "--out",
        str(outs[0]),
    )
    assert code == 2
