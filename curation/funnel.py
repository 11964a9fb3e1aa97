"""The curation funnel's bookkeeping: per stage, traces in and out, drop reasons, and what went aside.

Every stage keeps ``in == out + sum(dropped) + sum(aside)``: a trace leaves a stage by passing,
by being dropped for a named reason, or by being set aside into its own file (axis B traces,
unscored traces under ``unscored="separate"``). ``funnel.json`` is ``Funnel.to_json()`` plus
the export's row counts; its ``stages`` are keyed by the stages' names (``curation.stages``), in
the order they run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from curation.stages import STAGE_NAMES, STAGES

# /2: stages keyed by name, in run order (/1 listed them, each with a "stage" field).
FUNNEL_SCHEMA = "arena.funnel/2"


@dataclass
class StageCount:
    """One stage's counts."""

    name: str
    description: str
    n_in: int = 0
    n_out: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    aside: Counter[str] = field(default_factory=Counter)
    notes: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the stage as ``funnel.json`` writes it (under its name)."""
        return {
            "description": self.description,
            "in": self.n_in,
            "out": self.n_out,
            "dropped": dict(sorted(self.dropped.items())),
            "aside": dict(sorted(self.aside.items())),
            **({"notes": self.notes} if self.notes else {}),
        }


@dataclass
class Funnel:
    """The counts of a curation run, stage by stage (``curation.stages.STAGES``)."""

    stages: dict[str, StageCount] = field(
        default_factory=lambda: {stage.name: StageCount(stage.name, stage.description) for stage in STAGES}
    )
    source: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, dict[str, int]] = field(default_factory=dict)
    exports: dict[str, dict[str, int]] = field(default_factory=dict)
    origins: dict[str, dict[str, int]] = field(default_factory=dict)  # per format: native, converted rows
    audit: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def entered(self, stage: str, n: int = 1) -> None:
        """Count ``n`` traces into ``stage``."""
        self.stages[stage].n_in += n

    def passed(self, stage: str, n: int = 1) -> None:
        """Count ``n`` traces out of ``stage``, on to the next."""
        self.stages[stage].n_out += n

    def drop(self, stage: str, reason: str, n: int = 1) -> None:
        """Count ``n`` traces dropped by ``stage`` for ``reason``."""
        self.stages[stage].dropped[reason] += n

    def set_aside(self, stage: str, reason: str, n: int = 1) -> None:
        """Count ``n`` traces set aside by ``stage`` (written to their own file) for ``reason``."""
        self.stages[stage].aside[reason] += n

    def balanced(self) -> bool:
        """Whether every stage accounts for each trace it took in exactly once."""
        return all(
            s.n_in == s.n_out + sum(s.dropped.values()) + sum(s.aside.values()) for s in self.stages.values()
        )

    def rows(self) -> dict[str, tuple[int, int]]:
        """Return ``{stage: (in, out)}`` (for metrics)."""
        return {name: (s.n_in, s.n_out) for name, s in self.stages.items()}

    def to_json(self) -> dict[str, Any]:
        """Return the whole funnel as ``funnel.json`` writes it."""
        return {
            "schema": FUNNEL_SCHEMA,
            "config": self.config,
            "source": self.source,
            "stages": {name: self.stages[name].to_json() for name in STAGE_NAMES},
            "splits": self.splits,
            "exports": self.exports,
            "origins": self.origins,
            "audit": self.audit,
        }
