"""The ``sft`` format: each positive kept trace, whole, with its tools (TRL's ``SFTTrainer``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from curation.curate import Curation
from curation.formats.checks import conversation
from curation.formats.format import CONVERSATION, ExportRow, Format, trace_columns, trace_features
from curation.stages.stage import MAIN
from curation.workspace import Row


def sft_row(row: Row) -> dict[str, Any]:
    """The whole conversation and its tools (conversational language modeling)."""
    return {"messages": row.document["messages"], **trace_columns(row)}


def rows(curation: Curation) -> Iterator[ExportRow]:
    """The positive kept traces (``Row.label``), in ingest order."""
    for row in curation.workspace.kept(MAIN):
        if row.label:
            yield ExportRow(sft_row(row), row.episode_id, row.task_id, row.cluster, (row,))


def check(row: dict[str, Any], tools: set[str], problems: list[str]) -> None:
    """The conversation opens with the prompt and every call is answered."""
    conversation(row["messages"], "messages", tools, problems, prompt_first=True)


FORMAT = Format(
    name="sft",
    features=trace_features({"messages": CONVERSATION}),
    build=rows,
    check=check,
    card_columns=("messages", "tools"),
    dataset_type="conversational language modeling, with tools",
    trainer="SFTTrainer",
)
