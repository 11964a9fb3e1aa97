"""An export format as one record (``Format``), and the columns every format shares.

A format is its name, its row schema (``datasets.Features``: the Parquet schema, and what JSONL
loads with), its row builder (the finished curation in, its rows out), its own row checks (run
by ``curation.formats.checks.validate_row`` after the checks every format shares) and its line
in the dataset card's format table.

Shared columns: SFT, KTO and DPO rows carry the provenance columns (``PROVENANCE_COLUMNS``):
``origin`` (``native``: the miner's own trace; ``converted``: rewritten by
``curation.conversion``) and, for a converted row, ``source_hash`` (the source trace's content
hash), ``converter_version`` and ``writer`` (``template/<n>`` or ``teacher:<model>@<prompt
hash>``); trainers may filter on them. Every row carries the world columns (``WORLD_COLUMNS``):
``world_id`` and ``pack_hash`` of the world pack the trace (or the GRPO row's task) ran on, both
null for static ``sb-1`` tasks.

Messages follow ``curation.chat`` (six keys, tool-call ``arguments`` a dict). In Parquet,
``arguments``, each tool schema and ``ground_truth`` are ``datasets.Json`` columns: stored as JSON
text, read back as the same objects, so arguments with different keys never get each other's
keys filled with None (what Arrow's struct inference does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from datasets import Features, Json, List, Value

from curation.chat import schemas
from curation.curate import Curation
from curation.workspace import Row

_MESSAGE = {
    "role": Value("string"),
    "content": Value("string"),
    "reasoning_content": Value("string"),
    "tool_calls": List(
        {
            "id": Value("string"),
            "type": Value("string"),
            "function": {"name": Value("string"), "arguments": Json()},
        }
    ),
    "tool_call_id": Value("string"),
    "name": Value("string"),
}
CONVERSATION = List(_MESSAGE)
TOOLS = List(Json())
PROVENANCE_COLUMNS = ("origin", "source_hash", "converter_version", "writer")
ORIGINS = ("native", "converted")
# A rollout row (``curation.rollouts``: a policy's own verified episode in the RL environment) is
# native data made by a model: ``origin: rollout``, and three more columns: the policy, its
# weights' hash and the samples per task it was drawn from.
ROLLOUT = "rollout"
ROLLOUT_COLUMNS = ("policy", "weights_hash", "k")
PROVENANCE = {name: Value("string") for name in PROVENANCE_COLUMNS}
WORLD_COLUMNS = ("world_id", "pack_hash")
WORLD = {name: Value("string") for name in WORLD_COLUMNS}

Provenance = Mapping[str, str | None]
NATIVE_COLUMNS: Provenance = {
    "origin": "native",
    "source_hash": None,
    "converter_version": None,
    "writer": None,
}
World = Mapping[str, str | None]
STATIC_WORLD: World = {"world_id": None, "pack_hash": None}


def trace_features(columns: dict[str, Any]) -> Features:
    """The schema of a format made of kept traces: its own columns, then tools, provenance and world."""
    return Features({**columns, "tools": TOOLS, **PROVENANCE, **WORLD})


def trace_columns(row: Row, provenance: Provenance | None = None) -> dict[str, Any]:
    """What a row made of a kept trace ends with: its tool schemas, its provenance and its world."""
    return {"tools": schemas(row.document["toolset"]), **(provenance or row.provenance), **row.world}


@dataclass(frozen=True)
class ExportRow:
    """One row a format built, with what the manifest and the card record of it.

    Attributes:
        row: the row, in the format's columns.
        provenance: the manifest's entry for it (an episode id; a DPO pair's [chosen, rejected];
            a GRPO row's task id).
        task_id: the task it is of.
        cluster: that task's leak cluster (its side of the split).
        traces: the kept traces it is made of (the manifest lists their episodes, the card counts
            their versions); none for a row made of a task alone.
    """

    row: dict[str, Any]
    provenance: Any
    task_id: str
    cluster: str
    traces: tuple[Row, ...] = ()


@dataclass(frozen=True)
class Format:
    """One export format: adding one is a module holding its record and a line in ``FORMATS``.

    Attributes:
        name: the files' stem (``sft.jsonl``, ``sft.parquet``) and the ``--format`` choice.
        features: the row's columns and types.
        build: the row builder: a finished curation in, its rows out (in file order).
        check: the format's own checks of one row, after the shared ones (exact columns, tools,
            provenance and world columns): ``check(row, tool_names, problems)`` appends problems.
        card_columns: the columns the dataset card's format table names.
        dataset_type: TRL's dataset type, as the card states it.
        trainer: the TRL trainer that takes it.
        every_task: one row per observed task, so the split's audit covers every task observed,
            not only those of the kept traces.
    """

    name: str
    features: Features
    build: Callable[[Curation], Iterable[ExportRow]]
    check: Callable[[dict[str, Any], set[str], list[str]], None]
    card_columns: tuple[str, ...]
    dataset_type: str
    trainer: str
    every_task: bool = False

    @property
    def provenance(self) -> bool:
        """Whether its rows carry the provenance columns (and are counted native or converted)."""
        return "origin" in self.features

    @property
    def card_line(self) -> str:
        """Its row of the dataset card's format table."""
        columns = ", ".join(f"`{column}`" for column in self.card_columns)
        return f"| `{self.name}` | {columns} | {self.dataset_type} | `{self.trainer}` |"
