"""The ``kto`` format: every kept trace as prompt, completion and its absolute label (``KTOTrainer``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from datasets import Value

from curation.curate import Curation
from curation.formats.checks import conversation, prompt
from curation.formats.format import CONVERSATION, ExportRow, Format, trace_columns, trace_features
from curation.stages.stage import MAIN
from curation.workspace import Row


def kto_row(row: Row) -> dict[str, Any]:
    """The prompt, the agent's completion and the absolute label (conversational unpaired preference)."""
    messages, cut = row.document["messages"], row.document["prompt_length"]
    return {"prompt": messages[:cut], "completion": messages[cut:], "label": row.label, **trace_columns(row)}


def rows(curation: Curation) -> Iterator[ExportRow]:
    """Every kept trace with its label (``curation.labels.positive``), in ingest order."""
    for row in curation.workspace.kept(MAIN):
        yield ExportRow(kto_row(row), row.episode_id, row.task_id, row.cluster, (row,))


def check(row: dict[str, Any], tools: set[str], problems: list[str]) -> None:
    """The prompt alone, a completion from the assistant on, a boolean label."""
    prompt(row["prompt"], problems)
    conversation(row["completion"], "completion", tools, problems)
    if not isinstance(row["label"], bool):
        problems.append("label must be a bool")


FORMAT = Format(
    name="kto",
    features=trace_features({"prompt": CONVERSATION, "completion": CONVERSATION, "label": Value("bool")}),
    build=rows,
    check=check,
    card_columns=("prompt", "completion", "label", "tools"),
    dataset_type="conversational unpaired preference",
    trainer="KTOTrainer",
)
