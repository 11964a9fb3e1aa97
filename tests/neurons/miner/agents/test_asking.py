"""The reference agents and ask_user: the scripted agent asks on a world; the prompts document the tool."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arena.index import SearchIndex
from arena.tools import ToolContext, tool_schemas
from arena.types import ToolLogEntry, ToolResult
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.shopper import ShopperSession
from arena.world.tasks import held_back_decides
from arena.world.types import HeldService, WorldPack, WorldTask
from judging.judge import JudgeConfig, judge_rules
from judging.types import Judgment
from judging.world import AtAnswer
from neurons.miner.agents.contract import AgentRequest, prompt_text, system_prompt
from neurons.miner.agents.llm import make_llm_agent
from neurons.miner.agents.query import read_item
from neurons.miner.agents.scripted import question_for, scripted_agent
from tests.arena.logging_caller import logging_caller
from tests.neurons.chat_stub import ChatStub, reply_calls


@pytest.fixture(scope="module")
def pack(world_base: SearchIndex) -> WorldPack:
    return compile_world("round-8", world_base)


async def solve(world: WorldOverlay, task: WorldTask, toolset: str) -> tuple[Judgment, list[ToolLogEntry]]:
    """The scripted agent on one world task through the real tools (and the task's shopper), judged."""
    ctx = ToolContext(index=world, toolset=toolset, shopper=ShopperSession(task.profile))
    log: list[ToolLogEntry] = []

    call_tool = logging_caller(ctx, "ep", log)

    request = AgentRequest(
        task_id=task.task.task_id, episode_id="ep", query=task.task.query, tools=tuple(tool_schemas(toolset))
    )
    trajectory = (await scripted_agent(request, call_tool)).trajectory(request, "hk-scripted")
    judgment = judge_rules(
        task.task,
        trajectory,
        log=log,
        against=AtAnswer(world.products, profile=task.profile),
        config=JudgeConfig(toolset=toolset),
    )
    return judgment, log


async def test_the_scripted_agent_asks_and_wins_the_tasks_that_need_it(
    pack: WorldPack, world_base: SearchIndex
) -> None:
    world = WorldOverlay(world_base, pack.delta)
    silent, asking = [], []
    for task in (t for t in pack.tasks if t.basis == "cheapest_in_stock"):
        never, _ = await solve(world, task, "arena-2")
        asked, log = await solve(world, task, "arena-3")
        assert not never.rejects and not asked.rejects and not asked.fabricated
        assert [e.tool for e in log].count("ask_user") == 1  # one question, before the search
        assert log[0].tool == "ask_user" and asked.process.questions == 1
        silent.append(never.success)
        asking.append(asked.success)
    # Asking never loses a task here, and wins several that the silent agent misses.
    assert all(a or not s for s, a in zip(silent, asking, strict=True))
    assert sum(asking) >= sum(silent) + 2


async def test_a_basket_with_a_budget_is_not_asked_about(pack: WorldPack, world_base: SearchIndex) -> None:
    world = WorldOverlay(world_base, pack.delta)
    task = next(t for t in pack.tasks if t.basis == "world_voucher")
    judgment, log = await solve(world, task, "arena-3")
    assert "ask_user" not in [e.tool for e in log] and judgment.process.questions == 0


def test_the_question_names_only_the_services_the_request_leaves_out() -> None:
    question = question_for(read_item("a toner I can pay cash on delivery for, on a LazFlash deal"))
    assert "free shipping" in question and "LazMall" in question
    assert "cash on delivery" not in question and "flash sale" not in question
    assert "brand, colour or size" in question


def test_held_back_decides_is_false_without_held_back_constraints(
    pack: WorldPack, world_base: SearchIndex
) -> None:
    world = WorldOverlay(world_base, pack.delta)
    for task in pack.tasks:
        if not task.profile.held_back:
            assert not held_back_decides(task.task, task, world)
    assert any(isinstance(c, HeldService) for t in pack.tasks for c in t.profile.held_back)


def test_system_prompts_document_ask_user_only_where_it_is_offered() -> None:
    base = prompt_text("shopping_agent.md")
    with_ask = [s["function"]["name"] for s in tool_schemas("arena-3")]
    without = [s["function"]["name"] for s in tool_schemas("arena-2")]
    assert system_prompt(base, without) == base
    assert system_prompt(base, with_ask).startswith(base) and "ask_user(question)" in system_prompt(
        base, with_ask
    )


async def test_the_llm_agent_sends_the_ask_user_prompt_with_arena_3() -> None:
    async def tools(
        name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        return ToolResult(content=json.dumps({"answer": "No preference beyond what I already said."}))

    script: list[Any] = [reply_calls(("terminate", {"status": "failure"}))]
    for toolset, documented in (("arena-3", True), ("arena-2", False)):
        request = AgentRequest(
            task_id="t", episode_id="ep", query="a toner", tools=tuple(tool_schemas(toolset)), max_steps=2
        )
        async with ChatStub(list(script)) as stub:
            async with make_llm_agent(stub.base_url, "stub-model") as agent:
                out = await agent(request, tools)
        assert ("ask_user(question)" in (out.messages[0].content or "")) is documented
