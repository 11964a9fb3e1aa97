"""The shopper check and its place in the score: a held-back constraint needs a question, extra ones cost."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.types import ToolLogEntry, Trajectory
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.shopper import ShopperSession
from arena.world.tasks import cheapest_in_stock
from arena.world.types import HeldService, WorldTask
from judging.judge import JudgeConfig, final_score, judge_rules
from judging.shopper import shopper_evidence
from judging.types import Judgment, ProcessStats, ShopperEvidence
from judging.world import AtAnswer
from tests.judging.factory import logged_episode

CONFIG = JudgeConfig(toolset="arena-3")
SERVICE_WORDS = {
    "freeShipping": "free shipping",
    "COD": "cash on delivery",
    "official": "an official store",
    "flashsale": "a flash sale",
}


@pytest.fixture(scope="module")
def case(world_base: SearchIndex) -> tuple[WorldOverlay, WorldTask, str]:
    """A world task whose held-back service decides the answer, and the answer to the request as stated."""
    pack = compile_world("round-8", world_base)
    world = WorldOverlay(world_base, pack.delta)
    for task in pack.tasks:
        held = task.profile.held_back
        if len(held) != 1 or not isinstance(held[0], HeldService):
            continue
        item = task.task.gold[0]
        stated_item = item.model_copy(
            update={"service": tuple(s for s in item.service if s != held[0].service)}
        )
        stated = cheapest_in_stock(
            task.task.model_copy(update={"gold": (stated_item,)}), world, random.Random(0), held_back=0
        )
        if stated is not None and stated.task.gold[0].product_id != item.product_id:
            return world, task, stated.task.gold[0].product_id
    raise AssertionError("no world task whose held-back service decides the answer")


def episode(
    world: WorldOverlay, task: WorldTask, questions: list[str], answer: str
) -> tuple[Trajectory, list[ToolLogEntry]]:
    """Run an episode's calls through the real tools (and the task's shopper); return it and its log."""
    ctx = ToolContext(index=world, toolset="arena-3", shopper=ShopperSession(task.profile))
    title = task.task.gold[0].titles[0]
    calls: list[tuple[str, dict[str, Any]]] = [
        *(("ask_user", {"question": q}) for q in questions),
        ("find_product", {"q": title}),
        ("view_product_information", {"product_ids": answer}),
        ("recommend_product", {"product_ids": answer}),
        ("terminate", {"status": "success"}),
    ]
    return logged_episode(ctx, calls, query=task.task.query, task_id=task.task.task_id)


def judged(world: WorldOverlay, task: WorldTask, questions: list[str], answer: str) -> Judgment:
    trajectory, log = episode(world, task, questions, answer)
    return judge_rules(
        task.task, trajectory, log=log, against=AtAnswer(world.products, profile=task.profile), config=CONFIG
    )


def right_question(task: WorldTask) -> str:
    held = task.profile.held_back[0]
    assert isinstance(held, HeldService)
    return f"Do you need {SERVICE_WORDS[held.service]}?"


def test_a_held_back_task_fails_without_asking_and_succeeds_with_the_right_question(
    case: tuple[WorldOverlay, WorldTask, str],
) -> None:
    world, task, stated_answer = case
    gold = task.task.gold[0].product_id
    never_asked = judged(world, task, [], stated_answer)
    assert not never_asked.success and never_asked.score < 0.4
    assert never_asked.check("shopper") is not None and never_asked.process.questions == 0

    trajectory, log = episode(world, task, [right_question(task)], gold)
    assert "Yes:" in json.loads(log[0].result)["answer"]
    asked = judged(world, task, [right_question(task)], gold)
    assert asked.success and asked.score == 1.0 and not asked.rejects
    assert (asked.process.questions, asked.process.questions_needed) == (1, 1)
    shopper = asked.check("shopper")
    assert shopper is not None and shopper.evidence == ShopperEvidence(asked=1, needed=1, extra=0, revealed=1)


def test_an_extra_question_lowers_the_score_and_never_below_a_miss(
    case: tuple[WorldOverlay, WorldTask, str],
) -> None:
    world, task, stated_answer = case
    gold = task.task.gold[0].product_id
    miss = judged(world, task, [right_question(task)], stated_answer)
    scores = [
        judged(
            world, task, [right_question(task), *(f"What colour, option {k}?" for k in range(extra))], gold
        ).score
        for extra in range(8)
    ]
    assert scores[0] == 1.0
    assert all(later < earlier for earlier, later in zip(scores[:5], scores[1:6], strict=True))
    assert min(scores) >= 1 - CONFIG.success_weight > miss.score
    assert scores[-1] == scores[-2] == 1 - CONFIG.success_weight  # the floor: the success share is spent


def test_a_wrong_question_reveals_nothing_and_the_task_is_still_missed(
    case: tuple[WorldOverlay, WorldTask, str],
) -> None:
    world, task, stated_answer = case
    judgment = judged(world, task, ["What colour do you want?"], stated_answer)
    shopper = judgment.check("shopper")
    assert not judgment.success and shopper is not None
    assert shopper.evidence == ShopperEvidence(asked=1, needed=1, extra=0, revealed=0)


def test_judging_is_deterministic(case: tuple[WorldOverlay, WorldTask, str]) -> None:
    world, task, _ = case
    gold = task.task.gold[0].product_id
    first = judged(world, task, [right_question(task), "What colour?"], gold)
    again = judged(world, task, [right_question(task), "What colour?"], gold)
    assert first.content_hash == again.content_hash and first.score == again.score < 1.0


def test_a_stuffed_question_is_a_refused_question_and_the_specific_one_still_counts(
    case: tuple[WorldOverlay, WorldTask, str],
) -> None:
    # A question naming every service and 25 attribute words: the shopper refuses it (too broad),
    # the judge counts it as asked and revealing nothing, and the question needed still succeeds.
    stuffed = (
        "Do you need official LazMall, free shipping, cash on delivery or a flash sale deal, and what brand, "
        "color, size, material, style, pattern, capacity, model, type, weight, length, width, height, "
        "volume, power, voltage, flavor, scent, age, gender, fit, sleeve, shape, finish or number of pieces?"
    )
    world, task, stated_answer = case
    gold = task.task.gold[0].product_id
    _, log = episode(world, task, [stuffed], stated_answer)
    assert log[0].status == "error" and "too_broad" in log[0].result
    alone = judged(world, task, [stuffed], stated_answer)
    assert not alone.success
    assert alone.check("shopper").evidence == ShopperEvidence(
        asked=1, needed=1, extra=0, revealed=0, refused=1
    )
    both = judged(world, task, [stuffed, right_question(task)], gold)
    assert both.success and (both.process.questions, both.process.questions_needed) == (2, 1)
    assert both.check("shopper").evidence == ShopperEvidence(
        asked=2, needed=1, extra=1, revealed=1, refused=1
    )


def test_a_task_without_a_profile_has_no_shopper_check(case: tuple[WorldOverlay, WorldTask, str]) -> None:
    world, task, _ = case
    trajectory, log = episode(world, task, [], task.task.gold[0].product_id)
    judgment = judge_rules(task.task, trajectory, log=log, against=AtAnswer(world.products), config=CONFIG)
    assert judgment.check("shopper") is None


def test_refused_questions_count_as_asked() -> None:
    from arena.world.types import ShopperProfile

    profile = ShopperProfile(held_back=(HeldService(item=0, service="COD"),))
    entries = [
        ToolLogEntry.model_validate(
            {
                "episode_id": "ep",
                "seq": n,
                "call_id": f"c{n}",
                "tool": "ask_user",
                "arguments": {"question": "Cash on delivery?"},
                "result": "{}",
                "result_hash": "h",
                "status": "ok" if n < 2 else "error",
                "started_at": "2026-01-01T00:00:00Z",
                "finished_at": "2026-01-01T00:00:00Z",
            }
        )
        for n in range(3)
    ]
    assert shopper_evidence(profile, entries) == ShopperEvidence(
        asked=3, needed=1, extra=2, revealed=1, refused=1
    )


def test_questions_stay_out_of_stored_process_stats_at_zero() -> None:
    assert "questions" not in ProcessStats(tool_calls=3).model_dump()
    assert ProcessStats(questions=2, questions_needed=1).model_dump()["questions"] == 2
    assert ProcessStats.model_validate(ProcessStats(tool_calls=3).model_dump()) == ProcessStats(tool_calls=3)


def test_without_questions_the_formula_is_unchanged() -> None:
    for success, partial in ((True, 1.0), (False, 0.5)):
        plain = {"zeroed": False, "success": success, "partial": partial, "grounding": 1.0, "reasoning": None}
        assert final_score(**plain, config=CONFIG) == final_score(**plain, config=CONFIG, questions=1.0)
    miss = final_score(zeroed=False, success=False, partial=0.9, grounding=1.0, reasoning=None, config=CONFIG)
    assert miss == final_score(
        zeroed=False, success=False, partial=0.9, grounding=1.0, reasoning=None, config=CONFIG, questions=0.0
    )
