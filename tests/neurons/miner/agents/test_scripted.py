"""The scripted agent against a small fake tool world over the 20-product fixture catalog."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from arena.catalog import parse_product_row
from arena.types import Product, ToolResult, Trajectory
from neurons.miner.agents.contract import AgentRequest
from neurons.miner.agents.query import read_item
from neurons.miner.agents.scripted import match_score, scripted_agent

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


class FakeWorld:
    """A crude stand-in for the tool server: OR keyword search with ShoppingBench's filters, 10 per page."""

    def __init__(self, products: list[Product]) -> None:
        self.products = {p.product_id: p for p in products}
        self.calls: list[tuple[str, dict[str, Any], str]] = []

    async def __call__(
        self, name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        self.calls.append((name, arguments, call_id))
        if name == "find_product":
            return ToolResult(content=json.dumps(self.find(arguments), ensure_ascii=False))
        if name == "view_product_information":
            ids = [i.strip() for i in str(arguments["product_ids"]).split(",")]
            found = [self.products[i].model_dump(mode="json") for i in ids if i in self.products]
            return ToolResult(content=json.dumps(found, ensure_ascii=False))
        if name in ("recommend_product", "terminate"):
            return ToolResult(content=json.dumps({name: arguments}))
        return ToolResult(content=f"unknown tool {name}", error=True)

    def find(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        words = set(str(arguments["q"]).lower().split())
        low, _, high = str(arguments.get("price") or "-").partition("-")
        services = [s for s in str(arguments.get("service") or "").split(",") if s]
        scored = []
        for product in self.products.values():
            score = len(words & set(product.search_text().lower().split()))
            if not score:
                continue
            if arguments.get("shop_id") and product.shop_id != arguments["shop_id"]:
                continue
            if (low and product.price < float(low)) or (high and product.price > float(high)):
                continue
            if any(s not in product.service for s in services):
                continue
            scored.append((-score, product.product_id, product))
        hits = [p for _, _, p in sorted(scored)][:10]
        return [
            {
                "product_id": p.product_id,
                "shop_id": p.shop_id,
                "title": p.title,
                "price": p.price,
                "service": list(p.service),
                "sold_count": p.sold_count,
            }
            for p in hits
        ]


def world() -> FakeWorld:
    rows = (FIXTURES / "catalog.jsonl").read_text(encoding="utf-8").split("\n")
    return FakeWorld([parse_product_row(json.loads(row)) for row in rows if row.strip()])


def request(query: str, **overrides: Any) -> AgentRequest:
    return AgentRequest(
        **{
            "task_id": "t-1",
            "episode_id": "ep-1",
            "query": query,
            "max_steps": 20,
            "deadline_s": 30.0,
            **overrides,
        }
    )


def recommended(calls: list[tuple[str, dict[str, Any], str]]) -> str | None:
    answers = [args["product_ids"] for name, args, _ in calls if name == "recommend_product"]
    return answers[-1] if answers else None


async def test_it_finds_the_product_that_matches_the_query_and_its_price() -> None:
    tools = world()
    out = await scripted_agent(request("Show me chili powder in a bag priced above 300 pesos."), tools)
    assert out.stop == "terminated"
    assert recommended(tools.calls) == "4001"
    search = tools.calls[0]
    assert search[0] == "find_product"
    assert search[1]["price"] == "300-" and "chili" in search[1]["q"]
    assert tools.calls[-1][:2] == ("terminate", {"status": "success"})


async def test_service_phrases_become_the_service_filter() -> None:
    tools = world()
    await scripted_agent(request("Looking for a crash cymbal with free shipping."), tools)
    assert tools.calls[0][1]["service"] == "freeShipping"
    assert recommended(tools.calls) == "2002"


async def test_filters_are_dropped_when_nothing_survives_them() -> None:
    tools = world()
    await scripted_agent(request("Show me a violin bow with LazMall priced under 100 pesos."), tools)
    searches = [args for name, args, _ in tools.calls if name == "find_product"]
    assert [("price" in s, "service" in s) for s in searches] == [(True, True), (True, False), (False, False)]
    assert recommended(tools.calls) == "2003"


async def test_messages_are_openai_format_and_form_a_valid_trajectory() -> None:
    tools = world()
    out = await scripted_agent(request("Heavy duty rubber wheel for a pushcart"), tools)
    assert [m.role for m in out.messages[:2]] == ["system", "user"]
    assert out.usage is None
    for assistant, tool in zip(out.messages[2::2], out.messages[3::2], strict=True):
        assert assistant.role == "assistant" and assistant.tool_calls and len(assistant.tool_calls) == 1
        assert isinstance(assistant.content, str) and assistant.content
        assert tool.role == "tool" and tool.tool_call_id == assistant.tool_calls[0].id
    assert [
        c.id
        for c in Trajectory(
            task_id="t-1", episode_id="ep-1", miner_hotkey="hk", messages=tuple(out.messages)
        ).tool_calls()
    ] == [call_id for _, _, call_id in tools.calls]
    # Tool results go back verbatim.
    first_result = await world()("find_product", tools.calls[0][1], "x")
    assert out.messages[3].content == first_result.content


async def test_it_is_deterministic() -> None:
    first, second = world(), world()
    out_1 = await scripted_agent(request("Stainless steel sponge holder for the kitchen sink"), first)
    out_2 = await scripted_agent(request("Stainless steel sponge holder for the kitchen sink"), second)
    assert out_1.messages == out_2.messages
    assert recommended(first.calls) == "3001"


async def test_without_narration_assistant_content_is_empty() -> None:
    out = await scripted_agent(request("Manual can opener"), world(), narrate=False)
    assert all(m.content is None for m in out.messages if m.role == "assistant")


async def test_a_same_shop_request_searches_inside_the_first_items_shop() -> None:
    tools = world()
    query = (
        "Find a shop that sells these items: (1) a sponge holder in stainless steel; (2) a manual can opener."
    )
    out = await scripted_agent(request(query), tools)
    assert out.stop == "terminated"
    in_shop = [args for name, args, _ in tools.calls if name == "find_product" and "shop_id" in args]
    assert in_shop and in_shop[0]["shop_id"] == "s6"
    assert recommended(tools.calls) == "3001,3003"


async def test_nothing_found_terminates_with_failure_and_no_recommendation() -> None:
    tools = world()
    out = await scripted_agent(request("Quantum flux capacitor"), tools)
    assert out.stop == "terminated"
    assert recommended(tools.calls) is None
    assert tools.calls[-1][:2] == ("terminate", {"status": "failure"})


async def test_a_tiny_step_budget_still_leaves_room_to_answer() -> None:
    tools = world()
    out = await scripted_agent(request("Chili powder bag", max_steps=3), tools)
    assert [name for name, _, _ in tools.calls] == ["find_product", "recommend_product", "terminate"]
    assert out.stop == "terminated"


async def test_a_one_step_budget_only_terminates() -> None:
    tools = world()
    out = await scripted_agent(request("Chili powder bag", max_steps=1), tools)
    assert out.stop == "terminated"
    assert [(name, args) for name, args, _ in tools.calls] == [("terminate", {"status": "failure"})]


async def test_the_deadline_stops_a_run_stuck_on_a_slow_tool() -> None:
    async def slow(name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        await asyncio.sleep(5)
        return ToolResult(content="[]")

    out = await scripted_agent(request("Chili powder bag", deadline_s=0.2), slow)
    assert out.stop == "deadline"
    # The unanswered call is the last message: the trajectory shows what was attempted.
    assert out.messages[-1].role == "assistant"


async def test_tool_errors_are_survived() -> None:
    async def broken(name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        return ToolResult(content="Error: index unavailable", error=True)

    out = await scripted_agent(request("Chili powder bag"), broken)
    assert out.stop == "terminated"
    assert out.messages[-1].content == "Error: index unavailable"


def test_match_score_prefers_products_meeting_price_and_service() -> None:
    item = read_item("chili powder priced above 300 pesos with cash on delivery")
    fits = {"title": "Chili Powder 1 kilo", "price": 390.0, "service": ["COD"]}
    cheap = {"title": "Chili Powder 1 kilo", "price": 210.0, "service": ["COD"]}
    no_cod = {"title": "Chili Powder 1 kilo", "price": 390.0, "service": []}
    assert match_score(item, fits, 0) > match_score(item, cheap, 0)
    assert match_score(item, fits, 0) > match_score(item, no_cod, 0)
    assert match_score(item, fits, 0) > match_score(item, fits, 3)
