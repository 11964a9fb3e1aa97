"""`arena eval`, `eval rejudge` and `eval compare` end to end, against a policy stand-in in a thread."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neurons.cli import app
from neurons.evaluation.records import (
    JUDGMENTS_FILE,
    SAMPLES_FILE,
    JudgmentRecord,
    SampleRecord,
    read_records,
)
from neurons.evaluation.settings import sample_seed
from tests.neurons.eval_world import (
    EXPECTED_ASR,
    EXPECTED_PASS_AT_2,
    SEED,
    K,
    eval_tasks,
    scripts,
    write_tasks,
)
from tests.neurons.policy_stub import PolicyStub

runner = CliRunner()
ARENA = [sys.executable, "-c", "from neurons.cli import main; main()"]
VERDICT = json.dumps(
    {
        "inference_present": True,
        "tool_results_analysed": True,
        "datum_cited": False,
        "candidates_compared": False,
        "score": 2,
        "injection_attempt": False,
    }
)


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def eval_args(index: Path, tasks: Path, out: Path, stub: PolicyStub, *extra: str) -> list[str]:
    return [
        "eval",
        "--index",
        str(index),
        "--tasks",
        str(tasks),
        "--model-url",
        stub.base_url,
        "--model",
        "stub-model",
        "--k",
        str(K),
        "--seed",
        str(SEED),
        "--out",
        str(out),
        "--resamples",
        "1000",
        "--task-timeout",
        "60",
        *extra,
    ]


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    return write_tasks(tmp_path / "tasks.jsonl", eval_tasks())


def test_eval_writes_every_file_and_prints_the_summary_as_json(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with PolicyStub(scripts(eval_tasks())).in_thread() as stub:
        code, stdout, stderr = run(*eval_args(fixture_index_dir, tasks_file, out, stub, "--json"))
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["overall"]["metrics"]["asr"]["estimate"] == pytest.approx(EXPECTED_ASR)
    assert summary["overall"]["pass_at_k"]["2"]["estimate"] == pytest.approx(EXPECTED_PASS_AT_2)
    assert summary["selection"]["pool"] == "never_touch" and summary["selection"]["evaluated"] == 4
    assert summary["run"]["temperature"] == 0.7  # the default for k > 1
    for name in ("run.json", "tasks.jsonl", "samples.jsonl", "judgments.jsonl", "results.json", "results.md"):
        assert (out / name).is_file(), name
    table = (out / "results.md").read_text()
    assert "| ASR (pass@1) | 50.0% [" in table and "pass@4" in table
    assert len(read_records(out / SAMPLES_FILE, SampleRecord)) == 16


def test_the_markdown_table_is_printed_without_json(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    with PolicyStub(scripts(eval_tasks())).in_thread() as stub:
        code, stdout, _ = run(*eval_args(fixture_index_dir, tasks_file, tmp_path / "run", stub, "--k", "1"))
    assert code == 0
    assert (
        stdout.startswith("# Evaluation: stub-model") and "| Metric | all (N=4) | product (N=4) |" in stdout
    )


def test_tasks_from_a_training_export_are_refused_and_counted(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    tasks = eval_tasks()
    export = tmp_path / "export"
    export.mkdir()
    # The shape curation/manifest.py writes (arena.export-manifest/1).
    manifest = {
        "schema": "arena.export-manifest/1",
        "splits": {
            "train": {"tasks": ["t-unrelated"], "clusters": ["lc-pegasus"], "episodes": ["ep-1"]},
            "eval": {"tasks": [tasks["chili"].task_id], "clusters": [], "episodes": []},
        },
        "files": {},
    }
    (export / "manifest.json").write_text(json.dumps(manifest))
    with PolicyStub(scripts(tasks)).in_thread() as stub:
        args = eval_args(fixture_index_dir, tasks_file, tmp_path / "run", stub, "--k", "1", "--json")
        code, stdout, stderr = run(*args, "--train-manifest", str(export))
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["selection"]["dropped_leak"] == 2
    assert summary["selection"]["evaluated"] == 2
    assert sorted(summary["selection"]["leaked_clusters"]) == ["lc-chili", "lc-pegasus"]
    assert "refused 2 tasks" in stderr
    # No request ever carried a refused task's query.
    refused = {tasks["pegasus"].query, tasks["chili"].query}
    assert not any(
        m["content"] in refused for r in stub.requests for m in r["messages"] if m["role"] == "user"
    )


def test_an_unrecognisable_manifest_is_an_error_not_a_silent_pass(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"rows": 12}))
    code, _, stderr = run(
        "eval", "--index", str(fixture_index_dir), "--tasks", str(tasks_file), "--agent", "scripted",
        "--out", str(tmp_path / "run"), "--train-manifest", str(manifest),
    )  # fmt: skip
    assert code == 2 and "names no task ids or leak clusters" in stderr


def test_the_pool_filter_defaults_to_never_touch(fixture_index_dir: Path, tmp_path: Path) -> None:
    tasks = eval_tasks()
    mixed = {
        name: task.model_copy(update={"pool": "held_out"}) if name == "cymbal" else task
        for name, task in tasks.items()
    }
    tasks_file = write_tasks(tmp_path / "tasks.jsonl", mixed)
    args = [
        "eval",
        "--index",
        str(fixture_index_dir),
        "--tasks",
        str(tasks_file),
        "--agent",
        "scripted",
        "--k",
        "1",
    ]
    code, stdout, _ = run(*args, "--out", str(tmp_path / "a"), "--json")
    assert code == 0
    selection = json.loads(stdout)["selection"]
    assert (selection["pool"], selection["dropped_pool"], selection["evaluated"]) == ("never_touch", 1, 3)
    code, stdout, _ = run(*args, "--out", str(tmp_path / "b"), "--json", "--pool", "all")
    assert code == 0 and json.loads(stdout)["selection"]["evaluated"] == 4


def test_bad_input_exits_2(fixture_index_dir: Path, tasks_file: Path, tmp_path: Path) -> None:
    code, _, stderr = run("eval", "--tasks", str(tasks_file))
    assert code == 2 and "--index and --tasks are required" in stderr
    code, _, stderr = run("eval", "--index", str(fixture_index_dir), "--tasks", str(tasks_file))
    assert code == 2 and "--model-url and --model" in stderr
    code, _, stderr = run(
        "eval",
        "--index",
        str(fixture_index_dir),
        "--tasks",
        str(tasks_file),
        "--agent",
        "scripted",
        "--pool",
        "nope",
    )
    assert code == 2 and "unknown pool" in stderr
    code, _, stderr = run(
        "eval", "--index", str(tmp_path / "missing"), "--tasks", str(tasks_file), "--agent", "scripted"
    )
    assert code == 2
    scripted = ["eval", "--index", str(fixture_index_dir), "--tasks", str(tasks_file), "--agent", "scripted"]
    code, _, stderr = run(*scripted, "--k", "0")  # the bound is the settings field's (ge=1)
    assert code == 2 and "invalid eval settings" in stderr and "k\n" in stderr


def test_resuming_with_other_settings_exits_2(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    with PolicyStub(scripts(eval_tasks())).in_thread() as stub:
        assert run(*eval_args(fixture_index_dir, tasks_file, tmp_path / "run", stub, "--k", "1"))[0] == 0
        code, _, stderr = run(
            *eval_args(
                fixture_index_dir, tasks_file, tmp_path / "run", stub, "--k", "1", "--temperature", "0.3"
            )
        )
    assert code == 2 and "temperature" in stderr


def test_a_killed_run_resumes_without_rerunning_finished_samples(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    tasks = eval_tasks()
    out = tmp_path / "run"
    turns = {t.task_id: (3 if name == "calculator" else 4) for name, t in tasks.items()}
    with PolicyStub(scripts(tasks), delay_s=0.05).in_thread() as stub:
        args = eval_args(fixture_index_dir, tasks_file, out, stub, "--concurrency", "1")
        process = subprocess.Popen([*ARENA, *args[0:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and process.poll() is None:
                samples = out / SAMPLES_FILE
                if samples.is_file() and samples.read_bytes().count(b"\n") >= 5:
                    break
                time.sleep(0.02)
            assert process.poll() is None, "the run finished before it could be killed"
            os.kill(process.pid, signal.SIGKILL)
        finally:
            process.wait(timeout=30)
        before = len(stub.requests)
        finished = read_records(out / SAMPLES_FILE, SampleRecord)
        assert 5 <= len(finished) < 16
        code, stdout, stderr = run(*args, "--json")
        assert code == 0, stderr
        new = stub.requests[before:]
    unfinished = [(t.task_id, j) for t in tasks.values() for j in range(K) if (t.task_id, j) not in finished]
    # Each unfinished sample ran once, from its first turn; no finished sample was asked again.
    assert len(new) == sum(turns[task_id] for task_id, _ in unfinished)
    finished_seeds = {sample_seed(SEED, task_id, j) for task_id, j in finished}
    assert not finished_seeds & {r["seed"] for r in new}
    summary = json.loads(stdout)
    assert summary["complete"] and summary["overall"]["samples"] == 16
    assert summary["overall"]["metrics"]["asr"]["estimate"] == pytest.approx(EXPECTED_ASR)
    assert len(read_records(out / JUDGMENTS_FILE, JudgmentRecord)) == 16


def test_rejudge_uses_the_stored_trajectories_and_logs(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with PolicyStub(scripts(eval_tasks()), judge_reply=VERDICT).in_thread() as stub:
        assert run(*eval_args(fixture_index_dir, tasks_file, out, stub))[0] == 0
        agent_requests = len(stub.requests)
        code, stdout, stderr = run(
            "eval", "rejudge", str(out), "--judge-url", stub.base_url, "--judge-model", "judge-stub", "--json"
        )
        judge_requests = stub.requests[agent_requests:]
    assert code == 0, stderr
    assert judge_requests and all("tools" not in r for r in judge_requests)
    # Zeroed trajectories (the calculator's hallucinations) are not sent to the judge.
    assert len(judge_requests) == 12
    summary = json.loads(stdout)
    assert summary["overall"]["metrics"]["reasoning"]["estimate"] == pytest.approx(0.5)
    assert summary["overall"]["metrics"]["asr"]["estimate"] == pytest.approx(EXPECTED_ASR)
    judgments = read_records(out / JUDGMENTS_FILE, JudgmentRecord)
    assert len(judgments) == 16
    assert {j.judgment.versions.judge_model for j in judgments.values()} == {"judge-stub"}
    assert json.loads((out / "run.json").read_text())["fingerprint"]["judge_model"] == "judge-stub"


def test_compare_gives_verdicts_only_where_the_interval_excludes_zero(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    tasks = eval_tasks()
    with PolicyStub(scripts(tasks)).in_thread() as stub:
        assert run(*eval_args(fixture_index_dir, tasks_file, tmp_path / "a", stub))[0] == 0
    with PolicyStub(scripts(tasks, all_right=True)).in_thread() as stub:
        assert run(*eval_args(fixture_index_dir, tasks_file, tmp_path / "b", stub))[0] == 0
    plot = tmp_path / "asr.png"
    code, stdout, stderr = run(
        "eval",
        "compare",
        str(tmp_path / "a" / "results.json"),
        str(tmp_path / "b"),
        "--json",
        "--plot",
        str(plot),
    )
    assert code == 0, stderr
    comparison = json.loads(stdout)
    rows = {row["name"]: row for row in comparison["metrics"]}
    assert comparison["tasks"] == 4
    # ASR per task moves by +0.25, +0.75, +1, 0: every resample of four tasks but the rarest
    # (all four the unchanged one, or three of them) improves, so the interval excludes zero.
    assert rows["asr"]["a"] == pytest.approx(0.5) and rows["asr"]["b"] == pytest.approx(1.0)
    assert rows["asr"]["difference"]["estimate"] == pytest.approx(0.5)
    assert rows["asr"]["verdict"] == "B better"
    # Tool calls change on one task of four (the calculator now views its answer): too few to tell.
    assert rows["tool_calls"]["difference"]["estimate"] == pytest.approx(0.25)
    assert rows["tool_calls"]["verdict"] is None
    assert rows["hallucinated_ids"]["verdict"] is None
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    code, stdout, _ = run("eval", "compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert code == 0 and "| ASR (pass@1) | 50.0% | 100.0% | +50.0 pts [" in stdout and "B better" in stdout
    assert "no detectable difference" in stdout


def test_compare_refuses_a_file_that_is_not_results(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    code, _, stderr = run("eval", "compare", str(bad), str(bad))
    assert code == 2 and "not an arena eval results.json" in stderr


def test_db_stores_every_judged_sample_as_a_validator_episode_once(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    from storage.db import make_engine, make_sessionmaker
    from storage.traces import iter_judged

    url = f"sqlite:///{tmp_path / 'traces.db'}"
    args = [
        "eval", "--index", str(fixture_index_dir), "--tasks", str(tasks_file), "--pool", "all",
        "--agent", "scripted", "--k", "1", "--out", str(tmp_path / "run"), "--db", url,
    ]  # fmt: skip
    code, _, stderr = run(*args)
    assert code == 0, stderr
    assert "stored 4 episodes" in stderr
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        traces = list(iter_judged(session))
    judgments = read_records(tmp_path / "run" / JUDGMENTS_FILE, JudgmentRecord)
    samples = read_records(tmp_path / "run" / SAMPLES_FILE, SampleRecord)
    assert {t.episode.episode_id for t in traces} == {s.episode_id for s in samples.values()}
    for trace in traces:
        key = (trace.task.task_id, 0)
        assert trace.judgment == judgments[key].judgment
        assert trace.tool_log == samples[key].log and trace.episode.validator_hotkey == "collect"
    code, _, stderr = run(*args)  # a rerun runs nothing and stores nothing new
    assert code == 0 and "stored 0 episodes" in stderr and "4 already there" in stderr
    engine.dispose()


def test_an_unusable_db_is_an_error_after_the_run(
    fixture_index_dir: Path, tasks_file: Path, tmp_path: Path
) -> None:
    args = [
        "eval", "--index", str(fixture_index_dir), "--tasks", str(tasks_file), "--pool", "all",
        "--agent", "scripted", "--k", "1", "--out", str(tmp_path / "run"), "--db", "nosuchdb://x",
    ]  # fmt: skip
    code, _, stderr = run(*args)
    assert code == 2 and "cannot open --db" in stderr
    assert (tmp_path / "run" / SAMPLES_FILE).exists()  # the run itself is kept
