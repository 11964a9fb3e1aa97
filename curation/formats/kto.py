"""The ``kto`` format: every kept trace as prompt, completion and its absolute label (``KTOTrainer``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from datasets import Features, Value

from curation.chat import schemas
from curation.curate import Curation
from curation.formats.checks import conversation, prompt
from curation.formats.format import (
    CONVERSATION,
    NATIVE_COLUMNS,
    PROVENANCE,
    STATIC_WORLD,
    TOOLS,
    WORLD,
    ExportRow,
    Format,
    Provenance,
    World,
)
from curation.stages.stage import MAIN


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


def rows(curation: Curation) -> Iterator[ExportRow]:
    """Every kept trace with its label (``curation.labels.positive``), in ingest order."""
    for row in curation.workspace.kept(MAIN):
        made = kto_row(row.document, label=row.label, provenance=row.provenance, world=row.world)
        yield ExportRow(made, row.episode_id, row.task_id, row.cluster, (row,))


def check(row: dict[str, Any], tools: set[str], problems: list[str]) -> None:
    """The prompt alone, a completion from the assistant on, a boolean label."""
    prompt(row["prompt"], problems)
    conversation(row["completion"], "completion", tools, problems)
    if not isinstance(row["label"], bool):
        problems.append("label must be a bool")


FORMAT = Format(
    name="kto",
    features=Features(
        {
            "prompt": CONVERSATION,
            "completion": CONVERSATION,
            "label": Value("bool"),
            "tools": TOOLS,
            **PROVENANCE,
            **WORLD,
        }
    ),
    build=rows,
    check=check,
    card_columns=("prompt", "completion", "label", "tools"),
    dataset_type="conversational unpaired preference",
    trainer="KTOTrainer",
)
