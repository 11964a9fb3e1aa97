"""A Judgment states each fact once: what its checks carry is read from them, the rest is taken as given."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import ValidationError

from judging.judge import JudgeConfig, judge_rules, judge_unanswered
from judging.types import (
    CHECK_NAMES,
    AxisEvidence,
    Check,
    DuplicateEvidence,
    FormatEvidence,
    GroundingEvidence,
    Judgment,
    OutcomeEvidence,
    ProcessEvidence,
    ReasoningVerdict,
    Unscored,
)
from judging.world import AtAnswer
from tests.judging.factory import good_shop_episode, lookup, shop_task, voucher_task

# These verdicts as main (fd4330a) stored them, before the facts were derived: their content
# hashes, and the sha256 of their JSON text (its first 16 hex digits), key order included.
# Pinned under the reasoning prompt 0a24b2e809c8c920 (the prompt that marks miner text as data); a
# judgment records its prompt's hash, so these move with the prompt and with nothing else.
GOOD_SHOP = ("j-73f4f90a0c1cfed859d1fdc3dd287e8f", "fc0dd75a82c728b0")
UNANSWERED_VOUCHER = ("j-e944f9afd19e613d975cee0f6d43f1bb", "3975157262b37e26")


def stored(judgment: Judgment) -> tuple[str, str]:
    """A judgment's content hash and the digest of its JSON text."""
    return judgment.content_hash, hashlib.sha256(judgment.model_dump_json().encode()).hexdigest()[:16]


def good_shop() -> Judgment:
    episode = good_shop_episode()
    return judge_rules(
        shop_task(), episode.trajectory(), log=episode.log, against=AtAnswer(lookup), config=JudgeConfig()
    )


def unanswered() -> Judgment:
    return judge_unanswered(
        voucher_task(), episode_id="e", miner_hotkey="h", end="timeout", config=JudgeConfig(), detail="slow"
    )


def test_the_facts_are_the_checks_evidence() -> None:
    j = good_shop()
    outcome = j.check("outcome")
    assert outcome is not None
    evidence = outcome.evidence_as(OutcomeEvidence)
    assert (j.success, j.outcome) == (evidence.success, evidence.scores)
    assert j.rejects == j.checks[1].evidence_as(FormatEvidence).rejects
    assert j.axis == j.checks[4].evidence_as(AxisEvidence).label
    grounding = j.checks[2].evidence_as(GroundingEvidence)
    assert (j.hallucinated_product_ids, j.fabricated_call_ids) == (
        grounding.hallucinated_product_ids,
        grounding.fabricated_call_ids,
    )
    assert j.process == j.checks[3].evidence_as(ProcessEvidence).stats
    assert j.reasoning.unscored == Unscored(cause="disabled")


def test_the_stored_form_and_its_hash_are_what_they_were() -> None:
    assert good_shop().versions.prompt_hash == "0a24b2e809c8c920"
    assert stored(good_shop()) == GOOD_SHOP
    assert stored(unanswered()) == UNANSWERED_VOUCHER
    for judgment in (good_shop(), unanswered()):
        assert Judgment.model_validate_json(judgment.model_dump_json()) == judgment
        assert list(judgment.model_dump()) == list(json.loads(judgment.model_dump_json()))


def test_a_fact_given_against_the_checks_is_refused() -> None:
    stored = good_shop().model_dump(mode="json")
    for name, wrong in (("success", False), ("axis", "B"), ("rejects", ["too_long"])):
        with pytest.raises(ValidationError, match=f"judgment {name}"):
            Judgment.model_validate(stored | {name: wrong, "content_hash": ""})
    # agreeing with them is fine: a stored judgment states every fact
    assert Judgment.model_validate(stored | {"content_hash": ""}) == good_shop()


def test_an_unanswered_episode_states_only_what_its_checks_cannot() -> None:
    j = unanswered()
    assert [c.name for c in j.checks] == list(CHECK_NAMES)
    assert [c.value for c in j.checks] == [0.0, 0.0, None, None, None, None]
    assert {"outcome", "reasoning"} <= j.model_fields_set  # what its checks cannot say
    assert (j.outcome.budget, j.outcome.shop) == (0.0, None)  # a voucher task's components
    assert j.reasoning == ReasoningVerdict(unscored=Unscored(cause="skipped", detail="no trajectory"))
    assert (j.success, j.axis, j.rejects, j.score) == (False, "unknown", (), 0.0)
    with pytest.raises(ValidationError, match="outcome components"):
        Judgment.model_validate(j.model_dump(exclude={"outcome", "content_hash"}))


def test_a_stored_copy_s_reject_comes_from_its_duplicate_check() -> None:
    # Rounds no longer zero copies; judgments stored when they did must still read back the same.
    flag = Check(
        name="duplicate",
        value=0.0,
        explanation="the same calls and answer as episode ep-0",
        evidence=DuplicateEvidence(work_hash="w" * 16, first_episode_id="ep-0"),
    )
    copy = good_shop().revised(score=0.0, checks=(*good_shop().checks, flag))
    assert copy.rejects == ("duplicate_work",) and copy.score == 0.0
    assert Judgment.model_validate_json(copy.model_dump_json()) == copy
