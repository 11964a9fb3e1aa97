"""The ``sft`` format: each positive kept trace, whole, with its tools (TRL's ``SFTTrainer``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from datasets import Features

from curation.chat import schemas
from curation.curate import Curation
from curation.formats.checks import conversation
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


def sft_row(
    record: dict[str, Any], provenance: Provenance = NATIVE_COLUMNS, world: World = STATIC_WORLD
) -> dict[str, Any]:
    """The whole conversation and its tools (conversational language modeling)."""
    return {"messages": record["messages"], "tools": schemas(record["toolset"]), **provenance, **world}


def rows(curation: Curation) -> Iterator[ExportRow]:
    """The positive kept traces (``Row.label``), in ingest order."""
    for row in curation.workspace.kept(MAIN):
        if row.label:
            made = sft_row(row.document, row.provenance, row.world)
            yield ExportRow(made, row.episode_id, row.task_id, row.cluster, (row,))


def check(row: dict[str, Any], tools: set[str], problems: list[str]) -> None:
    """The conversation opens with the prompt and every call is answered."""
    conversation(row["messages"], "messages", tools, problems, prompt_first=True)


FORMAT = Format(
    name="sft",
    features=Features({"messages": CONVERSATION, "tools": TOOLS, **PROVENANCE, **WORLD}),
    build=rows,
    check=check,
    card_columns=("messages", "tools"),
    dataset_type="conversational language modeling, with tools",
    trainer="SFTTrainer",
)
