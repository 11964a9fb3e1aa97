"""Judging vocabulary: checks and their typed evidence, the outcome components, process counts, the Judgment.

The vocabulary lives in ``judging.vocabulary`` and a check with its evidence in
``judging.evidence``; the rest of the code imports them from here, with the Judgment.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, cast

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    model_serializer,
    model_validator,
)

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
    "Stated",
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


class Stated(Frozen):
    """What a Judgment states at the top because its checks do not (see :class:`Judgment`).

    An episode without a trajectory (``judging.judge.judge_unanswered``) has checks with no
    outcome components and no reasoning verdict in them; a hand-made judgment may have checks
    without evidence. Everywhere else the checks say it all and this stays empty.
    """

    success: bool = False
    outcome: OutcomeScores | None = None
    rejects: tuple[Reject, ...] = ()
    axis: Axis = "unknown"
    hallucinated_product_ids: tuple[str, ...] = ()
    fabricated_call_ids: tuple[str, ...] = ()
    process: ProcessStats = Field(default_factory=ProcessStats)
    reasoning: ReasoningVerdict = Field(default_factory=ReasoningVerdict)


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
    """The format check's rejects, and the round's ``duplicate_work`` where a duplicate check says so."""
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
# The order of a Judgment's stored and hashed form (the derived facts among the fields, as they were).
_ORDER = (
    "task_id",
    "episode_id",
    "miner_hotkey",
    "success",
    "score",
    "outcome",
    "checks",
    "rejects",
    "axis",
    "hallucinated_product_ids",
    "fabricated_call_ids",
    "process",
    "reasoning",
    "end",
    "versions",
    "content_hash",
)


class Judgment(Frozen):
    """The verdict on one trajectory: its checks, score and versions, and the facts read from the checks.

    ``success`` is the outcome verdict alone (every constraint met). ``score`` folds in
    everything: rejects and fabrication zero it, grounding and reasoning scale it.
    ``content_hash`` addresses the verdict (everything but the hash itself).

    Each fact is stated once. ``success``, ``outcome``, ``rejects``, ``axis``, the hallucinated
    and fabricated ids, ``process`` and ``reasoning`` are the checks' evidence, read where the
    checks carry it (``_SAID_BY``); they are serialized (the stored form and the content hash are
    what they were), and a value given for one must agree with the checks. Only what the checks
    do not carry is kept as given (:class:`Stated`). Each is read once (a cached property), so a
    changed judgment is made with :meth:`revised`, never ``model_copy(update=...)``.
    """

    task_id: str
    episode_id: str
    miner_hotkey: str
    score: float = Field(ge=0, le=1)
    checks: tuple[Check, ...]
    end: str = "completed"
    versions: Versions
    content_hash: str = ""
    stated: Stated = Field(default_factory=Stated, exclude=True, repr=False)

    @model_validator(mode="before")
    @classmethod
    def _gather_stated(cls, data: Any) -> Any:
        """Top-level facts given (a stored judgment, a hand-made one) go to ``stated``, checked below."""
        if not isinstance(data, dict) or not data.keys() & _SAID_BY.keys():
            return data
        if "stated" in data:
            raise ValueError("give a judgment's facts by name or as stated, not both")
        given = {name: value for name, value in data.items() if name in _SAID_BY}
        return {name: value for name, value in data.items() if name not in _SAID_BY} | {"stated": given}

    @model_validator(mode="after")
    def _settle(self) -> Judgment:
        """Keep what the checks do not say, refuse what they contradict, and address the verdict."""
        kept = {}
        for name in sorted(self.stated.model_fields_set):
            given, said = getattr(self.stated, name), self._said(name)
            if said is _UNSAID:
                kept[name] = given
            elif given != said:
                raise ValueError(f"judgment {name} {given!r} is not what its checks say: {said!r}")
        if kept.keys() != self.stated.model_fields_set:  # some given facts are the checks': drop them
            object.__setattr__(self, "stated", Stated.model_validate(kept))
        if self._said("outcome") is _UNSAID and self.stated.outcome is None:
            raise ValueError("a judgment needs its outcome components: from its outcome check, or given")
        expected = judgment_content_hash(self)
        if not self.content_hash:
            object.__setattr__(self, "content_hash", expected)
        elif self.content_hash != expected:
            raise ValueError("judgment content_hash does not match its content")
        return self

    @model_serializer(mode="wrap")
    def _in_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        # The stored order first; a field added later (none yet) follows, never dropped.
        return {**{name: dumped[name] for name in _ORDER if name in dumped}, **dumped}

    def _said(self, name: str) -> Any:
        """What the checks state of the fact ``name``, or ``_UNSAID``."""
        check_name, kind, read = _SAID_BY[name]
        check = self.check(check_name)
        if check is None or not isinstance(check.evidence, kind):
            return _UNSAID
        return read(check, self)

    def _fact(self, name: str) -> Any:
        said = self._said(name)
        return getattr(self.stated, name) if said is _UNSAID else said

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def success(self) -> bool:
        """The outcome verdict alone: every constraint met (the outcome check's)."""
        return cast(bool, self._fact("success"))

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def outcome(self) -> OutcomeScores:
        """ShoppingBench's outcome components (the outcome check's ``scores``)."""
        return cast(OutcomeScores, self._fact("outcome"))

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def rejects(self) -> tuple[Reject, ...]:
        """The hard rejects, in ``REJECTS`` order: the format check's, and a duplicate's."""
        return cast(tuple[Reject, ...], self._fact("rejects"))

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def axis(self) -> Axis:
        """A, B, mixed or unknown (the axis check's label)."""
        return cast(Axis, self._fact("axis"))

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def hallucinated_product_ids(self) -> tuple[str, ...]:
        """Answer ids no result showed and the catalog does not hold (the grounding check's)."""
        return cast(tuple[str, ...], self._fact("hallucinated_product_ids"))

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def fabricated_call_ids(self) -> tuple[str, ...]:
        """Calls whose tool message is not what the server returned, sorted (the grounding check's)."""
        return cast(tuple[str, ...], self._fact("fabricated_call_ids"))

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def process(self) -> ProcessStats:
        """How the agent worked (the process check's counts)."""
        return cast(ProcessStats, self._fact("process"))

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def reasoning(self) -> ReasoningVerdict:
        """The reasoning judge's verdict (the reasoning check's value and evidence)."""
        return cast(ReasoningVerdict, self._fact("reasoning"))

    def revised(self, **changes: Any) -> Judgment:
        """This judgment with ``changes`` to its fields (``score``, ``checks``), read and addressed again."""
        fields = {name: getattr(self, name) for name in type(self).model_fields if name != "content_hash"}
        return type(self).model_validate(fields | changes)

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
