"""Judging vocabulary: checks and their typed evidence, the outcome components, process counts, the Judgment.

The vocabulary lives in ``judging.vocabulary`` and a check with its evidence in
``judging.evidence``; the rest of the code imports them from here, with the Judgment.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from arena.types import Frozen, content_hash
from judging.evidence import (
    EVIDENCE,
    AxisEvidence,
    BadStep,
    Check,
    Claim,
    DuplicateEvidence,
    EndEvidence,
    Evidence,
    FormatEvidence,
    GroundingEvidence,
    NoEvidence,
    OutcomeEvidence,
    OutcomeItem,
    ProcessEvidence,
    ReasoningEvidence,
    ShopperEvidence,
)
from judging.vocabulary import (
    AXES,
    CHECK_NAMES,
    OUTAGE_CAUSES,
    REJECTS,
    UNSCORED_CAUSES,
    Axis,
    ItemReason,
    OutageCause,
    OutcomeScores,
    ProcessStats,
    ReasoningVerdict,
    Reject,
    Unscored,
    UnscoredCause,
    Versions,
)

__all__ = [
    "AXES",
    "Axis",
    "AxisEvidence",
    "BadStep",
    "CHECK_NAMES",
    "Check",
    "Claim",
    "DuplicateEvidence",
    "EVIDENCE",
    "EndEvidence",
    "Evidence",
    "FormatEvidence",
    "GroundingEvidence",
    "ItemReason",
    "Judgment",
    "NoEvidence",
    "OUTAGE_CAUSES",
    "OutageCause",
    "OutcomeEvidence",
    "OutcomeItem",
    "OutcomeScores",
    "ProcessEvidence",
    "ProcessStats",
    "ReasoningEvidence",
    "ReasoningVerdict",
    "Reject",
    "REJECTS",
    "ShopperEvidence",
    "Unscored",
    "UNSCORED_CAUSES",
    "UnscoredCause",
    "Versions",
    "judgment_content_hash",
]


class Judgment(Frozen):
    """The verdict on one trajectory: checks, rejects, outcome, axis, score and versions.

    ``success`` is the outcome verdict alone (every constraint met). ``score`` folds in
    everything: rejects and fabrication zero it, grounding and reasoning scale it.
    ``content_hash`` addresses the verdict (everything but the hash itself).
    """

    task_id: str
    episode_id: str
    miner_hotkey: str
    success: bool
    score: float = Field(ge=0, le=1)
    outcome: OutcomeScores
    checks: tuple[Check, ...]
    rejects: tuple[Reject, ...] = ()
    axis: Axis = "unknown"
    hallucinated_product_ids: tuple[str, ...] = ()
    fabricated_call_ids: tuple[str, ...] = ()
    process: ProcessStats = Field(default_factory=ProcessStats)
    reasoning: ReasoningVerdict = Field(default_factory=ReasoningVerdict)
    end: str = "completed"
    versions: Versions
    content_hash: str = ""

    @model_validator(mode="after")
    def _address(self) -> Judgment:
        expected = judgment_content_hash(self)
        if not self.content_hash:
            object.__setattr__(self, "content_hash", expected)
        elif self.content_hash != expected:
            raise ValueError("judgment content_hash does not match its content")
        return self

    def check(self, name: str) -> Check | None:
        """Return the check called ``name``, or None."""
        return next((c for c in self.checks if c.name == name), None)

    @property
    def reasoning_outage(self) -> bool:
        """Whether a configured reasoning judge was unavailable (timeout, error, unparseable reply).

        Such a judgment's score is provisional: weights should leave it out (scored as None),
        so that an outage on our side never moves weights.
        """
        return self.reasoning.outage

    @property
    def fabricated(self) -> bool:
        """Whether any tool result in the trajectory was not what the tool server returned."""
        return bool(self.fabricated_call_ids)


def judgment_content_hash(judgment: Judgment) -> str:
    """Compute a Judgment's content address (all fields except the hash itself)."""
    return content_hash(judgment.model_dump(mode="json", exclude={"content_hash"}), prefix="j-")
