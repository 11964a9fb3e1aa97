"""Changes mid-episode (a price, a sell-out): a stale answer fails, a re-checked one succeeds."""

from __future__ import annotations

import json
import random

import pytest

from arena.episode import run_logged
from arena.index import SearchIndex
from arena.tools import ToolContext, run_tool
from arena.types import FunctionCall, Message, ToolCall, ToolLogEntry, Trajectory
from arena.world.changes import cheapest_fits, compile_changes
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.types import WorldSpec, WorldTask
from judging.config import JudgeConfig
from judging.judge import judge_rules
from judging.types import GroundingEvidence, Judgment, OutcomeEvidence
from judging.world import AtAnswer, answer_version, judged_at_answer


@pytest.fixture(scope="module")
def changed(world_base: SearchIndex) -> tuple[WorldOverlay, WorldTask]:
    """A world whose task's cheapest fit reprices above its runner-up after two calls."""
    pack = compile_world("changes-test", world_base, WorldSpec(changes=0))
    world = WorldOverlay(world_base, pack.delta)
    task = next(t for t in pack.tasks if t.basis == "cheapest_in_stock" and len(cheapest_fits(world, t)) >= 2)
    revised, (task,) = compile_changes(
        world, [task], random.Random(0), WorldSpec(changes=1, stock_changes=0, change_after=(2, 2))
    )
    return revised, task


@pytest.fixture(scope="module")
def sold_out(world_base: SearchIndex) -> tuple[WorldOverlay, WorldTask]:
    """A world whose task's cheapest fit sells out after two calls."""
    pack = compile_world("changes-test", world_base, WorldSpec(changes=0, stock_changes=0))
    world = WorldOverlay(world_base, pack.delta)
    task = next(t for t in pack.tasks if t.basis == "cheapest_in_stock" and len(cheapest_fits(world, t)) >= 2)
    spec = WorldSpec(changes=0, stock_changes=1, change_after=(2, 2))
    revised, (task,) = compile_changes(world, [task], random.Random(0), spec)
    (change,) = revised.delta.changes
    assert change.stock == 0 and change.price is None and change.product_id == task.revisions[0].product_id
    return revised, task


def _episode(
    world: WorldOverlay, task: WorldTask, steps: list[tuple[str, dict[str, object], str]]
) -> tuple[Trajectory, list[ToolLogEntry]]:
    """Play ``(tool, arguments, what the assistant says first)`` through the logged tools."""
    ctx = ToolContext(index=world)
    messages = [Message(role="user", content=task.task.query)]
    log: list[ToolLogEntry] = []
    for seq, (tool, arguments, say) in enumerate(steps):
        call = ToolCall(id=f"c{seq}", function=FunctionCall(name=tool, arguments=json.dumps(arguments)))
        entry = run_logged(tool, call.function.arguments, ctx, episode_id="ep", seq=seq, call_id=call.id)
        messages += [
            Message(role="assistant", content=say, tool_calls=(call,)),
            Message(role="tool", tool_call_id=call.id, content=entry.result),
        ]
        log.append(entry)
    return Trajectory(
        task_id=task.task.task_id, episode_id="ep", miner_hotkey="hk", messages=tuple(messages)
    ), log


def _judged(
    world: WorldOverlay, task: WorldTask, trajectory: Trajectory, log: list[ToolLogEntry]
) -> Judgment:
    at = judged_at_answer(task, world, log)
    return judge_rules(
        task.task,
        trajectory,
        log=log,
        against=AtAnswer(at.products, truth=at.truth, stock=at.stock),
        config=JudgeConfig(),
    )


def _search(world: WorldOverlay, task: WorldTask) -> dict[str, object]:
    """The title search's page that lists both the first and the later cheapest fit (relevance order)."""
    wanted = {r.product_id for r in task.revisions}
    for page in range(1, 6):
        arguments: dict[str, object] = {"q": task.task.gold[0].titles[0], "page": page}
        rows = json.loads(run_tool("find_product", json.dumps(arguments), ToolContext(index=world)).content)
        if wanted <= {row["product_id"] for row in rows}:
            return arguments
    raise AssertionError("the title search never lists both listings on one page")


def _shown(log: list[ToolLogEntry], seq: int) -> dict[str, float]:
    return {row["product_id"]: row["price"] for row in json.loads(log[seq].result)}


def test_an_answer_on_the_stale_price_fails_and_its_price_is_grounded_at_its_version(
    changed: tuple[WorldOverlay, WorldTask],
) -> None:
    world, task = changed
    first, then = task.revisions[0], task.revisions[1]
    stale = first.product_id
    trajectory, log = _episode(
        world,
        task,
        [
            ("find_product", _search(world, task), "Searching."),
            ("view_product_information", {"product_ids": stale}, "Checking the cheapest."),
            (
                "recommend_product",
                {"product_ids": stale},
                f"{stale} is the cheapest, priced at {first.price:g}.",
            ),
        ],
    )
    assert [e.world_version for e in log] == [0, 0, 1] and answer_version(log) == 1
    assert _shown(log, 0)[stale] == first.price
    judgment = _judged(world, task, trajectory, log)
    assert not judgment.success
    outcome = next(c for c in judgment.checks if c.name == "outcome")
    assert "price" in outcome.explanation
    grounding = next(c for c in judgment.checks if c.name == "grounding")
    evidence = grounding.evidence_as(GroundingEvidence)
    (claim,) = evidence.claims
    assert claim.correct and claim.world_version == 0 and claim.actual == f"{first.price:g}"
    assert grounding.value == 1.0  # what it cited was what it was shown: not a misquote
    assert "cited before a change" in grounding.explanation and then.product_id != stale


