"""The evaluation runner against a scripted OpenAI-compatible stand-in, via the real llm agent and client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.index import SearchIndex, open_index
from neurons.evaluation.outputs import write_results
from neurons.evaluation.records import (
    JUDGMENTS_FILE,
    SAMPLES_FILE,
    JudgmentRecord,
    SampleRecord,
    read_records,
    repair_tail,
)
from neurons.evaluation.runner import ModelUnavailable, run_evaluation
from neurons.evaluation.settings import EvalSettings, RunMismatch, prepare_run_dir, sample_seed
from tests.neurons.eval_world import (
    EXPECTED_ASR,
    EXPECTED_CAR,
    EXPECTED_PASS_AT_2,
    EXPECTED_PASS_AT_4,
    EXPECTED_SUCCESSES,
    SEED,
    K,
    eval_tasks,
    scripts,
)
from tests.neurons.policy_stub import PolicyStub, Script

# Model turns of one sample of each of the four tasks: find, view, recommend, terminate (the
# calculator's policy skips the view), one turn per call.
TURNS_PER_SAMPLE = 4 + 4 + 3 + 4


@pytest.fixture
def index(fixture_index_dir: Path) -> Iterator[SearchIndex]:
    opened = open_index(fixture_index_dir)
    yield opened
    opened.close()


def _settings(stub: PolicyStub, **changes: object) -> EvalSettings:
    base: dict[str, object] = {
        "agent": "llm",
        "model": "stub-model",
        "model_url": stub.base_url,
        "k": K,
        "temperature": 0.7,
        "seed": SEED,
        "concurrency": 3,
        "max_steps": 8,
        "task_timeout_s": 30.0,
    }
    return EvalSettings(**(base | changes))  # type: ignore[arg-type]


async def _run(run_dir: Path, index: SearchIndex, settings: EvalSettings, fixture_index_dir: Path) -> dict:
    tasks = list(eval_tasks().values())
    prepare_run_dir(
        run_dir, settings, index_dir=fixture_index_dir, catalog_version=index.catalog_version, tasks=tasks
    )
    await run_evaluation(tasks, run_dir=run_dir, index=index, settings=settings, completer=None)
    return write_results(
        run_dir, tasks, k=settings.k, seed=settings.seed, resamples=2000, run={"model": "stub"}, selection={}
    )


async def test_pass_at_k_asr_and_car_match_hand_computed_values(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    async with PolicyStub(scripts(tasks)) as stub:
        results = await _run(tmp_path / "run", index, _settings(stub), fixture_index_dir)
    overall = results["overall"]
    assert overall["tasks"] == 4 and overall["samples"] == 16
    for name, task in tasks.items():
        assert results["per_task"][task.task_id]["successes"] == EXPECTED_SUCCESSES[name]
    assert overall["metrics"]["asr"]["estimate"] == pytest.approx(EXPECTED_ASR)
    assert overall["pass_at_k"]["1"]["estimate"] == pytest.approx(EXPECTED_ASR)
    assert overall["metrics"]["strict_asr"]["estimate"] == pytest.approx(EXPECTED_ASR)
    assert overall["pass_at_k"]["2"]["estimate"] == pytest.approx(EXPECTED_PASS_AT_2)
    assert overall["pass_at_k"]["4"]["estimate"] == pytest.approx(EXPECTED_PASS_AT_4)
    assert overall["metrics"]["car"]["estimate"] == pytest.approx(EXPECTED_CAR)
    # The calculator's four wrong answers name an id no tool result showed.
    assert overall["hallucinated_ids_total"] == 4
    assert overall["metrics"]["hallucinated_ids"]["estimate"] == pytest.approx(0.25)
    assert overall["metrics"]["fabrication_free"]["estimate"] == pytest.approx(0.75)
    # Three tasks make 4 calls per sample, the calculator 3 (it never views its answer).
    assert overall["metrics"]["tool_calls"]["estimate"] == pytest.approx((4 + 4 + 3 + 4) / 4)
    # One model turn per call; the stand-in reports 100 + 10 tokens per turn.
    assert overall["metrics"]["tokens"]["estimate"] == pytest.approx(110 * TURNS_PER_SAMPLE / 4)
    assert overall["noise_floor"] == pytest.approx(0.25)
    assert overall["metrics"]["reasoning"] is None  # no judge configured: unscored, not zero
    asr = overall["metrics"]["asr"]
    assert asr["low"] <= asr["estimate"] <= asr["high"]
    assert results["complete"] is True


async def test_strict_asr_leaves_out_successes_the_judge_zeroed(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    # The right cymbal, recommended after a search for chili powder that never showed it: the
    # outcome is a success, but the id was never seen, so the judge zeroes the score.
    task = eval_tasks()["cymbal"]
    seeds = frozenset(sample_seed(SEED, task.task_id, j) for j in range(2))
    script = Script(q="chili powder", gold="2002", wrong="2001", success_seeds=seeds, view=False)
    run_dir = tmp_path / "run"
    async with PolicyStub({task.query: script}) as stub:
        settings = _settings(stub, k=2)
        prepare_run_dir(
            run_dir,
            settings,
            index_dir=fixture_index_dir,
            catalog_version=index.catalog_version,
            tasks=[task],
        )
        await run_evaluation([task], run_dir=run_dir, index=index, settings=settings, completer=None)
    results = write_results(run_dir, [task], k=2, seed=SEED, resamples=500, run={}, selection={})
    metrics = results["overall"]["metrics"]
    assert metrics["asr"]["estimate"] == 1.0
    assert metrics["strict_asr"]["estimate"] == 0.0
    assert metrics["score"]["estimate"] == 0.0
    assert results["overall"]["hallucinated_ids_total"] == 2


async def test_each_sample_sends_its_own_seed_and_the_temperature(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    async with PolicyStub(scripts(tasks)) as stub:
        await _run(tmp_path / "run", index, _settings(stub), fixture_index_dir)
    assert len(stub.requests) == K * TURNS_PER_SAMPLE
    expected = {sample_seed(SEED, t.task_id, j) for t in tasks.values() for j in range(K)}
    assert {r["seed"] for r in stub.requests} == expected
    assert {r["temperature"] for r in stub.requests} == {0.7}
    samples = read_records(tmp_path / "run" / SAMPLES_FILE, SampleRecord)
    assert {record.seed for record in samples.values()} == expected


async def test_the_judge_gets_the_tool_log_of_every_call(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    async with PolicyStub(scripts(tasks)) as stub:
        await _run(tmp_path / "run", index, _settings(stub), fixture_index_dir)
    samples = read_records(tmp_path / "run" / SAMPLES_FILE, SampleRecord)
    judgments = read_records(tmp_path / "run" / JUDGMENTS_FILE, JudgmentRecord)
    assert samples.keys() == judgments.keys()
    for key, record in samples.items():
        assert record.trajectory is not None
        calls = record.trajectory.tool_calls()
        assert [entry.call_id for entry in record.log] == [call.id for call in calls]
        assert [entry.seq for entry in record.log] == list(range(len(calls)))
        assert all(entry.episode_id == record.episode_id for entry in record.log)
        judgment = judgments[key].judgment
        assert judgment.fabricated_call_ids == ()
        grounding = judgment.check("grounding")
        assert grounding is not None and grounding.value is not None


async def test_the_tool_call_budget_is_enforced_like_the_tool_server(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    async with PolicyStub(scripts(tasks)) as stub:
        await _run(tmp_path / "run", index, _settings(stub, max_tool_calls=2, k=1), fixture_index_dir)
    for record in read_records(tmp_path / "run" / SAMPLES_FILE, SampleRecord).values():
        assert record.tool_calls == 2
        assert record.trajectory is not None
        refused = [m.content or "" for m in record.trajectory.messages if m.role == "tool"][2:]
        assert refused and all("tool-call budget spent" in text for text in refused)


async def test_a_rerun_runs_only_the_missing_samples(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    run_dir = tmp_path / "run"
    async with PolicyStub(scripts(tasks)) as stub:
        await _run(run_dir, index, _settings(stub, k=2), fixture_index_dir)
        assert len(stub.requests) == 2 * TURNS_PER_SAMPLE
        stub.requests.clear()
        results = await _run(run_dir, index, _settings(stub, k=4), fixture_index_dir)
    # Only samples 2 and 3 of each task were new.
    new_seeds = {r["seed"] for r in stub.requests}
    assert new_seeds == {sample_seed(SEED, t.task_id, j) for t in tasks.values() for j in (2, 3)}
    assert len(stub.requests) == 2 * TURNS_PER_SAMPLE
    assert results["overall"]["samples"] == 16


async def test_samples_recorded_but_not_judged_are_judged_without_running_again(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    run_dir = tmp_path / "run"
    async with PolicyStub(scripts(tasks)) as stub:
        await _run(run_dir, index, _settings(stub), fixture_index_dir)
        lines = (run_dir / JUDGMENTS_FILE).read_text().splitlines(keepends=True)
        (run_dir / JUDGMENTS_FILE).write_text("".join(lines[:10]))
        stub.requests.clear()
        results = await _run(run_dir, index, _settings(stub), fixture_index_dir)
    assert stub.requests == []
    assert len(read_records(run_dir / JUDGMENTS_FILE, JudgmentRecord)) == 16
    assert results["overall"]["metrics"]["asr"]["estimate"] == pytest.approx(EXPECTED_ASR)


async def test_resuming_with_other_settings_is_refused(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    async with PolicyStub(scripts(tasks)) as stub:
        await _run(tmp_path / "run", index, _settings(stub, k=1), fixture_index_dir)
        with pytest.raises(RunMismatch, match="temperature"):
            prepare_run_dir(
                tmp_path / "run",
                _settings(stub, k=1, temperature=0.2),
                index_dir=fixture_index_dir,
                catalog_version=index.catalog_version,
                tasks=list(tasks.values()),
            )


async def test_a_dead_model_server_stops_the_run(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    async with PolicyStub(scripts(tasks), status=404) as stub:
        settings = _settings(stub, agent_options={"max_retries": 0})
        with pytest.raises(ModelUnavailable):
            await _run(tmp_path / "run", index, settings, fixture_index_dir)
    # It stopped after the first few samples instead of recording 16 failures.
    assert len(read_records(tmp_path / "run" / SAMPLES_FILE, SampleRecord)) < 16


async def test_errored_samples_are_rerun_only_when_asked(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    tasks = eval_tasks()
    run_dir = tmp_path / "run"
    async with PolicyStub(scripts(tasks), status=500) as stub:
        settings = _settings(stub, k=1, concurrency=4, agent_options={"max_retries": 0})
        with pytest.raises(ModelUnavailable):
            await _run(run_dir, index, settings, fixture_index_dir)
        stub.status = None
        stub.requests.clear()
        await _run(run_dir, index, settings, fixture_index_dir)
        assert stub.requests == []  # errored samples are finished samples
        results = await _run(
            run_dir,
            index,
            _settings(stub, k=1, concurrency=4, retry_errors=True, agent_options={"max_retries": 0}),
            fixture_index_dir,
        )
    assert len(stub.requests) == TURNS_PER_SAMPLE
    assert results["overall"]["model_errors"] == 0


async def test_the_scripted_agent_runs_without_a_model(
    tmp_path: Path, index: SearchIndex, fixture_index_dir: Path
) -> None:
    settings = EvalSettings(agent="scripted", k=2, seed=SEED, concurrency=2, task_timeout_s=30.0)
    results = await _run(tmp_path / "run", index, settings, fixture_index_dir)
    samples = read_records(tmp_path / "run" / SAMPLES_FILE, SampleRecord)
    assert len(samples) == 8 and all(record.seed is None for record in samples.values())
    assert results["overall"]["samples"] == 8
    assert all(record.stop == "terminated" for record in samples.values())


def test_repair_tail_cuts_a_partial_last_line(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c": ')
    assert repair_tail(path) == len('{"c": ')
    assert path.read_text() == '{"a": 1}\n{"b": 2}\n'
    assert repair_tail(path) == 0
    path.write_text('{"only": "partial"')
    repair_tail(path)
    assert path.read_text() == ""


def test_results_json_is_strict_json(tmp_path: Path) -> None:
    # allow_nan=False in the writer: a NaN anywhere would raise rather than write invalid JSON.
    from neurons.evaluation.records import write_json

    with pytest.raises(ValueError):
        write_json(tmp_path / "x.json", {"v": float("nan")})
    write_json(tmp_path / "y.json", {"v": 1.5})
    assert json.loads((tmp_path / "y.json").read_text()) == {"v": 1.5}
