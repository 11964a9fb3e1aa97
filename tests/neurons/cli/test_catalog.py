import json
from pathlib import Path

from typer.testing import CliRunner

from arena.catalog import iter_products
from arena.shoppingbench import load_shoppingbench
from neurons.cli import app

runner = CliRunner()


def test_synth_writes_a_deterministic_catalog(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl.gz"
    result = runner.invoke(
        app, ["catalog", "synth", "--products", "400", "--seed", "4", "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["products"] == 400 and summary["bad_rows"] == 0 and summary["path"] == str(out)
    assert summary["bytes"] == out.stat().st_size > 0
    first = out.read_bytes()
    again = runner.invoke(app, ["catalog", "synth", "--products", "400", "--seed", "4", "--out", str(out)])
    assert again.exit_code == 0 and "wrote 400" in again.stdout
    assert out.read_bytes() == first
    assert len(list(iter_products([out]))) == 400


def test_synth_rejects_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["catalog", "synth", "--products", "0", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and "--products" in result.output
    assert runner.invoke(app, ["catalog", "synth", "--out", str(tmp_path / "x.jsonl")]).exit_code == 2


def test_from_tasks_over_the_shoppingbench_folder(tmp_path: Path, shoppingbench_dir: Path) -> None:
    out, manifest = tmp_path / "ft.jsonl", tmp_path / "manifest.json"
    args = ["catalog", "from-tasks", "--tasks", str(shoppingbench_dir), "--out", str(out)]
    result = runner.invoke(app, [*args, "--manifest", str(manifest), "--decoys", "2", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["tasks"] == 900 and summary["conflicts"] == [] and summary["bad_rows"] == 0
    assert summary["decoys"] == 2 * summary["gold"]
    ids = {p.product_id for p in iter_products([out])}
    assert len(ids) == summary["products"]
    body = json.loads(manifest.read_text())
    assert set(body["gold_ids"]) <= ids and len(body["decoys"]) == summary["decoys"]


def test_from_tasks_accepts_files_and_arena_task_jsonl(tmp_path: Path, shoppingbench_dir: Path) -> None:
    source = shoppingbench_dir / "synthesize_shop_test.jsonl"
    arena_file = tmp_path / "tasks.jsonl"
    arena_file.write_text("".join(t.model_dump_json() + "\n" for t in load_shoppingbench([source])[:5]))
    out = tmp_path / "ft.jsonl"
    args = ["--tasks", str(source), "--tasks", str(arena_file), "--out", str(out), "--json"]
    result = runner.invoke(app, ["catalog", "from-tasks", *args])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tasks"] == 255


def test_from_tasks_bad_input_exits_2(tmp_path: Path) -> None:
    missing = runner.invoke(
        app, ["catalog", "from-tasks", "--tasks", str(tmp_path / "no.jsonl"), "--out", "x"]
    )
    assert missing.exit_code == 2 and "not found" in missing.output
    bad = tmp_path / "synthesize_product_test.jsonl"
    bad.write_text('{"query": "q", "reward": []}\n')
    result = runner.invoke(
        app, ["catalog", "from-tasks", "--tasks", str(bad), "--out", str(tmp_path / "o.jsonl")]
    )
    assert result.exit_code == 2 and "synthesize_product_test.jsonl:1" in result.output
    junk = tmp_path / "mine.jsonl"
    junk.write_text("{}\n")
    result = runner.invoke(
        app, ["catalog", "from-tasks", "--tasks", str(junk), "--out", str(tmp_path / "o.jsonl")]
    )
    assert result.exit_code == 2 and "mine.jsonl:1" in result.output


def test_help_shows_examples() -> None:
    for command in ("synth", "from-tasks"):
        result = runner.invoke(app, ["catalog", command, "--help"])
        assert result.exit_code == 0 and "Example: arena catalog" in result.output
