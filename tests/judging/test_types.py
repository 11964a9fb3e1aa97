"""A Judgment states each fact once: what its checks say is read from them, the rest is kept as given."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from judging.duplicates import credited_once
from judging.judge import JudgeConfig, judge_rules, judge_unanswered
from judging.types import (
    CHECK_NAMES,
    AxisEvidence,
    FormatEvidence,
    GroundingEvidence,
    Judgment,
    OutcomeEvidence,
    ProcessEvidence,
    ReasoningVerdict,
    Stated,
    Unscored,
)
from judging.world import AtAnswer
from tests.judging.factory import good_shop_episode, lookup, shop_task, voucher_task

# Content hashes of these verdicts before the facts were derived (main at fd4330a): the stored
# form, key order included, is what it was.
GOOD_SHOP_HASH = "j-0cb4a534b861d0a87d95441648578907"
UNANSWERED_VOUCHER_HASH = "j-8cdeb170b7e5a72875552f143d1f854e"
STORED_ORDER = [
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
]


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
    assert j.reasoning.unscored == Unscored(cause="disabled") and j.stated == Stated()


def test_the_stored_form_and_its_hash_are_what_they_were() -> None:
    j = good_shop()
    assert j.content_hash == GOOD_SHOP_HASH
    assert list(json.loads(j.model_dump_json())) == STORED_ORDER
    assert list(j.model_dump()) == STORED_ORDER
    assert unanswered().content_hash == UNANSWERED_VOUCHER_HASH
    for judgment in (j, unanswered()):
        assert Judgment.model_validate_json(judgment.model_dump_json()) == judgment


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
    assert j.stated.model_fields_set == {"outcome", "reasoning"}
    assert (j.outcome.budget, j.outcome.shop) == (0.0, None)  # a voucher task's components
    assert j.reasoning == ReasoningVerdict(unscored=Unscored(cause="skipped", detail="no trajectory"))
    assert (j.success, j.axis, j.rejects, j.score) == (False, "unknown", (), 0.0)
    with pytest.raises(ValidationError, match="outcome components"):
        Judgment.model_validate(j.model_dump(exclude={"outcome", "content_hash"}))


def test_a_copy_s_reject_comes_from_its_duplicate_check() -> None:
    copy = credited_once(good_shop(), work="w" * 16, first_episode_id="ep-0")
    assert copy.rejects == ("duplicate_work",) and copy.score == 0.0
    assert copy.checks[-1].name == "duplicate"
