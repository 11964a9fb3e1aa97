"""The ``dpo`` format: positives paired with grounded failures of the same prompt (TRL's ``DPOTrainer``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from arena.types import canonical_json
from curation.curate import Curation
from curation.formats.checks import conversation, prompt
from curation.formats.format import (
    CONVERSATION,
    NATIVE_COLUMNS,
    ExportRow,
    Format,
    trace_columns,
    trace_features,
)
from curation.stages.stage import MAIN
from curation.workspace import RANK_ORDER, Row, Workspace


def dpo_row(chosen: Row, rejected: Row) -> dict[str, Any]:
    """A preference pair sharing one prompt and tool set (conversational preference, explicit prompt).

    Both sides are traces of one task, so of one world: the world columns are the chosen side's.
    """
    head, cut = chosen.document["messages"], chosen.document["prompt_length"]
    return {
        "prompt": head[:cut],
        "chosen": head[cut:],
        "rejected": rejected.document["messages"][rejected.document["prompt_length"] :],
        **trace_columns(chosen, pair_provenance(chosen, rejected)),
    }


def pair_provenance(chosen: Row, rejected: Row) -> dict[str, str | None]:
    """A DPO pair's provenance: ``converted`` when either side is; each column the converted sides' values.

    Where both sides are converted their source hashes are joined ``chosen+rejected`` (the other
    columns agree: one curation run has one converter).
    """
    sides = [row for row in (chosen, rejected) if row.origin == "converted"]
    if not sides:
        return dict(NATIVE_COLUMNS)
    return {
        "origin": "converted",
        "source_hash": "+".join(row.source_hash or "" for row in sides),
        "converter_version": sides[0].converter_version,
        "writer": sides[0].writer,
    }


def prompt_key(record: dict[str, Any]) -> str:
    """Identify a record's prompt and tools: DPO only pairs traces that saw exactly the same ones."""
    head = {"prompt": record["messages"][: record["prompt_length"]], "toolset": record["toolset"]}
    return hashlib.sha256(canonical_json(head).encode("utf-8")).hexdigest()[:32]


def dpo_pairs(rows: Sequence[Row]) -> Iterator[tuple[Row, Row]]:
    """Pair one task's kept traces: positives with grounded failures of the same prompt, rank by rank.

    ``rows`` are the task's kept traces, best-ranked first. Each trace is used at most once, so
    the best positive meets the best-ranked (hardest) failure, the second the second, and so on.
    """
    chosen: dict[str, list[Row]] = {}
    rejected: dict[str, list[Row]] = {}
    for row in rows:
        if row.label:
            chosen.setdefault(prompt_key(row.document), []).append(row)
        elif not row.success and row.grounded:
            rejected.setdefault(prompt_key(row.document), []).append(row)
    for key, good in chosen.items():
        yield from zip(good, rejected.get(key, []), strict=False)


def _pairs(workspace: Workspace) -> Iterable[tuple[Row, Row]]:
    """Yield DPO pairs task by task (one task's kept traces in memory at a time)."""
    group: list[Row] = []
    for row in workspace.kept(MAIN, order=f"task_id, {RANK_ORDER}"):
        if group and row.task_id != group[0].task_id:
            yield from dpo_pairs(group)
            group = []
        group.append(row)
    yield from dpo_pairs(group)


def rows(curation: Curation) -> Iterator[ExportRow]:
    """The pairs, task by task."""
    for chosen, rejected in _pairs(curation.workspace):
        pair = [chosen.episode_id, rejected.episode_id]
        yield ExportRow(dpo_row(chosen, rejected), pair, chosen.task_id, chosen.cluster, (rejected, chosen))


def check(row: dict[str, Any], tools: set[str], problems: list[str]) -> None:
    """The prompt alone, two completions from the assistant on, and not the same one twice."""
    prompt(row["prompt"], problems)
    conversation(row["chosen"], "chosen", tools, problems)
    conversation(row["rejected"], "rejected", tools, problems)
    if row["chosen"] == row["rejected"]:
        problems.append("chosen and rejected are the same")


FORMAT = Format(
    name="dpo",
    features=trace_features({"prompt": CONVERSATION, "chosen": CONVERSATION, "rejected": CONVERSATION}),
    build=rows,
    check=check,
    card_columns=("prompt", "chosen", "rejected", "tools"),
    dataset_type="conversational preference (explicit prompt)",
    trainer="DPOTrainer",
)
