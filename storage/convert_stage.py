"""Curation's stages 5 and 6 for one trace: its conversion where its label asks for one, its workspace row.

:func:`convert_outcome` is what a conversion worker runs (``storage.conversion.pool``): the
conversion, the converted trace's canonical record and its workspace row, so what crosses
back to the curating process is one compact :class:`Outcome` (a row of strings and numbers),
not the converted trace's models. :func:`count_outcome` is the funnel's side, run in trace
order by the curating process whichever process converted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from storage.chat import ChatRecord, normalise
from storage.conversion.convert import Converter, convert_judged, run_now
from storage.conversion.results import NATIVE, Converted, Provenance
from storage.funnel import Funnel
from storage.gates import MAIN, CurationConfig, Stream, cluster_of, grounded, positive
from storage.records import JudgedTrace
from storage.signature import strategy, structural_score
from storage.workspace import Row


@dataclass(frozen=True)
class Outcome:
    """One trace past stage 4: its workspace row (None: dropped at conversion) and what the funnel counts.

    ``main``: it went through stages 5 and 6 (the main stream; a trace set aside did not).
    ``drop``: the conversion's drop reason. ``pruned_calls`` and ``unpruned``: the conversion's
    pruning, for the stage's notes.
    """

    row: Row | None
    main: bool
    drop: str | None = None
    pruned_calls: int = 0
    unpruned: int = 0


def native_outcome(trace: JudgedTrace, record: ChatRecord, stream: Stream, config: CurationConfig) -> Outcome:
    """A trace that stays as it is (not converted, or set aside)."""
    return Outcome(workspace_row(trace, record, stream, config), main=stream == MAIN)


def convert_outcome(converter: Converter, trace: JudgedTrace, *, config: CurationConfig) -> Outcome:
    """Stage 5 on a main-stream trace to convert: its converted row, or the drop (a worker's job)."""
    result = run_now(lambda: convert_judged(trace, converter))
    if not isinstance(result, Converted):
        return Outcome(None, main=True, drop=result.reason)
    converted = trace.model_copy(
        update={"trajectory": result.trajectory, "tool_log": result.tool_log, "judgment": result.judgment}
    )
    record = normalise(converted)
    if isinstance(record, str):  # the converter writes the canonical schema: a bug, counted not raised
        return Outcome(None, main=True, drop=f"normalise:{record}")
    row = workspace_row(converted, record, MAIN, config, result.provenance)
    return Outcome(row, main=True, pruned_calls=len(result.pruned), unpruned=int(result.unpruned))


def count_outcome(funnel: Funnel, outcome: Outcome) -> Row | None:
    """Count a trace through stages 5 and 6 (main stream only); return its row, or None when dropped."""
    if not outcome.main:
        return outcome.row
    funnel.entered("convert")
    if outcome.row is None:
        funnel.drop("convert", outcome.drop or "unknown")
        return None
    notes = funnel.stages["convert"].notes
    if outcome.row.origin == "converted":
        for key, n in (("pruned_calls", outcome.pruned_calls), ("unpruned", outcome.unpruned)):
            notes[key] = notes.get(key, 0) + n
    funnel.passed("convert")
    notes[outcome.row.origin] = notes.get(outcome.row.origin, 0) + 1
    funnel.entered("ranking")
    funnel.passed("ranking")
    return outcome.row


def workspace_row(
    trace: JudgedTrace,
    record: ChatRecord,
    stream: Stream,
    config: CurationConfig,
    provenance: Provenance = NATIVE,
) -> Row:
    """The row a surviving trace leaves in the workspace: dedup keys, rank, record, provenance."""
    judgment, task = trace.judgment, trace.task
    keys = strategy(record)
    versions = {
        "scorer": judgment.versions.scorer,
        "judge_model": judgment.versions.judge_model,
        "prompt_hash": judgment.versions.prompt_hash,
        "catalog": judgment.versions.catalog_version or task.catalog_version,
        "toolset": record.toolset,
        "generator": task.generator_version,
    }
    document = {"messages": record.messages, "prompt_length": record.prompt_length, "toolset": record.toolset}
    return Row(
        seq=trace.seq,
        episode_id=trace.episode.episode_id,
        task_id=task.task_id,
        cluster=cluster_of(task),
        miner=trace.episode.miner_hotkey,
        stream=stream,
        success=judgment.success,
        label=positive(judgment, config),
        grounded=grounded(judgment),
        score=judgment.score,
        structural=structural_score(judgment),
        exact=keys.exact,
        steps=keys.steps,
        answer=keys.answer,
        judgment_hash=judgment.content_hash,
        versions=versions,
        record=json.dumps(document, ensure_ascii=False),
        origin=provenance.origin,
        source_hash=provenance.source_hash,
        converter_version=provenance.converter_version,
        writer=provenance.writer,
        world_id=trace.episode.world_id,
        pack_hash=trace.episode.pack_hash,
    )


__all__ = ["Outcome", "convert_outcome", "count_outcome", "native_outcome", "workspace_row"]
