"""Curation's per-trace decisions (stages 2 to 4), the KTO label, the split and the observed turn rewards.

Each function looks at one judged trace and its configuration only, so the funnel can run
them while streaming. The stage order and what each drop reason means are in
``docs/curation.md``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

from arena.types import Task
from curation.errors import CurationError
from judging.facts import result_facts
from judging.types import ATTESTED, AXES, Axis, Judgment
from storage.records import JudgedTrace

UnscoredPolicy = Literal["keep", "drop", "separate"]
SplitBy = Literal["cluster", "none"]
Split = Literal["train", "eval"]
SPLITS: tuple[Split, ...] = ("train", "eval")
# Streams a surviving trace can flow into: the imitation sets, or one of the files set aside.
Stream = Literal["main", "axis_b", "unscored"]
MAIN: Stream = "main"
AXIS_B: Stream = "axis_b"
UNSCORED: Stream = "unscored"


@dataclass(frozen=True)
class Gate:
    """A gate's decision on one trace: pass it on, set it aside into a stream of its own, or drop it.

    Attributes:
        action: ``pass``, ``aside`` or ``drop``.
        stream: where the trace goes on: ``MAIN`` when it passes, its file's stream when set aside.
        reason: why it is dropped (the funnel's drop reason); empty otherwise.
    """

    action: Literal["pass", "aside", "drop"]
    stream: Stream = MAIN
    reason: str = ""


PASS = Gate("pass")


def aside(stream: Stream) -> Gate:
    """Set the trace aside into ``stream``."""
    return Gate("aside", stream=stream)


def drop(reason: str) -> Gate:
    """Drop the trace for ``reason``."""
    return Gate("drop", reason=reason)


@dataclass(frozen=True)
class CurationConfig:
    """How the funnel selects and splits (every field has the documented default).

    Attributes:
        min_reasoning: traces whose reasoning value is below this are dropped (stage 3).
        unscored: what stage 3 does with a trace the reasoning judge did not score: ``keep``
            (the default: unscored is not zero, as in scoring), ``drop``, or ``separate``
            (written aside to ``unscored.jsonl`` for re-judging, kept out of the training sets).
        axes: axis labels the imitation sets take as they are (stage 4); B traces neither taken
            nor converted go aside to ``axis_b.jsonl``; other labels not taken are dropped.
            ``A`` takes ``A-attested`` traces too (A with proof); ``("A-attested",)`` requires
            the proof (``arena curate --axis A-attested``).
        convert_axes: axis labels whose traces the conversion stage rewrites into agentic
            trajectories (``curation.conversion``) when the run has a converter (a search index);
            empty turns conversion off. A label in ``axes`` is taken as it is, never converted.
        cap_per_task_miner: traces kept per (task, miner, success) after dedup (stage 7).
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
            miner-level axis is judged (stage 4); 0 turns the miner-level verdict off.
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


def hard_reject(trace: JudgedTrace) -> str | None:
    """Stage 2: the reason a trace is rejected outright, or None."""
    judgment = trace.judgment
    if judgment.rejects:
        return f"reject:{judgment.rejects[0]}"
    if judgment.fabricated:
        return "fabricated"
    if trace.episode.end != "completed" or judgment.end != "completed":
        return f"end:{trace.episode.end if trace.episode.end != 'completed' else judgment.end}"
    return None


def reasoning_gate(judgment: Judgment, config: CurationConfig) -> Gate:
    """Stage 3: the reasoning judge's value against the minimum; unscored traces per ``config.unscored``."""
    verdict = judgment.reasoning
    if verdict.injection_flagged:
        return drop("injection_flagged")
    if verdict.value is None:
        return {"keep": PASS, "drop": drop("unscored"), "separate": aside(UNSCORED)}[config.unscored]
    return drop("below_min_reasoning") if verdict.value < config.min_reasoning else PASS


def effective_axis(judgment: Judgment, miner_axis: Axis | None) -> Axis:
    """The axis a trace is curated under: its own label, overruled when its miner is labelled B.

    One trajectory of a harness that narrates its own arguments can read as model-driven (A);
    across the miner's trajectories its templates give it away (``judging.axis.axis_for_miner``),
    and no trace of a miner labelled B is imitation data, whatever it looks like alone. A miner
    labelled ``mixed`` does not overrule: a steady model that always searches, views, recommends
    also repeats one call template, so that label alone proves no harness.
    """
    if judgment.axis == "A" and miner_axis == "B":
        return "B"
    return judgment.axis


def taken(axis: Axis, config: CurationConfig) -> bool:
    """Whether the imitation sets take traces of this axis as they are (``A`` takes ``A-attested`` too)."""
    return axis in config.axes or (axis == ATTESTED and "A" in config.axes)


def converts(judgment: Judgment, config: CurationConfig, miner_axis: Axis | None = None) -> bool:
    """Whether the conversion stage rewrites this trace (its axis is to be converted, not taken as it is)."""
    axis = effective_axis(judgment, miner_axis)
    return not taken(axis, config) and axis in config.convert_axes


def axis_route(
    judgment: Judgment, config: CurationConfig, miner_axis: Axis | None = None, *, convert: bool = False
) -> Gate:
    """Stage 4: on to the imitation sets; B aside into ``AXIS_B``; other labels dropped (``axis_<label>``).

    With ``convert`` (the run has a converter) a label to convert passes on to the conversion stage.
    """
    axis = effective_axis(judgment, miner_axis)
    if taken(axis, config) or (convert and converts(judgment, config, miner_axis)):
        return PASS
    return aside(AXIS_B) if axis == "B" else drop(f"axis_{axis}")


def positive(judgment: Judgment, config: CurationConfig) -> bool:
    """The absolute KTO label (and SFT's entry ticket): success, a good enough score, nothing invented."""
    return (
        judgment.success
        and judgment.score >= config.label_min_score
        and not judgment.hallucinated_product_ids
        and not judgment.fabricated
    )


def grounded(judgment: Judgment) -> bool:
    """Whether every product id and tool result the trace relies on is real (DPO needs both sides so)."""
    return not judgment.hallucinated_product_ids and not judgment.fabricated


def cluster_of(task: Task) -> str:
    """A task's leak cluster; a task never clustered is its own cluster."""
    return task.leak_cluster or f"solo-{task.task_id}"


def split_of(cluster: str, config: CurationConfig) -> Split:
    """Assign a leak cluster to train or eval by a salted hash (stable across runs and data growth)."""
    if config.split_by == "none" or config.eval_share <= 0:
        return "train"
    digest = hashlib.sha256(f"{config.split_salt}:{cluster}".encode()).digest()
    return "eval" if int.from_bytes(digest[:8], "big") / 2**64 < config.eval_share else "train"


def turn_rewards(trace: JudgedTrace) -> list[float]:
    """Per logged tool call, the share of the task's gold products first shown to the agent by that call.

    Read from the validator's tool log (never from the miner's transcript), so it is verified:
    the list sums to the share of gold products the agent ever saw, and the call that surfaced
    each one gets its credit.
    """
    gold = {item.product_id for item in trace.task.gold}
    seen: set[str] = set()
    rewards: list[float] = []
    for entry in trace.tool_log:
        found = result_facts(entry.result).product_ids & gold - seen if entry.status == "ok" else set()
        seen |= found
        rewards.append(round(len(found) / len(gold), 6))
    return rewards
