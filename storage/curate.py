"""The curation funnel: judged traces streamed from the database into ranked, deduplicated, split candidates.

Stages (``storage.funnel.STAGES``): 1 normalise, 2 hard rejects, 3 reasoning gate, 4 axis,
5 convert (traces of the labels to convert become agentic trajectories, ``storage.conversion``;
every other trace passes as it is), 6 ranking, 7 dedup and caps, 8 split (with the task audit
enforced; ``storage.split``). The issue lists ranking
after dedup; it runs before, because dedup collapses each group onto its best-ranked trace.

Memory. One pass reads the database page by page (``iter_judged``, ``batch_size`` traces, fewer
where their trajectories reach ``storage.traces.PAGE_CHARS``; the workspace is written at the
same bound);
stages 1-6 are per trace, and each survivor goes to an on-disk ``Workspace`` as one compact
``Row`` (canonical record, dedup keys, rank). Stage 7 then walks the workspace one leak cluster
at a time, best-ranked first, holding only that cluster's kept step sets and cap counters. So
memory is O(batch_size + largest cluster's kept traces + tasks), never O(traces); the disk
holds the surviving records once. The split, the audit and the GRPO rows need the observed
tasks, which the run keeps as read (``Curation.tasks``: each task validated once per run).
"""

from __future__ import annotations

import gc
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial

from sqlalchemy.orm import Session

from judging.axis import axis_for_miner
from judging.types import Axis
from storage.chat import normalise
from storage.conversion.convert import Converter
from storage.conversion.pool import ConversionPool
from storage.convert_stage import Outcome, convert_outcome, count_outcome, native_outcome
from storage.funnel import Funnel
from storage.gates import (
    MAIN,
    CurationConfig,
    Gate,
    Stream,
    axis_route,
    converts,
    hard_reject,
    reasoning_gate,
    turn_rewards,
)
from storage.records import JudgedTrace
from storage.signature import jaccard
from storage.split import Curation, split_and_audit, surviving_tasks
from storage.traces import PAGE_CHARS, iter_judged, judged_miners, recent_trajectories
from storage.workspace import KEPT, Observed, Row, Workspace

logger = logging.getLogger(__name__)


def curate(
    session: Session,
    workspace: Workspace,
    *,
    config: CurationConfig | None = None,
    audit_all_tasks: bool = False,
    progress: Callable[[int], None] | None = None,
    converter: Converter | None = None,
    workers: int = 1,
) -> Curation:
    """Run the funnel over every judged trace in the database.

    Args:
        session: the database session to stream from (one short read transaction per page).
        workspace: the scratch store the survivors go to (the caller closes it).
        config: selection and split settings (defaults documented on ``CurationConfig``).
        audit_all_tasks: the export writes a row for every observed task (GRPO), so the audit
            runs over all of them; otherwise over the tasks of the surviving traces.
        progress: called with the number of traces read after each page.
        converter: the search index the traces were judged on, the rationale writer and the
            conversion settings; None turns the conversion stage off (nothing to replay against):
            B traces then go aside and the other labels to convert are dropped, as before.
        workers: conversion worker processes (``storage.conversion.pool``), where the converter
            was opened from a spec (``ConverterSpec.open``); otherwise, or at 1, conversion runs
            in this process. The export is the same byte for byte either way.

    Raises:
        SplitLeakError: the task audit finds a leak across the train / eval split.
    """
    config = config or CurationConfig()
    funnel = Funnel(config=asdict(config))
    miner_axes = _miner_axes(session, config.miner_axis_sample)
    if miner_axes:
        funnel.stages["axis"].notes["miner_axes"] = dict(sorted(Counter(miner_axes.values()).items()))
    curation = Curation(config=config, workspace=workspace, funnel=funnel)
    if converter is None and config.convert_axes:
        funnel.stages["convert"].notes["off"] = "no search index"
    job = partial(convert_outcome, config=config)
    count = workers if converter is not None and converter.spec is not None else 1
    # The workers start with this process's collector thresholds (a batch command's, raised).
    threshold = gc.get_threshold()
    with ConversionPool(job, converter=converter, workers=count, gc_threshold=threshold) as pool:
        read, last_seq = _ingest(session, curation, progress, miner_axes, pool)
    funnel.source = {"traces": read, "last_seq": last_seq}
    _dedup(workspace, config, funnel)
    task_ids = set(curation.tasks) if audit_all_tasks else surviving_tasks(workspace)
    split_and_audit(session, curation, task_ids)
    logger.info(
        "curate traces=%d kept=%d train=%d eval=%d",
        read,
        funnel.stages["split"].n_out,
        funnel.splits.get("train", {}).get("traces", 0),
        funnel.splits.get("eval", {}).get("traces", 0),
    )
    return curation


def _miner_axes(session: Session, sample: int) -> dict[str, Axis]:
    """Judge each miner's axis from its ``sample`` most recent trajectories, one miner at a time.

    Memory holds one miner's sample at once (``sample`` trajectories and their logs).
    """
    if sample < 1:
        return {}
    axes: dict[str, Axis] = {}
    for hotkey in judged_miners(session):
        pairs = recent_trajectories(session, hotkey=hotkey, limit=sample)
        if pairs:
            verdict = axis_for_miner([t for t, _ in pairs], [log for _, log in pairs])
            axes[hotkey] = verdict.label
    return axes