def test_an_answer_after_re_checking_succeeds_and_its_price_is_grounded_at_the_new_version(
    changed: tuple[WorldOverlay, WorldTask],
) -> None:
    world, task = changed
    first, then = task.revisions[0], task.revisions[1]
    trajectory, log = _rechecking_episode(world, task, "Prices move", "is now the cheapest")
    assert [e.world_version for e in log] == [0, 0, 1, 1]
    assert _shown(log, 2)[then.product_id] == then.price and _shown(log, 2)[first.product_id] > then.price
    judgment = _judged(world, task, trajectory, log)
    assert judgment.success and judgment.score > 0.9
    grounding = next(c for c in judgment.checks if c.name == "grounding")
    (claim,) = grounding.evidence_as(GroundingEvidence).claims
    assert claim.correct and claim.world_version == 1 and grounding.value == 1.0
    assert "cited before a change" not in grounding.explanation


def test_a_price_misquoted_against_every_version_is_still_a_misquote(
    changed: tuple[WorldOverlay, WorldTask],
) -> None:
    world, task = changed
    then = task.revisions[1]
    trajectory, log = _episode(
        world,
        task,
        [
            ("find_product", _search(world, task), "Searching."),
            ("find_product", _search(world, task), "Again."),
            ("find_product", _search(world, task), "Once more."),
            (
                "recommend_product",
                {"product_ids": then.product_id},
                f"{then.product_id} costs {then.price + 50:g}.",
            ),
        ],
    )
    grounding = next(c for c in _judged(world, task, trajectory, log).checks if c.name == "grounding")
    (claim,) = grounding.evidence_as(GroundingEvidence).claims
    assert not claim.correct and claim.world_version == 1 and "misquoted" in grounding.explanation


def _rechecking_episode(
    world: WorldOverlay, task: WorldTask, moves: str, answer: str
) -> tuple[Trajectory, list[ToolLogEntry]]:
    """Search, view the cheapest, search again (``moves``: why), then recommend the new cheapest."""
    first, then = task.revisions[0], task.revisions[1]
    return _episode(
        world,
        task,
        [
            ("find_product", _search(world, task), "Searching."),
            ("view_product_information", {"product_ids": first.product_id}, "Checking the cheapest."),
            ("find_product", _search(world, task), f"{moves}: checking again before I answer."),
            (
                "recommend_product",
                {"product_ids": then.product_id},
                f"{then.product_id} {answer}, priced at {then.price:g}.",
            ),
        ],
    )


def _stock(log: list[ToolLogEntry], seq: int) -> dict[str, int]:
    return {row["product_id"]: row["stock"] for row in json.loads(log[seq].result) if "stock" in row}


def test_an_answer_on_a_listing_sold_out_before_it_fails_as_out_of_stock(
    sold_out: tuple[WorldOverlay, WorldTask],
) -> None:
    world, task = sold_out
    first = task.revisions[0]
    stale = first.product_id
    trajectory, log = _episode(
        world,
        task,
        [
            ("find_product", _search(world, task), "Searching."),
            ("view_product_information", {"product_ids": stale}, "Checking the cheapest."),
            (
                "recommend_product",
                {"product_ids": stale},
                f"{stale} is the cheapest, priced at {first.price:g}.",
            ),
        ],
    )
    assert [e.world_version for e in log] == [0, 0, 1] and _stock(log, 0).get(stale, 1) > 0
    at = judged_at_answer(task, world, log)
    assert at.stock is not None and at.stock([stale]) == {stale: 0}
    judgment = _judged(world, task, trajectory, log)
    assert not judgment.success and judgment.score < 0.5
    outcome = next(c for c in judgment.checks if c.name == "outcome")
    (item,) = outcome.evidence_as(OutcomeEvidence).items
    assert item.reason == "out_of_stock_at_answer" and item.rule == 0.0 and item.gt is False
    assert "out_of_stock_at_answer" in outcome.explanation
    grounding = next(c for c in judgment.checks if c.name == "grounding")
    assert grounding.value == 1.0  # the price it cited was right: the failure is the pick, not a misquote


def test_an_answer_after_re_checking_the_stock_succeeds(sold_out: tuple[WorldOverlay, WorldTask]) -> None:
    world, task = sold_out
    first, then = task.revisions[0], task.revisions[1]
    trajectory, log = _rechecking_episode(world, task, "Stock moves", "is the cheapest in stock now")
    assert _stock(log, 2)[first.product_id] == 0 and then.product_id != first.product_id
    judgment = _judged(world, task, trajectory, log)
    assert judgment.success and judgment.score > 0.9
