"""How the curation funnel selects and splits: ``CurationConfig``, every field with its documented default."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from curation.errors import CurationError
from judging.types import AXES

UnscoredPolicy = Literal["keep", "drop", "separate"]
SplitBy = Literal["cluster", "none"]


@dataclass(frozen=True)
class CurationConfig:
    """How the funnel selects and splits (every field has the documented default).

    Attributes:
        min_reasoning: traces whose reasoning value is below this are dropped (``reasoning_gate``).
        unscored: what ``reasoning_gate`` does with a trace the reasoning judge did not score: ``keep``
            (the default: unscored is not zero, as in scoring), ``drop``, or ``separate``
            (written aside to ``unscored.jsonl`` for re-judging, kept out of the training sets).
        axes: axis labels the imitation sets take as they are (the ``axis`` stage); B traces
            neither taken nor converted go aside to ``axis_b.jsonl``; other labels not taken are
            dropped.
        convert_axes: axis labels whose traces the conversion stage rewrites into agentic
            trajectories (``curation.conversion``) when the run has a converter (a search index);
            empty turns conversion off. A label in ``axes`` is taken as it is, never converted.
        cap_per_task_miner: traces kept per (task, miner, success) after dedup (the ``dedup`` stage).
        cap_per_task: traces kept per (task, success) after dedup.
        near_dup_threshold: step-set Jaccard at or above which two same-answer traces of one
            leak cluster are near duplicates.
        split_by: ``cluster`` (train / eval by leak cluster) or ``none`` (all train).
        eval_share: the share of leak clusters that go to eval (by a salted hash of the cluster
            id, so a cluster keeps its side as more data arrives).
        split_salt: the salt of that hash (change it to draw another split).
        label_min_score: the judge's score a successful trace needs for a positive KTO label
            and for SFT.
        batch_size: traces read per database page.
        protect_pools: task pools whose tasks join the audit on the eval side (a train row
            leaking into the reserved evaluation set fails the export).
        miner_axis_sample: the most recent completed trajectories per miner from which its
            miner-level axis is judged (the ``axis`` stage); 0 turns the miner-level verdict off.
    """

    min_reasoning: float = 0.5
    unscored: UnscoredPolicy = "keep"
    axes: tuple[str, ...] = ("A",)
    convert_axes: tuple[str, ...] = ("B", "mixed")
    cap_per_task_miner: int = 2
    cap_per_task: int = 8
    near_dup_threshold: float = 0.8
    split_by: SplitBy = "cluster"
    eval_share: float = 0.1
    split_salt: str = "arena.split/1"
    label_min_score: float = 0.5
    batch_size: int = 500
    protect_pools: tuple[str, ...] = field(default=("never_touch",))
    miner_axis_sample: int = 64

    def __post_init__(self) -> None:
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
        if self.unscored not in ("keep", "drop", "separate"):
            problems.append(f"unscored must be keep, drop or separate, not {self.unscored!r}")
        if self.split_by not in ("cluster", "none"):
            problems.append(f"split_by must be cluster or none, not {self.split_by!r}")
        if problems:
            raise CurationError("; ".join(problems))