def _ingest(
    session: Session,
    curation: Curation,
    progress: Callable[[int], None] | None,
    miner_axes: dict[str, Axis],
    pool: ConversionPool[JudgedTrace, Outcome],
) -> tuple[int, int]:
    """Stream every trace through stages 1-6 into the workspace; the traces read and the last seq."""
    workspace, config, funnel = curation.workspace, curation.config, curation.funnel
    read, last_seq, page, page_chars = 0, 0, [], 0

    def take(outcomes: Iterator[Outcome]) -> None:
        nonlocal page_chars
        for outcome in outcomes:  # in trace order, whichever process converted
            row = count_outcome(funnel, outcome)
            if row is not None:
                page.append(row)
                page_chars += len(row.record)

    for trace in iter_judged(session, batch_size=config.batch_size):
        read, last_seq = read + 1, trace.seq
        _observe(trace, curation)
        _stages(trace, config, funnel, miner_axes.get(trace.episode.miner_hotkey), pool)
        take(pool.ready())
        if read % config.batch_size == 0 or page_chars >= PAGE_CHARS:
            workspace.add_traces(page)
            workspace.commit()
            page, page_chars = [], 0
            if progress:
                progress(read)
    take(pool.rest())
    workspace.add_traces(page)
    workspace.commit()
    if progress:
        progress(read)
    return read, last_seq


def _observe(trace: JudgedTrace, curation: Curation) -> None:
    """What the split, the audit and the GRPO rows need of every trace read, kept or not."""
    curation.tasks.setdefault(trace.task.task_id, trace.task)
    if trace.episode.world_id is not None:
        curation.worlds.setdefault(
            trace.task.task_id,
            {"world_id": trace.episode.world_id, "pack_hash": trace.episode.pack_hash},
        )
    curation.workspace.add_observed(
        [
            Observed(
                seq=trace.seq,
                task_id=trace.task.task_id,
                episode_id=trace.episode.episode_id,
                miner=trace.episode.miner_hotkey,
                score=trace.judgment.score,
                success=trace.judgment.success,
                turn_rewards=tuple(turn_rewards(trace)),
            )
        ]
    )


def _stages(
    trace: JudgedTrace,
    config: CurationConfig,
    funnel: Funnel,
    miner_axis: Axis | None,
    pool: ConversionPool[JudgedTrace, Outcome],
) -> None:
    """Run stages 1-4 on one trace; hand what survives to stage 5 (``pool``: converted, or as it is)."""
    funnel.entered("normalise")
    record = normalise(trace)
    if isinstance(record, str):
        funnel.drop("normalise", record)
        return
    funnel.passed("normalise")
    funnel.entered("hard_rejects")
    reason = hard_reject(trace)
    if reason:
        funnel.drop("hard_rejects", reason)
        return
    funnel.passed("hard_rejects")
    stream = _gate(funnel, "reasoning_gate", reasoning_gate(trace.judgment, config))
    converting = pool.converter is not None
    if stream == MAIN:
        route = axis_route(trace.judgment, config, miner_axis, convert=converting)
        stream = _gate(funnel, "axis", route)
    if stream is None:
        return
    if stream == MAIN and converting and converts(trace.judgment, config, miner_axis):
        pool.submit(trace)
    else:
        pool.add(native_outcome(trace, record, stream, config))


def _gate(funnel: Funnel, stage: str, gate: Gate) -> Stream | None:
    """Count one trace through a gate; return the stream it goes on in, or None when it is dropped."""
    funnel.entered(stage)
    if gate.action == "pass":
        funnel.passed(stage)
    elif gate.action == "aside":
        funnel.set_aside(stage, gate.stream)
    else:
        funnel.drop(stage, gate.reason)
        return None
    return gate.stream


def _dedup(workspace: Workspace, config: CurationConfig, funnel: Funnel) -> None:
    """Stage 7: per leak cluster, best-ranked first, drop exact and near duplicates, then apply the caps."""
    total, low, high = 0.0, 1.0, 0.0
    cluster: str | None = None
    state = _ClusterState()
    decisions: list[tuple[int, str]] = []
    for row in workspace.ranked(MAIN):
        if row.cluster != cluster:
            cluster, state = row.cluster, _ClusterState()
        funnel.entered("dedup")
        total, low, high = total + row.structural, min(low, row.structural), max(high, row.structural)
        verdict = state.decide(row, config)
        decisions.append((row.seq, verdict))
        if verdict == KEPT:
            funnel.passed("dedup")
        else:
            funnel.drop("dedup", verdict)
        if len(decisions) >= config.batch_size:
            workspace.decide(decisions)
            decisions = []
    workspace.decide(decisions)
    workspace.commit()
    ranked = funnel.stages["ranking"].n_out
    if ranked:
        funnel.stages["ranking"].notes = {
            "structural_mean": round(total / ranked, 4),
            "structural_min": low,
            "structural_max": high,
        }


@dataclass
class _ClusterState:
    """What dedup remembers within one leak cluster: kept signatures, kept step sets by answer, cap counts."""

    exact: set[str] = field(default_factory=set)
    steps_by_answer: dict[tuple[str, ...], list[frozenset[str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    per_task_miner: Counter[tuple[str, str, bool]] = field(default_factory=Counter)
    per_task: Counter[tuple[str, bool]] = field(default_factory=Counter)

    def decide(self, row: Row, config: CurationConfig) -> str:
        if row.exact in self.exact:
            return "exact_duplicate"
        similar = self.steps_by_answer[row.answer]
        if any(jaccard(row.steps, kept) >= config.near_dup_threshold for kept in similar):
            return "near_duplicate"
        if self.per_task_miner[(row.task_id, row.miner, row.success)] >= config.cap_per_task_miner:
            return "cap_task_miner"
        if self.per_task[(row.task_id, row.success)] >= config.cap_per_task:
            return "cap_task"
        self.exact.add(row.exact)
        similar.append(row.steps)
        self.per_task_miner[(row.task_id, row.miner, row.success)] += 1
        self.per_task[(row.task_id, row.success)] += 1
        return KEPT
