"""Export rows from curated records: one builder per format (``curation.formats`` has their schemas).

A record is the workspace's canonical chat document: ``{"messages", "prompt_length", "toolset"}``;
the tool schemas come from the tool set (``curation.chat.schemas``), not from the record. SFT,
KTO and DPO rows end with the provenance columns (``curation.formats.PROVENANCE_COLUMNS``):
``Row.provenance`` of the trace (a DPO pair's are :func:`pair_provenance`). Every row ends with
the world columns (``curation.formats.WORLD_COLUMNS``): ``Row.world``, null for static tasks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from arena.tools import DEFAULT_TOOLSET
from arena.types import Task, canonical_json
from curation.chat import message, schemas
from curation.workspace import Observed, Row

Provenance = Mapping[str, str | None]
NATIVE_COLUMNS: Provenance = {
    "origin": "native",
    "source_hash": None,
    "converter_version": None,
    "writer": None,
}
World = Mapping[str, str | None]
STATIC_WORLD: World = {"world_id": None, "pack_hash": None}


def sft_row(
    record: dict[str, Any], provenance: Provenance = NATIVE_COLUMNS, world: World = STATIC_WORLD
) -> dict[str, Any]:
    """The whole conversation and its tools (conversational language modeling)."""
    return {"messages": record["messages"], "tools": schemas(record["toolset"]), **provenance, **world}


def kto_row(
    record: dict[str, Any],
    *,
    label: bool,
    provenance: Provenance = NATIVE_COLUMNS,
    world: World = STATIC_WORLD,
) -> dict[str, Any]:
    """The prompt, the agent's completion and the absolute label (conversational unpaired preference)."""
    cut = record["prompt_length"]
    return {
        "prompt": record["messages"][:cut],
        "completion": record["messages"][cut:],
        "label": label,
        "tools": schemas(record["toolset"]),
        **provenance,
        **world,
    }


def dpo_row(
    chosen: dict[str, Any],
    rejected: dict[str, Any],
    provenance: Provenance = NATIVE_COLUMNS,
    world: World = STATIC_WORLD,
) -> dict[str, Any]:
    """A preference pair sharing one prompt and tool set (conversational preference, explicit prompt).

    Both sides are traces of one task, so of one world: ``world`` is the chosen side's.
    """
    cut = chosen["prompt_length"]
    return {
        "prompt": chosen["messages"][:cut],
        "chosen": chosen["messages"][cut:],
        "rejected": rejected["messages"][rejected["prompt_length"] :],
        "tools": schemas(chosen["toolset"]),
        **provenance,
        **world,
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


def grpo_row(
    task: Task,
    *,
    best: dict[str, Any] | None,
    observed: Sequence[Observed],
    world: World = STATIC_WORLD,
) -> dict[str, Any]:
    """A task as an RL prompt with its ground truth and the rewards its served episodes got.

    The system message (and tool set) come from the task's best-ranked kept trace; a task
    with none gets the user message alone and the default tool set. ``observed`` is
    ``Workspace.observed(task_id)``: every judged episode of the task, in ingest order.
    """
    prompt = []
    if best is not None and best["prompt_length"] == 2:
        prompt.append(best["messages"][0])
    prompt.append(message("user", task.query))
    return {
        "prompt": prompt,
        "tools": schemas(best["toolset"] if best is not None else DEFAULT_TOOLSET),
        "task_id": task.task_id,
        "intent": task.intent,
        "ground_truth": {"task_id": task.task_id, **task.definition()},
        "observed_rewards": [o.score for o in observed],
        "observed_success": [o.success for o in observed],
        "observed_turn_rewards": [list(o.turn_rewards) for o in observed],
        **world,
    }


def aside_row(row: Row, record: dict[str, Any]) -> dict[str, Any]:
    """A trace set aside (axis B, unscored): the conversation plus what a later conversion needs."""
    return {
        "episode_id": row.episode_id,
        "task_id": row.task_id,
        "miner_hotkey": row.miner,
        "success": row.success,
        "score": row.score,
        "toolset": record["toolset"],  # its schemas: arena.tools.tool_schemas(toolset)
        "messages": record["messages"],
        **row.world,  # a world trace converts against its world's pack, not the base catalog
    }
