"""What a conversion produces and how it is set: settings, provenance, converted and dropped traces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from arena.types import ToolLogEntry, Trajectory
from curation.conversion.pruning import PruneReason
from judging.axis import A_SHARE
from judging.judge import JudgeConfig
from judging.types import Judgment

CONVERTER_VERSION = "arena-convert/1"
Origin = Literal["native", "converted"]
ORIGINS: tuple[Origin, ...] = ("native", "converted")
DropReason = Literal[
    "no_trajectory",
    "missing_task",
    "no_tool_log",
    "log_hash_mismatch",
    "duplicate_call_id",
    "unknown_toolset",
    "unknown_world",
    "catalog_mismatch",
    "source_rejected",
    "no_answer",
    "ungrounded_rationale",
    "format_failed",
    "grounding_failed",
    "outcome_changed",
    "not_driven",
]
DROP_REASONS: tuple[DropReason, ...] = get_args(DropReason)


@dataclass(frozen=True)
class ConversionConfig:
    """How traces are converted (every field has the documented default).

    Attributes:
        prune: compile harness noise out (:mod:`curation.conversion.pruning`).
        min_driven: the share of steps the axis step classifier must find driven.
        attempts: how many times one step's rationale is written before the trace is dropped
            (``ungrounded_rationale``), and how many passes rewrite steps that read narrated.
        judge: the judge configuration to re-judge with (the tool set and catalog come from the
            source and the index).
    """

    prune: bool = True
    min_driven: float = A_SHARE
    attempts: int = 3
    judge: JudgeConfig = field(default_factory=JudgeConfig)


@dataclass(frozen=True)
class Provenance:
    """Where an exported row comes from: ``native`` (as the miner returned it) or ``converted``."""

    origin: Origin
    source_hash: str | None = None
    converter_version: str | None = None
    writer: str | None = None

    def columns(self) -> dict[str, str | None]:
        """The export's provenance columns."""
        return {
            "origin": self.origin,
            "source_hash": self.source_hash,
            "converter_version": self.converter_version,
            "writer": self.writer,
        }


NATIVE = Provenance("native")


@dataclass(frozen=True)
class Converted:
    """A converted trace: the trajectory, the log it is judged with, its Judgment and provenance.

    Attributes:
        trajectory: the agentic trajectory (``arena.trajectory/1``; rationales in ``reasoning_content``).
        tool_log: the validator's own entries for the kept calls (byte-identical, in order).
        judgment: the re-judged Judgment (rule checks; reasoning unscored).
        provenance: origin ``converted``, the source's hash, the converter version, the writer.
        pruned: the dropped calls, (seq, why).
        unpruned: pruning was undone (a replay differed, or the pruned trace failed the judge).
        rewrites: rationales written again after the verifier or the step classifier refused one.
    """

    trajectory: Trajectory
    tool_log: tuple[ToolLogEntry, ...]
    judgment: Judgment
    provenance: Provenance
    pruned: tuple[tuple[int, PruneReason], ...] = ()
    unpruned: bool = False
    rewrites: int = 0


@dataclass(frozen=True)
class Dropped:
    """A trace that could not be converted: the typed reason and a detail for people."""

    reason: DropReason
    detail: str = ""


Conversion = Converted | Dropped
