"""Identical work is recognised on its canonical calls and answer, and credited once."""

from __future__ import annotations

from arena.types import Trajectory
from judging.duplicates import FirstArrivals, credited_once, work_hash
from judging.judge import JudgeConfig, judge
from judging.types import DuplicateEvidence, Judgment
from tests.judging.factory import Episode, good_shop_episode, lookup, shop_task


def searched(q: str, reasoning: str = "searching") -> Trajectory:
    ep = Episode("a red tent")
    ep.step(reasoning, ("find_product", {"q": q}))
    ep.step("recommending", ("recommend_product", {"product_ids": "1001"}))
    return ep.trajectory()


def test_the_same_calls_and_answer_are_the_same_work_whatever_the_text_around_them() -> None:
    one = searched("red tent", reasoning="I will search")
    other = searched("red tent", reasoning="a different thought").model_copy(update={"miner_hotkey": "hk-2"})
    assert work_hash("t-1", one) == work_hash("t-1", other) is not None
    assert work_hash("t-1", one) != work_hash("t-2", one)  # the task is part of the work


def test_spacing_and_case_in_arguments_do_not_make_new_work() -> None:
    assert work_hash("t-1", searched("red tent")) == work_hash("t-1", searched("  Red   TENT "))
    assert work_hash("t-1", searched("red tent")) != work_hash("t-1", searched("blue tent"))


def test_no_calls_is_no_work() -> None:
    ep = Episode("a red tent")
    ep.say("I cannot help")
    assert work_hash("t-1", ep.trajectory()) is None
    assert FirstArrivals().claim(None, "ep-1") is None


def test_the_first_arrival_is_credited_and_later_ones_name_it() -> None:
    arrivals = FirstArrivals()
    assert arrivals.claim("w-1", "ep-a") is None
    assert arrivals.claim("w-1", "ep-a") is None  # the same episode again is not a copy
    assert arrivals.claim("w-1", "ep-b") == "ep-a"
    assert arrivals.claim("w-2", "ep-c") is None


async def test_a_copy_scores_zero_with_a_reject_and_a_check_naming_the_original() -> None:
    ep = good_shop_episode()
    judgment = await judge(
        shop_task(), ep.trajectory(), log=ep.log, products=lookup, completer=None, config=JudgeConfig()
    )
    assert judgment.score > 0
    copy = credited_once(judgment, work="w-1", first_episode_id="ep-a")
    assert copy.score == 0 and copy.rejects == (*judgment.rejects, "duplicate_work")
    assert copy.success == judgment.success  # the outcome itself is kept, for curation
    flag = copy.check("duplicate")
    assert flag is not None and flag.evidence == DuplicateEvidence(work_hash="w-1", first_episode_id="ep-a")
    assert copy.content_hash != judgment.content_hash
    assert Judgment.model_validate(copy.model_dump(mode="json")) == copy  # reads back typed, hash verified
