"""A run's outputs: results.json and results.md from its records, and re-judging stored samples."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.index import SearchIndex
from arena.tasks import load_tasks
from arena.types import Task
from judging.judge import JudgeConfig
from judging.reasoning import Completer
from judging.world import WorldJudging
from neurons.evaluation.records import (
    JUDGMENTS_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SAMPLES_FILE,
    TABLE_FILE,
    TASKS_FILE,
    JudgmentRecord,
    SampleRecord,
    SampleSummary,
    read_json,
    read_records,
    write_atomic,
    write_json,
    write_records,
)
from neurons.evaluation.report import build_results
from neurons.evaluation.runner import judge_sample
from neurons.evaluation.table import results_markdown


def write_results(
    run_dir: Path,
    tasks: Sequence[Task],
    *,
    k: int,
    seed: int,
    resamples: int,
    run: Mapping[str, Any],
    selection: Mapping[str, Any],
) -> dict[str, Any]:
    """Compute the metrics from the run's records, write results.json and results.md, return the results."""
    samples = read_records(run_dir / SAMPLES_FILE, SampleSummary)
    judgments = read_records(run_dir / JUDGMENTS_FILE, JudgmentRecord)
    results = build_results(
        tasks, samples, judgments, k=k, seed=seed, resamples=resamples, run=run, selection=selection
    )
    write_json(run_dir / RESULTS_FILE, results)
    write_atomic(run_dir / TABLE_FILE, results_markdown(results))
    return results


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[Task], dict[str, Any] | None]:
    """Read a run directory's ``run.json``, its tasks and its last ``results.json`` (None if none yet).

    Raises:
        FileNotFoundError: the directory holds no run.
    """
    run = read_json(run_dir / RUN_FILE)
    if run is None or not (run_dir / TASKS_FILE).is_file():
        raise FileNotFoundError(f"{run_dir} holds no evaluation run (no {RUN_FILE} or {TASKS_FILE})")
    return run, load_tasks(run_dir / TASKS_FILE), read_json(run_dir / RESULTS_FILE)


async def rejudge_run(
    run_dir: Path,
    tasks: Sequence[Task],
    *,
    index: SearchIndex,
    completer: Completer | None,
    config: JudgeConfig,
    world: WorldJudging | None = None,
    concurrency: int = 4,
    on_sample: Callable[[], None] | None = None,
) -> int:
    """Judge every stored sample of ``tasks`` again from its trajectory and tool log; replace judgments.jsonl.

    The new judgments are written in one atomic replace, so an interrupted re-judge leaves the
    old ones in place. On a world (``world``), each sample is judged as the run judged it: at its
    answer's world version, with its task's shopper. Returns the number of samples judged.
    """
    by_id = {task.task_id: task for task in tasks}
    records = [r for r in read_records(run_dir / SAMPLES_FILE, SampleRecord).values() if r.task_id in by_id]
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(record: SampleRecord) -> JudgmentRecord:
        async with gate:
            judgment = await judge_sample(
                by_id[record.task_id], record, index=index, completer=completer, config=config, world=world
            )
        if on_sample is not None:
            on_sample()
        return JudgmentRecord(task_id=record.task_id, sample=record.sample, judgment=judgment)

    verdicts = await asyncio.gather(*(one(record) for record in records))
    return write_records(run_dir / JUDGMENTS_FILE, verdicts)
