"""Identical work is recognised on its canonical calls and answer, and credited once."""

from __future__ import annotations

import asyncio

from arena.types import Trajectory
from judging.duplicates import FirstArrivals, credited_once, work_hash
from judging.judge import JudgeConfig, judge
from judging.types import DuplicateEvidence, Judgment
from judging.world import AtAnswer
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


async def test_the_first_credited_is_named_to_later_copies() -> None:
    arrivals = FirstArrivals()
    assert await arrivals.claim("w-1", "ep-a") is None
    assert await arrivals.claim("w-1", "ep-a") is None  # the same episode again is not a copy
    assert await arrivals.claim("w-2", "ep-c") is None  # other work is free
    copy = asyncio.create_task(arrivals.claim("w-1", "ep-b"))
    await asyncio.sleep(0)
    assert not copy.done()  # the first is still being stored: the copy waits for the outcome
    arrivals.settle("w-1", "ep-a", credited=True)
    assert await copy == "ep-a"


async def test_a_first_that_is_not_stored_credited_frees_the_work_for_the_copy() -> None:
    arrivals = FirstArrivals()
    assert await arrivals.claim("w-1", "ep-a") is None
    copy = asyncio.create_task(arrivals.claim("w-1", "ep-b"))
    await asyncio.sleep(0)
    arrivals.settle("w-1", "ep-a", credited=False)  # e.g. stored as a miner fault: unstorable text
    assert await copy is None  # the copy is credited now
    arrivals.settle("w-1", "ep-b", credited=True)
    assert await arrivals.claim("w-1", "ep-c") == "ep-b"


async def test_a_copy_scores_zero_with_a_reject_and_a_check_naming_the_original() -> None:
    ep = good_shop_episode()
    judgment = await judge(
        shop_task(),
        ep.trajectory(),
        log=ep.log,
        against=AtAnswer(lookup),
        completer=None,
        config=JudgeConfig(),
    )
    assert judgment.score > 0
    copy = credited_once(judgment, work="w-1", first_episode_id="ep-a")
    assert copy.score == 0 and copy.rejects == (*judgment.rejects, "duplicate_work")
    assert copy.success == judgment.success  # the outcome itself is kept, for curation
    flag = copy.check("duplicate")
    assert flag is not None and flag.evidence == DuplicateEvidence(work_hash="w-1", first_episode_id="ep-a")
    assert copy.content_hash != judgment.content_hash
    assert Judgment.model_validate(copy.model_dump(mode="json")) == copy  # reads back typed, hash verified
