"""One trace's workspace row, and its conversion (curation's stage 6) where its label asks for one.

:func:`convert_outcome` is what a conversion worker runs (``curation.conversion.pool``): the
conversion, the converted trace's canonical record and its workspace row, so what crosses
back to the curating process is one compact :class:`Outcome` (a row of strings and numbers),
not the converted trace's models. ``curation.dedup`` counts it, in walk order, whichever
process converted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from arena.arguments import split_product_ids
from arena.tools import tool_kind
from curation.chat import ChatRecord, normalise
from curation.conversion.convert import Converter, convert_judged, run_now
from curation.conversion.pruning import prune, questions_scored
from curation.conversion.results import NATIVE, ConversionConfig, Converted, Provenance
from curation.gates import MAIN, CurationConfig, Stream, cluster_of, grounded, positive
from curation.signature import Strategy, strategy, strategy_of, structural_score
from curation.workspace import Row
from storage.records import JudgedTrace


@dataclass(frozen=True)
class Outcome:
    """A conversion as the funnel counts it: the converted row, or None and the drop reason.

    ``pruned_calls`` and ``unpruned``: the conversion's pruning, for the stage's notes.
    """

    row: Row | None
    drop: str | None = None
    pruned_calls: int = 0
    unpruned: int = 0


def convert_outcome(converter: Converter, trace: JudgedTrace, *, config: CurationConfig) -> Outcome:
    """Stage 5 on a main-stream trace to convert: its converted row, or the drop (a worker's job)."""
    result = run_now(lambda: convert_judged(trace, converter))
    if not isinstance(result, Converted):
        return Outcome(None, drop=result.reason)
    converted = trace.model_copy(
        update={"trajectory": result.trajectory, "tool_log": result.tool_log, "judgment": result.judgment}
    )
    record = normalise(converted)
    if isinstance(record, str):  # the converter writes the canonical schema: a bug, counted not raised
        return Outcome(None, drop=f"normalise:{record}")
    row = workspace_row(converted, record, MAIN, config, result.provenance)
    return Outcome(row, pruned_calls=len(result.pruned), unpruned=int(result.unpruned))


def prospective_keys(trace: JudgedTrace, config: ConversionConfig) -> Strategy:
    """The dedup keys ``trace`` will have once converted: those of the calls conversion keeps.

    A converted trajectory makes exactly the kept calls of the log, with their logged arguments,
    and answers with the last ``recommend_product`` among them (pruning keeps the answer), so
    dedup can screen a source before paying for its conversion. Where the conversion later
    keeps every call (a pruned replay that differed), its own keys are checked again.
    """
    entries = tuple(sorted(trace.tool_log, key=lambda e: e.seq))
    kept = prune(entries, keep_questions=questions_scored(trace.judgment)).kept if config.prune else entries
    answers = [e.arguments.get("product_ids") for e in kept if tool_kind(e.tool) == "answer"]
    ids, _ = split_product_ids(answers[-1] if answers else None)
    return strategy_of([(e.tool, dict(e.arguments)) for e in kept], ids)


def workspace_row(
    trace: JudgedTrace,
    record: ChatRecord,
    stream: Stream,
    config: CurationConfig,
    provenance: Provenance = NATIVE,
    *,
    pending: Strategy | None = None,
) -> Row:
    """The row a surviving trace leaves in the workspace: dedup keys, rank, record, provenance.

    ``pending``: the trace is to convert, and these are its keys once converted
    (:func:`prospective_keys`); its row ranks as a converted one (natives of its task first) and
    holds the source until dedup converts it (``curation.dedup``).
    """
    judgment, task = trace.judgment, trace.task
    keys = pending or strategy(record)
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
        origin="converted" if pending is not None else provenance.origin,
        source_hash=provenance.source_hash,
        converter_version=provenance.converter_version,
        writer=provenance.writer,
        world_id=trace.episode.world_id,
        pack_hash=trace.episode.pack_hash,
        pending=pending is not None,
    )


__all__ = ["Outcome", "convert_outcome", "prospective_keys", "workspace_row"]
