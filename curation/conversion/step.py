"""What a rationale writer is given for one call, and the interface both writers implement.

A :class:`Step` is one logged call of the converted trace at the moment the agent makes it:
the call (tool and canonical arguments), the item of the request it serves, and the fact table
as it stands *before* the call's result (the user's query, earlier results, earlier calls).
A writer returns the reasoning for that call; :mod:`curation.conversion.verify` then checks it
against the same table, whoever wrote it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from arena.tools import ToolKind, tool_kind
from arena.types import ToolLogEntry
from curation.conversion.facts import FactTable, Item, TaskFacts


@dataclass(frozen=True)
class Step:
    """One call to justify and what the agent knows when it makes it.

    Attributes:
        index: the call's position in the converted trace (0-based).
        entry: the logged call (its result is what comes *after* the reasoning).
        item: the item of the request the call serves, where one does (searches), else None.
        facts: the fact table before the call's result (read only while writing).
        seed: the phrasing seed (derived from the source trace's hash and the index).
    """

    index: int
    entry: ToolLogEntry
    item: Item | None
    facts: FactTable
    seed: int

    @property
    def tool(self) -> str:
        """The called tool."""
        return self.entry.tool

    @property
    def kind(self) -> ToolKind | None:
        """The called tool's kind (``arena.tools.tool_kind``; None: no tool set has it)."""
        return tool_kind(self.entry.tool)

    @property
    def arguments(self) -> dict[str, Any]:
        """The call's canonical arguments (as the tool server logged and ran them)."""
        return self.entry.arguments

    @property
    def task(self) -> TaskFacts:
        """What the user's query states."""
        return self.facts.task


def step_seed(source_hash: str, index: int) -> int:
    """A stable phrasing seed per (trace, step): the same trace is always written the same way."""
    return int.from_bytes(hashlib.sha256(f"{source_hash}:{index}".encode()).digest()[:8], "big")


class RationaleWriter(Protocol):
    """Writes the reasoning of one step; the conversion verifies it and may ask again.

    ``attempt`` counts from 0; on a retry ``problems`` says what the verifier refused in the
    previous answer (a teacher model reads it; the template writer picks other phrasings).
    """

    @property
    def provenance(self) -> str:
        """Who writes (the export's ``writer``): ``template/<n>`` or ``teacher:<model>@<prompt hash>``."""
        ...

    async def write(self, step: Step, *, attempt: int, problems: Sequence[str]) -> str:
        """Return the reasoning for ``step``."""
        ...
