"""The ``convert`` stage's work on one trace: its conversion, as a worker runs it, and its keys before it.

:func:`convert_outcome` is what a conversion worker runs (``curation.conversion.pool``): the
conversion, the converted trace's canonical record and its workspace row, so what crosses
back to the curating process is one compact :class:`Outcome` (a row of strings and numbers),
not the converted trace's models. ``curation.stages.dedup`` counts it, in walk order, whichever
process converted. The walk that decides which traces to convert is ``curation.stages.dedup``.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena.arguments import split_product_ids
from curation.chat import RECOMMEND, normalise
from curation.config import CurationConfig
from curation.conversion.convert import Converter, convert_judged, run_now
from curation.conversion.pruning import prune, questions_scored
from curation.conversion.results import ConversionConfig, Converted
from curation.signature import Strategy, strategy_of
from curation.stages.stage import MAIN
from curation.survivor import workspace_row
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
    """Convert a main-stream trace: its converted row, or the drop (a worker's job)."""
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
    answers = [e.arguments.get("product_ids") for e in kept if e.tool == RECOMMEND]
    ids, _ = split_product_ids(answers[-1] if answers else None)
    return strategy_of([(e.tool, dict(e.arguments)) for e in kept], ids)


__all__ = ["Outcome", "convert_outcome", "prospective_keys"]
