"""The real local model (SmolLM2-135M, llama-cpp-python) drives the LLM agent: valid tool calls come back.

Needs `make install-local-llm`; run with `make test-local-llm`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.gateway import INFERENCE_PREFIX, Gateway
from arena.httpguard import address_policy
from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.toolserver import create_tool_app
from arena.types import ToolResult
from neurons.demo.local_llm import LocalLLM, agent_options, server_available
from neurons.miner.agents.contract import AgentRequest, GatewayAccess
from neurons.miner.agents.llm import make_llm_agent
from neurons.miner.tool_client import EpisodeTools
from tests.neurons.standins import serve_app

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(
        not server_available(), reason="the local model is not installed (make install-local-llm)"
    ),
]


def sb1_tools() -> list[dict[str, Any]]:
    """The sb-1 tool schemas from arena.tools when it is there, else ShoppingBench's own four."""
    try:
        from arena.tools import tool_schemas  # type: ignore[attr-defined]

        return list(tool_schemas("sb-1"))
    except ImportError:
        pass

    def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        parameters = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }

    return [
        tool(
            "find_product",
            "Search for products; returns up to 10 (product_id, shop_id, title, price, service, sold_count).",
            {
                "q": {"type": "string", "description": "The search keywords."},
                "page": {"type": "integer", "minimum": 1, "maximum": 5},
                "shop_id": {"type": "string"},
                "price": {"type": "string", "description": 'A price range such as "0-100" or "1000-".'},
                "sort": {"type": "string", "enum": ["priceasc", "pricedesc", "order", "default"]},
                "service": {
                    "type": "string",
                    "description": "official, freeShipping, COD or flashsale, comma-joined.",
                },
            },
            ["q", "page"],
        ),
        tool(
            "view_product_information",
            "Show the details of products: SKU options, attributes, descriptions.",
            {"product_ids": {"type": "string", "description": "Comma-separated product ids."}},
            ["product_ids"],
        ),
        tool(
            "recommend_product",
            "Recommend products to the customer (the final answer).",
            {"product_ids": {"type": "string", "description": "Comma-separated product ids."}},
            ["product_ids"],
        ),
        tool(
            "terminate",
            "End the conversation.",
            {"status": {"type": "string", "enum": ["success", "failure"]}},
            ["status"],
        ),
    ]


HITS = [
    {
        "product_id": "4001",
        "shop_id": "s8",
        "title": "Hyco Chili Powder 1 kilo Bag",
        "price": 390.0,
        "service": ["COD"],
        "sold_count": 12,
    },
    {
        "product_id": "4002",
        "shop_id": "s8",
        "title": "Chili Powder Hot 500g Bag",
        "price": 210.0,
        "service": ["COD"],
        "sold_count": 40,
    },
]


class FakeTools:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(
        self, name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        self.calls.append((name, arguments))
        if name == "find_product":
            return ToolResult(content=json.dumps(HITS))
        if name == "view_product_information":
            return ToolResult(
                content=json.dumps([{**h, "attributes": {"packaging_type": ["bag"]}} for h in HITS])
            )
        return ToolResult(content=json.dumps({"ok": name}))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    log = Path(tmp_path_factory.mktemp("local-llm")) / "server.log"
    with LocalLLM(log_path=log, startup_timeout_s=180) as llm:
        yield llm


@pytest.mark.parametrize(
    "query",
    ["Show me chili powder in a bag priced above 300 pesos.", "I'm looking for creatine powder sachets."],
)
async def test_the_local_model_emits_valid_tool_calls(server: LocalLLM, query: str) -> None:
    tools = sb1_tools()
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    fake = FakeTools()
    async with make_llm_agent(server.base_url, server.model, **agent_options()) as agent:
        out = await agent(
            AgentRequest(
                task_id="t", episode_id="e", query=query, tools=tuple(tools), max_steps=3, deadline_s=300
            ),
            fake,
        )

    assert out.stop != "model_error", out
    calls = [call for m in out.messages if m.role == "assistant" for call in m.tool_calls or ()]
    assert calls, "the model made no tool call"
    for call in calls:
        assert call.function.name in schemas
        arguments = json.loads(call.function.arguments)
        assert isinstance(arguments, dict)
        assert set(schemas[call.function.name].get("required", [])) <= arguments.keys()
        assert set(arguments) <= set(schemas[call.function.name]["properties"])
    # Every call reached the tools with the arguments the model wrote.
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == fake.calls
    assert out.usage is not None and out.usage.completion_tokens > 0


async def test_the_local_model_through_the_validators_gateway_makes_attested_calls(
    server: LocalLLM, fixture_index: SearchIndex
) -> None:
    # The demo's path: the miner's agent calls the embedded model through the validator's
    # gateway (loopback allowed, as the demo's validator sets it); its calls are all attested.
    registry = EpisodeRegistry(EpisodeTokens(b"d" * 32))
    gateway = Gateway(registry, address_policy(["127.0.0.0/8"]))
    app = create_tool_app(ToolContext(index=fixture_index), registry=registry)
    app.include_router(gateway.router())
    try:
        async with serve_app(app, force_exit=True) as url, httpx.AsyncClient() as http:
            episode_id, token = registry.open_episode("t", "hk", Budgets(10, 600.0))
            tools = EpisodeTools(
                http, base_url=url, token=token, max_calls=10, deadline=time.monotonic() + 600
            )
            access = GatewayAccess(base_url=f"{url}{INFERENCE_PREFIX}", token=token)
            request = AgentRequest(
                task_id="t",
                episode_id=episode_id,
                query="I'm looking for running shoes.",
                tools=tuple(sb1_tools()),
                max_steps=3,
                deadline_s=600,
                gateway=access,
            )
            async with make_llm_agent(server.base_url, server.model, **agent_options()) as agent:
                out = await agent(request, tools)
    finally:
        await gateway.aclose()
    log = registry.log(episode_id)
    assert out.stop != "model_error", out
    assert log and [e.nonce_status for e in log] == ["valid"] * len(log)
    # On a loaded CPU an exchange may time out upstream (the miner's, and retried); every call
    # the tool server received came out of a completion the gateway served.
    served = [e for e in registry.inference_log(episode_id) if e.outcome == "ok"]
    assert sum(e.tool_calls for e in served) >= len(log)
