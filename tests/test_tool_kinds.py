"""A new tool of an existing kind needs its module and a tool set: judging and curation read its kind.

The tool here exists in this test only (``find_cheapest``, kind ``search``); it joins a tool set
made for the test and nothing else changes. The process check counts its calls as searches and
the conversion's fact table reads its result as a search's, as they do for ``find_product``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import Field

from arena.episode import run_logged
from arena.index import SearchIndex
from arena.tools import TOOLSETS, Tool, ToolArgs, ToolContext, find_product, tool_kind
from arena.types import FunctionCall, Message, ToolCall, ToolLogEntry, ToolResult, Trajectory
from curation.conversion.facts import FactTable, task_facts
from curation.conversion.pruning import prune
from judging.config import JudgeConfig
from judging.process import check_process
from judging.types import ProcessEvidence
from tests.judging.factory import context, shop_task

TOOLSET = "kinds-test"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class CheapestArgs(ToolArgs):
    """The throwaway tool's arguments."""

    q: str = Field(description="Keywords.")


def run_cheapest(args: CheapestArgs, ctx: ToolContext) -> ToolResult:
    """find_product's first page, cheapest first: a search's rows."""
    return find_product.TOOL.run(find_product.Args(q=args.q, page=1, sort="priceasc"), ctx)


CHEAPEST = Tool(
    name="find_cheapest",
    kind="search",
    description="Cheapest first.",
    args_model=CheapestArgs,
    run=run_cheapest,
)


@pytest.fixture
def with_cheapest(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool set with the throwaway tool: the one place a new tool is added besides its module."""
    monkeypatch.setitem(TOOLSETS, TOOLSET, (*TOOLSETS["arena-2"], CHEAPEST))


def episode(index: SearchIndex, *calls: tuple[str, dict[str, Any]]) -> tuple[Trajectory, list[ToolLogEntry]]:
    """One assistant turn per call, each run and logged as the tool server runs and logs it."""
    ctx = ToolContext(index=index, toolset=TOOLSET)
    messages = [Message(role="user", content=shop_task().query)]
    log: list[ToolLogEntry] = []
    for seq, (name, arguments) in enumerate(calls):
        text = json.dumps(arguments)
        log.append(
            run_logged(name, text, ctx, episode_id="ep-kinds", seq=seq, call_id=f"c{seq}", now=lambda: T0)
        )
        call = ToolCall(id=f"c{seq}", function=FunctionCall(name=name, arguments=text))
        messages += [
            Message(role="assistant", content="Next.", tool_calls=(call,)),
            Message(role="tool", tool_call_id=call.id, content=log[-1].result),
        ]
    trajectory = Trajectory(
        task_id=shop_task().task_id, episode_id="ep-kinds", miner_hotkey="hk", messages=tuple(messages)
    )
    return trajectory, log


@pytest.mark.usefixtures("with_cheapest")
def test_the_process_check_counts_a_new_search_tool(fixture_index: SearchIndex) -> None:
    assert tool_kind("find_cheapest") == "search"
    trajectory, log = episode(
        fixture_index,
        ("find_cheapest", {"q": "nike pegasus running"}),
        ("find_cheapest", {"q": "nike revolution women"}),
        ("recommend_product", {"product_ids": "1001,1002"}),
    )
    check = check_process(context(trajectory, log, config=JudgeConfig(toolset=TOOLSET)))
    stats = check.evidence_as(ProcessEvidence).stats
    assert (stats.searches, stats.reformulations) == (2, 1)
    assert check.evidence_as(ProcessEvidence).parts["searched"] == 1.0


@pytest.mark.usefixtures("with_cheapest")
def test_the_conversion_facts_read_a_new_search_tool(fixture_index: SearchIndex) -> None:
    _, log = episode(fixture_index, ("find_cheapest", {"q": "nike pegasus running"}))
    table = FactTable(task_facts(shop_task()))
    table.add_result(log[0])
    assert [(search.seq, search.arguments) for search in table.searches] == [
        (0, {"q": "nike pegasus running"})
    ]
    shown = table.searches[0].ids
    assert shown and all(table.products[pid].found_by == 0 for pid in shown)
    # and pruning treats it as a search: no later step names its hits, so it goes
    assert prune(log).dropped == ((0, "unused_search"),)


@pytest.mark.usefixtures("with_cheapest")
def test_the_same_calls_without_the_tool_set_count_as_nothing(
    fixture_index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    trajectory, log = episode(fixture_index, ("find_cheapest", {"q": "nike pegasus running"}))
    monkeypatch.delitem(TOOLSETS, TOOLSET)  # no set offers it now: an agent's invented name
    assert tool_kind("find_cheapest") is None
    stats = check_process(context(trajectory, log)).evidence_as(ProcessEvidence).stats
    assert (stats.tool_calls, stats.searches) == (1, 0)
