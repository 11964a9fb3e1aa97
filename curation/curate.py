"""The curation funnel: judged traces streamed from the database into ranked, deduplicated, split candidates.

The stages, in order (``curation.stages.STAGES``; one module each under ``curation.stages``):
``normalise``, ``hard_rejects``, ``reasoning_gate``, ``axis``, ``ranking``, ``convert`` (traces
of the labels to convert become agentic trajectories, ``curation.conversion``, when dedup
reaches them and their caps are open; every other trace passes as it is), ``dedup`` (and the
caps), ``split`` (with the task audit enforced). Ranking runs before dedup, because dedup
collapses each group onto its best-ranked trace; conversion runs inside dedup's walk
(``curation.stages.dedup``), because most traces of a busy task are capped, and converting them
first was most of curation's time.

Memory. One pass reads the database page by page (``iter_judged``, ``batch_size`` traces, fewer
where their trajectories reach ``storage.traces.PAGE_CHARS``; the workspace is written at the
same bound); the stages up to ``ranking`` are per trace, and each survivor goes to an on-disk
``Workspace`` as one compact ``Row`` (canonical record, dedup keys, rank; a trace to convert as
its source, pending). ``convert`` and ``dedup`` then walk the workspace one leak cluster at a
time, best-ranked first, holding only that cluster's kept step sets and cap counters, and the
pool's window of sources being converted (re-read from the database). So memory is
O(batch_size + window + largest cluster's kept traces + tasks), never O(traces); the disk holds
the surviving records once. The split, the audit and the GRPO rows need the observed tasks,
which the run keeps as read (``Curation.tasks``: each task validated once per run).
"""

from __future__ import annotations

import gc
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from sqlalchemy.orm import Session

from arena.audit import AuditReport
from arena.types import Task
from curation.chat import normalise
from curation.config import CurationConfig
from curation.conversion.convert import Converter
from curation.conversion.pool import IN_PROCESS, ConversionPool, Job, Workers
from curation.funnel import Funnel
from curation.rewards import turn_rewards
from curation.stages import TRACE_GATES
from curation.stages.axis import converts
from curation.stages.convert import (
    FIXES,
    NO_INDEX,
    Outcome,
    conversion_off,
    convert_outcome,
    prospective_keys,
)
from curation.stages.dedup import dedup
from curation.stages.split import Split, side_of, split_and_audit, surviving_tasks
from curation.stages.stage import MAIN, Gate, Stream, TraceContext
from curation.survivor import workspace_row
from curation.workspace import Observed, Row, Workspace
from judging.axis import axis_for_miner
from judging.types import Axis
from storage.records import JudgedTrace
from storage.traces import PAGE_CHARS, iter_judged, judged_miners, recent_trajectories

logger = logging.getLogger(__name__)


@dataclass
class Curation:
    """A finished curation run: its workspace (surviving traces), observed tasks, funnel, split and audit."""

    config: CurationConfig
    workspace: Workspace
    funnel: Funnel
    tasks: dict[str, Task] = field(default_factory=dict)  # every observed task, by id
    # The world each observed world task ran on ({"world_id", "pack_hash"}); static tasks are absent.
    worlds: dict[str, dict[str, str | None]] = field(default_factory=dict)
    cluster_split: dict[str, Split] = field(default_factory=dict)
    audit: AuditReport | None = None

    def split(self, cluster: str) -> Split:
        """The side of the split a leak cluster is on."""
        return side_of(cluster, self.cluster_split, self.config)


