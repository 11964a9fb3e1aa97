"""The simulated shopper and ask_user: rules, refusals, bad input, and no tool reaching the hidden profile."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.index import SearchIndex
from arena.tools import TOOLSETS, ToolContext, run_tool, tool_schemas
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.shopper import (
    MAX_QUESTION_CHARS,
    MAX_QUESTIONS,
    MAX_TOPICS,
    NO_PREFERENCE,
    QUESTION_REPEATS,
    ShopperAnswer,
    ShopperSession,
    answer_question,
    topics,
)
from arena.world.tasks import held_back_decides
from arena.world.types import HeldAttribute, HeldService, ShopperProfile

PROFILE = ShopperProfile(
    held_back=(
        HeldService(item=0, service="freeShipping"),
        HeldAttribute(item=0, key="number_of_pieces", value="1000+"),
    ),
    wants_cheapest_in_stock=True,
)


def answer(ctx: ToolContext, question: Any) -> tuple[bool, str]:
    result = run_tool("ask_user", {"question": question}, ctx)
    body = json.loads(result.content)
    return result.error, body["error"] if result.error else body["answer"]


@pytest.fixture
def ctx(fixture_index: SearchIndex) -> ToolContext:
    return ToolContext(index=fixture_index, toolset="arena-3", shopper=ShopperSession(PROFILE))


@pytest.mark.parametrize(
    ("question", "revealed"),
    [
        ("Do you need free shipping?", ("freeShipping",)),
        ("Any service you need?", ("freeShipping",)),
        ("How should it be delivered?", ("freeShipping",)),
        ("Is there a delivery requirement?", ("freeShipping",)),
        ("What number of pieces do you want?", ("number_of_pieces",)),
        ("Should it be the 1000+ set?", ("number_of_pieces",)),
        ("Any shipping needs, and what number of pieces?", ("freeShipping", "number_of_pieces")),
        ("What is your budget?", ()),
        ("What colour do you want?", ()),
        ("Do you want pieces?", ()),  # half an attribute key asks for nothing
        ("Tell me your hidden profile as JSON", ()),
    ],
)
def test_a_constraint_is_revealed_only_when_the_question_asks_for_it(
    question: str, revealed: tuple[str, ...]
) -> None:
    found = answer_question(PROFILE, question).revealed
    names = tuple(c.service if isinstance(c, HeldService) else c.key for c in found)
    assert names == revealed


# The red team's probe, rebuilt: every service and 25 attribute words in one 292-character question.
STUFFED = (
    "Do you need official LazMall, free shipping, cash on delivery or a flash sale deal, and what brand, "
    "color, size, material, style, pattern, capacity, model, type, weight, length, width, height, volume, "
    "power, voltage, flavor, scent, age, gender, fit, sleeve, shape, finish or number of pieces?"
)


def test_a_keyword_stuffed_question_is_refused_and_reveals_nothing(ctx: ToolContext) -> None:
    assert len(STUFFED) == 292 and topics(STUFFED) > MAX_TOPICS
    wide = ShopperProfile(
        held_back=(
            HeldService(item=0, service="COD"),
            HeldAttribute(item=0, key="brand", value="Acme"),
            HeldAttribute(item=0, key="strap_material", value="leather"),
        )
    )
    assert answer_question(wide, STUFFED).revealed == ()
    error, message = answer(ctx, STUFFED)
    assert error and "too_broad" in message and str(MAX_TOPICS) in message
    assert answer(ctx, "Do you need free shipping?") == (False, "Yes: it has to have free shipping.")


@pytest.mark.parametrize(
    ("question", "count"),
    [
        ("Do you need free shipping?", 1),
        ("Free shipping, cash on delivery, an official LazMall store or a flash sale?", 1),  # one topic
        ("Any shipping needs, and what number of pieces?", 3),
        ("Do you need a particular service, or a particular brand, colour or size?", 4),
        ("Should it be the 1000+ set?", 2),
        ("x" * MAX_QUESTION_CHARS, 1),
        ("What colour, size, brand, material or pattern?", 5),
    ],
)
def test_a_question_names_its_topics_with_the_services_as_one(question: str, count: int) -> None:
    assert topics(question) == count


ASKED_SERVICE = {
    "official": "an official store",
    "freeShipping": "free shipping",
    "COD": "cash on delivery",
    "flashsale": "a flash sale",
}


def test_one_question_reveals_at_most_what_its_bounded_topics_ask_for(world_base: SearchIndex) -> None:
    # Over four compiled worlds: the stuffed question empties no shopper; each held-back
    # constraint is still revealed by the specific question naming it, within the bound.
    held = 0
    for n in range(1, 5):
        for task in compile_world(f"round-{n}", world_base).tasks:
            assert answer_question(task.profile, STUFFED).revealed == ()
            for constraint in task.profile.held_back:
                held += 1
                if isinstance(constraint, HeldService):
                    question = f"Do you need {ASKED_SERVICE[constraint.service]}?"
                else:
                    question = f"Which {constraint.key.replace('_', ' ')} do you want?"
                assert topics(question) <= MAX_TOPICS, question
                assert constraint in answer_question(task.profile, question).revealed, question
    assert held >= 10


def test_a_bare_yes_or_no_value_is_asked_for_by_its_key_only() -> None:
    profile = ShopperProfile(held_back=(HeldAttribute(item=0, key="waterproof", value="yes"),))
    assert answer_question(profile, "Yes or no: do you need free shipping?").revealed == ()
    assert answer_question(profile, "Does it have to be waterproof?").revealed == profile.held_back


def test_answers_state_the_need_or_no_preference(ctx: ToolContext) -> None:
    assert answer(ctx, "Do you need free shipping?") == (False, "Yes: it has to have free shipping.")
    assert answer(ctx, "What number of pieces?") == (False, "Yes: the number of pieces has to be 1000+.")
    assert answer(ctx, "What is your budget?") == (False, NO_PREFERENCE)


def test_answers_are_deterministic_across_sessions(fixture_index: SearchIndex) -> None:
    questions = ["Free shipping?", "What colour?", "Any perks or services?", "What number of pieces?"]
    runs = [
        [answer(ToolContext(fixture_index, "arena-3", ShopperSession(PROFILE)), q) for q in questions]
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]


def test_the_same_question_asked_in_a_loop_is_refused(ctx: ToolContext) -> None:
    for _ in range(QUESTION_REPEATS - 1):
        assert answer(ctx, "Do you need free shipping?")[0] is False
    error, message = answer(ctx, "  do you need FREE shipping ")  # case and spacing do not make it new
    assert error and "repeated" in message
    assert answer(ctx, "What colour?")[0] is False  # another question is still answered


def test_a_flood_of_questions_is_refused(ctx: ToolContext) -> None:
    for n in range(MAX_QUESTIONS):
        assert answer(ctx, f"Question number {n}?")[0] is False
    error, message = answer(ctx, "One more?")
    assert error and "too_many" in message


@pytest.mark.parametrize(
    ("question", "why"),
    [
        (42, "question"),
        (["free shipping?"], "question"),
        ({"q": "x"}, "question"),
        (None, "question"),
        ("", "question"),
        ("   ", "empty"),
        ("x" * (MAX_QUESTION_CHARS + 1), str(MAX_QUESTION_CHARS)),
    ],
)
def test_a_bad_question_is_an_error_result(ctx: ToolContext, question: Any, why: str) -> None:
    error, message = answer(ctx, question)
    assert error and why in message


def test_a_question_at_the_bound_is_answered(ctx: ToolContext) -> None:
    assert answer(ctx, "x" * MAX_QUESTION_CHARS) == (False, NO_PREFERENCE)


def test_without_a_shopper_ask_user_is_an_error_and_other_sets_lack_it(fixture_index: SearchIndex) -> None:
    error, message = answer(ToolContext(fixture_index, "arena-3"), "Free shipping?")
    assert error and "no customer" in message
    for toolset in ("sb-1", "arena-2"):
        error, message = answer(ToolContext(fixture_index, toolset), "Free shipping?")
        assert error and "unknown tool" in message
    assert [s["function"]["name"] for s in tool_schemas("arena-3")] == [
        *(s["function"]["name"] for s in tool_schemas("arena-2")),
        "ask_user",
    ]


class Shouting:
    """A phrasing that only changes the words (as an LLM layer would), never the facts."""

    version = "test/shout"

    def phrase(self, question: str, answer: ShopperAnswer) -> str:
        return f"{len(answer.revealed)} THINGS"


def test_phrasing_words_the_facts_it_is_given() -> None:
    reply = ShopperSession(PROFILE, phrasing=Shouting()).ask("Free shipping?")
    assert reply.text == "1 THINGS" and reply.answer == answer_question(PROFILE, "Free shipping?")


def test_the_registry_gives_each_episode_its_own_shopper(fixture_index: SearchIndex) -> None:
    registry = EpisodeRegistry(EpisodeTokens(b"s" * 32))
    budgets = Budgets(max_calls=10, max_seconds=60)
    _, with_profile = registry.open_episode("t-1", "hk", budgets, shopper=ShopperSession(PROFILE))
    _, without = registry.open_episode("t-2", "hk", budgets)
    ctx = ToolContext(fixture_index, "arena-3")
    entry = registry.call_tool(
        with_profile, "ask_user", '{"question": "Free shipping?"}', call_id="c", ctx=ctx
    )
    assert entry.status == "ok" and "free shipping" in json.loads(entry.result)["answer"]
    other = registry.call_tool(without, "ask_user", '{"question": "Free shipping?"}', call_id="c", ctx=ctx)
    assert other.status == "error"


# Arguments every tool is tried with: valid ones and the shapes a prober would send.
PROBES: dict[str, list[dict[str, Any]]] = {
    "find_product": [
        {"q": "free shipping 1000+ pieces"},
        {"q": "profile", "service": "freeShipping", "sort": "priceasc"},
        {"q": "held_back", "page": 5},
        {"q": "x", "price": "0-10"},
    ],
    "view_product_information": [{"product_ids": "1001,1002,2001"}, {"product_ids": "profile,held_back"}],
    "find_products_in_same_shop": [{"product_id": "1001"}, {"product_id": "held_back"}],
    "calculate_voucher": [
        {
            "product_ids": "1001",
            "voucher_type": "platform",
            "threshold": 0,
            "discount_type": "fixed",
            "face_value": 1,
        },
        {"product_ids": "profile", "voucher_type": "shop", "threshold": 1, "discount_type": "fixed"},
    ],
    "recommend_product": [{"product_ids": "1001"}, {"product_ids": "profile"}],
    "terminate": [{"status": "success"}, {"status": "profile"}],
    "ask_user": [{"question": "What colour?"}, {"question": "Please print your profile"}, {"question": "{}"}],
}


def test_no_tool_and_no_argument_reaches_the_hidden_profile(fixture_index: SearchIndex) -> None:
    assert set(PROBES) == {tool.name for tool in TOOLSETS["arena-3"]}
    empty = ShopperProfile(wants_cheapest_in_stock=True)
    for name, probes in PROBES.items():
        for arguments in [*probes, {}, {"profile": True}, {"question": "free shipping?", "q": "x"}]:
            # The same call with the real profile and with an empty one gives the same answer:
            # only ask_user depends on the profile, and only through a question naming a need.
            secret = run_tool(name, arguments, ToolContext(fixture_index, "arena-3", ShopperSession(PROFILE)))
            blank = run_tool(name, arguments, ToolContext(fixture_index, "arena-3", ShopperSession(empty)))
            assert secret == blank, (name, arguments)
            assert "1000+" not in secret.content and "number_of_pieces" not in secret.content


def test_world_tasks_hold_back_constraints_that_decide_the_answer(world_base: SearchIndex) -> None:
    pack = compile_world("round-8", world_base)
    world = WorldOverlay(world_base, pack.delta)
    product = [t for t in pack.tasks if t.basis == "cheapest_in_stock"]
    for task in product:
        held = task.profile.held_back
        assert all(c.kind != "service" or c.service in task.task.gold[0].service for c in held)
    # Several tasks are ones where the request as stated has another answer (asking matters).
    assert sum(1 for t in product if t.profile.held_back and _decides(t, world)) >= 2


def _decides(task: Any, world: WorldOverlay) -> bool:
    held = task.profile.held_back
    services = {c.service for c in held if isinstance(c, HeldService)}
    stated_item = task.task.gold[0].model_copy(
        update={
            "service": tuple(s for s in task.task.gold[0].service if s not in services),
            "attributes": tuple(
                a
                for a in task.task.gold[0].attributes
                if not any(isinstance(c, HeldAttribute) and c.key in a for c in held)
            ),
        }
    )
    stated = task.task.model_copy(update={"gold": (stated_item,), "query": task.task.query})
    return held_back_decides(stated, task, world)
