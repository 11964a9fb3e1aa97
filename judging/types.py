"""Judging vocabulary: checks and their typed evidence, the outcome components, process counts, the Judgment.

The vocabulary lives in ``judging.vocabulary`` and a check with its evidence in
``judging.evidence``; the rest of the code imports them from here, with the Judgment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
    ATTESTED,
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
    "ATTESTED",
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


_UNSAID = object()  # what a check that does not carry a fact says of it


def _reasoning(check: Check) -> ReasoningVerdict:
    evidence = check.evidence_as(ReasoningEvidence)
    return ReasoningVerdict(
        value=check.value,
        model=evidence.model,
        labels=evidence.labels,
        injection_flagged=evidence.injection_flagged,
        unscored=evidence.unscored,
    )


def _rejects(check: Check, judgment: Judgment) -> tuple[Reject, ...]:
    """The format check's rejects, and ``duplicate_work`` where a (stored, older) duplicate check says so."""
    reasons = check.evidence_as(FormatEvidence).reasons
    duplicate = judgment.check("duplicate")
    copied = duplicate is not None and isinstance(duplicate.evidence, DuplicateEvidence)
    return tuple(r for r in REJECTS if r in reasons or (r == "duplicate_work" and copied))


# Each top-level fact of a Judgment: the check that states it, the evidence it is read from, how.
_SAID_BY: dict[str, tuple[str, type[Evidence], Callable[[Check, Judgment], Any]]] = {
    "success": ("outcome", OutcomeEvidence, lambda c, _: c.evidence_as(OutcomeEvidence).success),
    "outcome": ("outcome", OutcomeEvidence, lambda c, _: c.evidence_as(OutcomeEvidence).scores or _UNSAID),
    "rejects": ("format", FormatEvidence, _rejects),
    "axis": ("axis", AxisEvidence, lambda c, _: c.evidence_as(AxisEvidence).label),
    "hallucinated_product_ids": (
        "grounding",
        GroundingEvidence,
        lambda c, _: c.evidence_as(GroundingEvidence).hallucinated_product_ids,
    ),
    "fabricated_call_ids": (
        "grounding",
        GroundingEvidence,
        lambda c, _: c.evidence_as(GroundingEvidence).fabricated_call_ids,
    ),
    "process": ("process", ProcessEvidence, lambda c, _: c.evidence_as(ProcessEvidence).stats),
    "reasoning": ("reasoning", ReasoningEvidence, lambda c, _: _reasoning(c)),
}


class Judgment(Frozen):
    """The verdict on one trajectory: checks, rejects, outcome, axis, score and versions.

    ``success`` is the outcome verdict alone (every constraint met). ``score`` folds in
    everything: rejects and fabrication zero it, grounding and reasoning scale it.
    ``content_hash`` addresses the verdict (everything but the hash itself).

    Each fact is stated once. ``success``, ``outcome``, ``rejects``, ``axis``, the hallucinated
    and fabricated ids, ``process`` and ``reasoning`` are the checks' evidence: wherever a check
    carries one (``_SAID_BY``), the field is read from it when the Judgment is made, and a value
    given for it must be the same. They stay fields, so the stored form and the content hash are
    what they were. Only what no check carries is taken as given: an episode without a
    trajectory (``judging.judge.judge_unanswered``) has no outcome components or reasoning verdict
    in its checks, and a hand-made judgment may have checks without evidence. A changed judgment
    is made with :meth:`revised` (``model_copy(update=...)`` would not read the checks again).
    """

    task_id: str
    episode_id: str
    miner_hotkey: str
    success: bool = False
    score: float = Field(ge=0, le=1)
    # Required where the outcome check carries none; never seen at this default (``_settle``).
    outcome: OutcomeScores = Field(default_factory=lambda: OutcomeScores(rule=0.0, gt=0.0, product=0.0))
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
    def _settle(self) -> Judgment:
        """Read each fact the checks carry (refusing a given one that differs), then address the verdict."""
        given = self.model_fields_set
        for name in _SAID_BY:
            said = self._said(name)
            if said is _UNSAID:
                if name == "outcome" and name not in given:
                    raise ValueError("a judgment needs its outcome components: from its check, or given")
            elif name not in given:
                object.__setattr__(self, name, said)
            elif (value := getattr(self, name)) != said:
                raise ValueError(f"judgment {name} {value!r} is not what its checks say: {said!r}")
        expected = judgment_content_hash(self)
        if not self.content_hash:
            object.__setattr__(self, "content_hash", expected)
        elif self.content_hash != expected:
            raise ValueError("judgment content_hash does not match its content")
        return self

    def _said(self, name: str) -> Any:
        """What the checks state of the fact ``name``, or ``_UNSAID``."""
        check_name, kind, read = _SAID_BY[name]
        check = self.check(check_name)
        if check is None or not isinstance(check.evidence, kind):
            return _UNSAID
        return read(check, self)

    def revised(self, **changes: Any) -> Judgment:
        """This judgment with ``changes`` to its fields (``score``, ``checks``), read and addressed again."""
        kept = {
            name: getattr(self, name)
            for name in type(self).model_fields
            if name != "content_hash" and (name not in _SAID_BY or self._said(name) is _UNSAID)
        }
        return type(self).model_validate(kept | changes)

    def check(self, name: str) -> Check | None:
        """Return the check called ``name``, or None."""
        for check in self.checks:
            if check.name == name:
                return check
        return None

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