def curate(
    session: Session,
    workspace: Workspace,
    *,
    config: CurationConfig | None = None,
    audit_all_tasks: bool = False,
    progress: Callable[[int], None] | None = None,
    converter: Converter | None = None,
    conversion_off_because: str = NO_INDEX,
    workers: Workers = IN_PROCESS,
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
            B traces then go aside and the other labels to convert are dropped, and the
            ``convert`` stage's notes say so (``curation.stages.convert.conversion_off``).
        conversion_off_because: why there is no converter, as the notes state it.
        workers: conversion worker processes (``curation.conversion.pool``), where the converter
            was opened from a spec (``ConverterSpec.open``); otherwise, or at one, conversion runs
            in this process. The export is the same byte for byte either way.

    Raises:
        SplitLeakError: the task audit finds a leak across the train / eval split.
    """
    config = config or CurationConfig()
    funnel = Funnel(config=config.model_dump())
    miner_axes = _miner_axes(session, config.miner_axis_sample)
    if miner_axes:
        funnel.stages["axis"].notes["miner_axes"] = dict(sorted(Counter(miner_axes.values()).items()))
    curation = Curation(config=config, workspace=workspace, funnel=funnel)
    read, last_seq = _ingest(session, curation, progress, miner_axes, converter)
    if converter is None and config.convert_axes:
        funnel.stages["convert"].notes["off"] = conversion_off(funnel, config, why=conversion_off_because)
    funnel.source = {"traces": read, "last_seq": last_seq}
    job: Job[JudgedTrace, Outcome | None] = partial(convert_outcome, config=config)
    if converter is None or converter.spec is None:
        workers = IN_PROCESS  # nothing to convert, or a converter that stays in this process
    # The workers start with this process's collector thresholds (a batch command's, raised).
    threshold = gc.get_threshold()
    with ConversionPool(job, converter=converter, workers=workers, gc_threshold=threshold) as pool:
        dedup(workspace, config, funnel, session=session, pool=pool)
    fixes = {cause: FIXES[cause] for cause in funnel.stages["convert"].dropped if cause in FIXES}
    if fixes:  # traces the conversion could not run on for want of something the caller can give
        funnel.stages["convert"].notes["fix"] = fixes
    task_ids = set(curation.tasks) if audit_all_tasks else surviving_tasks(workspace)
    exported = [curation.tasks[task_id] for task_id in sorted(task_ids)]
    curation.cluster_split, curation.audit = split_and_audit(
        session, exported=exported, workspace=workspace, funnel=funnel, config=config
    )
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
    converter: Converter | None,
) -> tuple[int, int]:
    """Stream every trace through the per-trace stages into the workspace; the traces read, the last seq."""
    workspace, config, funnel = curation.workspace, curation.config, curation.funnel
    read, last_seq, page, page_chars = 0, 0, [], 0
    for trace in iter_judged(session, batch_size=config.batch_size):
        read, last_seq = read + 1, trace.seq
        _observe(trace, curation)
        row = _stages(trace, config, funnel, miner_axes.get(trace.episode.miner_hotkey), converter)
        if row is not None:
            page.append(row)
            page_chars += len(row.record)
        if read % config.batch_size == 0 or page_chars >= PAGE_CHARS:
            workspace.add_traces(page)
            workspace.commit()
            page, page_chars = [], 0
            if progress:
                progress(read)
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
    converter: Converter | None,
) -> Row | None:
    """Run the per-trace stages on one trace; its workspace row (pending where it is to convert), or None."""
    funnel.entered("normalise")
    record = normalise(trace)
    if isinstance(record, str):
        funnel.drop("normalise", record)
        return None
    funnel.passed("normalise")
    context = TraceContext(config, miner_axis, converting=converter is not None)
    for name, gate in TRACE_GATES:
        stream = _gate(funnel, name, gate(trace, context))
        if stream is None:
            return None
        if stream != MAIN:  # set aside: written to its stream's file, past the later stages
            return workspace_row(trace, record, stream, config)
    funnel.entered("ranking")
    funnel.passed("ranking")
    if converter is not None and converts(trace.judgment, config, miner_axis):
        keys = prospective_keys(trace, converter.config)
        return workspace_row(trace, record, MAIN, config, pending=keys)
    return workspace_row(trace, record, MAIN, config)


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
