"""How the curation funnel selects and splits: ``CurationConfig``, each knob with its default and meaning.

``arena curate`` offers these as flags and ``ARENA_CURATE_FUNNEL__*`` variables (its settings'
``funnel`` section, ``neurons/cli/curate.py``), so each default and description is written here
only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from curation.errors import CurationError
from judging.types import AXES

UnscoredPolicy = Literal["keep", "drop", "separate"]
SplitBy = Literal["cluster", "none"]


def comma_list(value: object) -> object:
    """A comma-separated list (a flag's or a variable's text) as a tuple; anything else as given."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class CurationConfig(BaseModel):
    """How the funnel selects and splits (validated, frozen; out-of-range values raise ``CurationError``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    min_reasoning: float = Field(
        default=0.5, description="Drop traces whose reasoning value is below this (reasoning_gate)."
    )
    unscored: UnscoredPolicy = Field(
        default="keep",
        description="Traces the reasoning judge did not score: keep (unscored is not zero), drop, "
        "or separate (written to unscored.jsonl for re-judging).",
    )
    axes: tuple[str, ...] = Field(
        default=("A",),
        description="Comma-separated axis labels the imitation sets take as they are (A, A-attested, "
        "B, mixed, unknown; A takes A-attested too, A-attested alone requires the gateway's proof); "
        "B traces neither taken nor converted go aside to axis_b.jsonl.",
    )
    convert_axes: tuple[str, ...] = Field(
        default=("B", "mixed"),
        description="Comma-separated axis labels whose traces are converted into agentic "
        "trajectories (where the run has a search index); a label taken as it is is never converted.",
    )
    cap_per_task_miner: int = Field(default=2, description="Traces kept per (task, miner, outcome).")
    cap_per_task: int = Field(default=8, description="Traces kept per (task, outcome).")
    near_dup_threshold: float = Field(
        default=0.8,
        description="Step-set Jaccard at which two same-answer traces of a cluster are near duplicates.",
    )
    split_by: SplitBy = Field(
        default="cluster", description="cluster (train / eval by leak cluster) or none."
    )
    eval_share: float = Field(
        default=0.1,
        description="Share of leak clusters in eval (by a salted hash of the cluster id: a cluster "
        "keeps its side as data grows).",
    )
    split_salt: str = Field(
        default="arena.split/1", description="The salt of that hash (another draws another split)."
    )
    label_min_score: float = Field(
        default=0.5,
        description="The judge's score a successful trace needs for SFT and a positive KTO label.",
    )
    batch_size: int = Field(default=500, description="Traces read per database page.")
    protect_pools: tuple[str, ...] = Field(
        default=("never_touch",),
        description="Task pools whose tasks join the audit on the eval side (a train row leaking into "
        "them fails the export).",
    )
    miner_axis_sample: int = Field(
        default=64,
        description="Recent trajectories per miner judging its miner-level axis (the axis stage; 0: off).",
    )

    _comma_lists = field_validator("axes", "convert_axes", "protect_pools", mode="before")(comma_list)

    @model_validator(mode="after")
    def _meaningful(self) -> CurationConfig:
        problems = [
            f"unknown axis label {a!r} (known: {', '.join(AXES)})"
            for a in (*self.axes, *self.convert_axes)
            if a not in AXES
        ]
        if not 0 <= self.min_reasoning <= 1:
            problems.append(f"min_reasoning must be in [0, 1], not {self.min_reasoning}")
        if not 0 <= self.eval_share <= 1:
            problems.append(f"eval_share must be in [0, 1], not {self.eval_share}")
        if not 0 < self.near_dup_threshold <= 1:
            problems.append(f"near_dup_threshold must be in (0, 1], not {self.near_dup_threshold}")
        if self.miner_axis_sample < 0:
            problems.append(f"miner_axis_sample must be >= 0, not {self.miner_axis_sample}")
        if self.cap_per_task_miner < 1 or self.cap_per_task < 1 or self.batch_size < 1:
            problems.append("caps and batch_size must be at least 1")
        if problems:
            raise CurationError("; ".join(problems))
        return self
