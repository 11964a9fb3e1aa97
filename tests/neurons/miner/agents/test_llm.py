"""The LLM agent against a scripted OpenAI-compatible server: the real `openai` client, a fake tool caller."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.gateway import INFERENCE_PREFIX, Gateway
from arena.httpguard import AddressPolicy, address_policy
from arena.types import ToolResult
from neurons.miner.agents.contract import AgentRequest, GatewayAccess, prompt_text
from neurons.miner.agents.llm import make_llm_agent
from tests.neurons.chat_stub import ChatStub, Delay, reply_calls, reply_text, tool_call
from tests.neurons.standins import serve_app

TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "find_product",
            "description": "Search the catalog.",
            "parameters": {
                "type": "object",
                "properties": {
                    "q": {"type": "string"},
                    "page": {"type": "integer", "minimum": 1, "maximum": 5},
                },
                "required": ["q", "page"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "recommend_product",
            "description": "Answer.",
            "parameters": {
                "type": "object",
                "properties": {"product_ids": {"type": "string"}},
                "required": ["product_ids"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "terminate",
            "description": "End.",
            "parameters": {
                "type": "object",
                "properties": {"status": {"type": "string", "enum": ["success", "failure"]}},
                "required": ["status"],
            },
        },
    },
)

HITS = json.dumps(
    [{"product_id": "1001", "title": "Nike Air Zoom Pegasus", "price": 3200.0}], ensure_ascii=False
)


class FakeTools:
    """Canned tool results; records every call it receives."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], str]] = []
        self.raws: list[str | None] = []

    async def __call__(
        self, name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        self.calls.append((name, arguments, call_id))
        self.raws.append(raw)
        if name == "find_product":
            return ToolResult(content=HITS)
        if name == "recommend_product":
            return ToolResult(content=json.dumps({"recommended": arguments.get("product_ids")}))
        if name == "terminate":
            return ToolResult(content=json.dumps({"status": arguments.get("status")}))
        return ToolResult(content=f"unknown tool {name}", error=True)


def request(**overrides: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "task_id": "t-1",
        "episode_id": "ep-1",
        "query": "Nike running shoes",
        "tools": TOOLS,
        "max_steps": 10,
        "deadline_s": 30.0,
    }
    return AgentRequest(**{**fields, **overrides})


def solving_script() -> list[dict[str, Any] | int | Delay]:
    return [
        reply_calls(("find_product", {"q": "nike running shoes", "page": 1})),
        reply_calls(("recommend_product", {"product_ids": "1001"})),
        reply_calls(("terminate", {"status": "success"})),
    ]


async def test_a_solving_episode_returns_openai_messages_with_verbatim_tool_results() -> None:
    tools = FakeTools()
    async with ChatStub(solving_script()) as stub:
        async with make_llm_agent(stub.base_url, "stub-model") as agent:
            out = await agent(request(), tools)

    assert out.stop == "terminated"
    roles = [m.role for m in out.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert out.messages[0].content == prompt_text("shopping_agent.md")
    assert out.messages[1].content == "Nike running shoes"
    assert out.messages[3].content == HITS
    # Each tool message answers the call before it, and the tool caller saw the same id.
    for assistant, tool, seen in zip(out.messages[2::2], out.messages[3::2], tools.calls, strict=True):
        assert assistant.tool_calls is not None
        assert tool.tool_call_id == assistant.tool_calls[0].id == seen[2]
    assert [(name, args) for name, args, _ in tools.calls] == [
        ("find_product", {"q": "nike running shoes", "page": 1}),
        ("recommend_product", {"product_ids": "1001"}),
        ("terminate", {"status": "success"}),
    ]
    assert out.usage is not None
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (300, 30)


async def test_the_server_receives_tools_choice_and_the_whole_conversation() -> None:
    async with ChatStub(solving_script()) as stub:
        async with make_llm_agent(stub.base_url, "stub-model", temperature=0.3, seed=7) as agent:
            await agent(request(), FakeTools())

    first, last = stub.requests[0], stub.requests[-1]
    assert first["model"] == "stub-model"
    assert first["tools"] == list(TOOLS)
    assert first["tool_choice"] == "auto"
    assert first["temperature"] == 0.3 and first["seed"] == 7
    assert "parallel_tool_calls" not in first
    assert [m["role"] for m in last["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert last["messages"][3] == {
        "role": "tool",
        "tool_call_id": last["messages"][2]["tool_calls"][0]["id"],
        "content": HITS,
    }
    # Assistant content is always a string on the wire (llama-cpp-python rejects null).
    assert last["messages"][2]["content"] == ""


async def test_reasoning_content_is_recorded_but_not_sent_back() -> None:
    script = solving_script()
    script[0] = reply_calls(
        ("find_product", {"q": "shoes", "page": 1}), reasoning_content="I should search first."
    )
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            out = await agent(request(), FakeTools())

    assert out.messages[2].reasoning_content == "I should search first."
    assert all("reasoning_content" not in m for m in stub.requests[1]["messages"])


async def test_a_text_answer_gets_one_reminder_then_ends_the_episode() -> None:
    async with ChatStub([reply_text("I think Nike is good."), reply_text("Still no tool.")]) as stub:
        async with make_llm_agent(stub.base_url, "m", nudges=1) as agent:
            out = await agent(request(), FakeTools())

    assert out.stop == "no_tool_call"
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert out.messages[3].content == prompt_text("nudge.md")
    assert len(stub.requests) == 2


async def test_a_reminded_model_that_calls_a_tool_carries_on() -> None:
    script = [reply_text("Let me think."), *solving_script()]
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            out = await agent(request(), FakeTools())
    assert out.stop == "terminated"


async def test_without_nudges_a_text_answer_ends_at_once() -> None:
    async with ChatStub([reply_text("Done.")]) as stub:
        async with make_llm_agent(stub.base_url, "m", nudges=0) as agent:
            out = await agent(request(), FakeTools())
    assert out.stop == "no_tool_call"
    assert len(out.messages) == 3


@pytest.mark.parametrize("arguments", ['{"q": "shoes", "page": 1', "[1, 2]", "not json"])
async def test_malformed_arguments_come_back_as_a_tool_error_and_the_episode_goes_on(arguments: str) -> None:
    tools = FakeTools()
    script = [reply_calls(("find_product", arguments)), *solving_script()]
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            out = await agent(request(), tools)

    assert out.stop == "terminated"
    bad_call = out.messages[2].tool_calls
    assert bad_call is not None and bad_call[0].function.arguments == arguments  # kept as the model wrote it
    assert out.messages[3].role == "tool" and out.messages[3].content.startswith("Error:")
    assert [name for name, _, _ in tools.calls] == ["find_product", "recommend_product", "terminate"]
    assert stub.requests[1]["messages"][3]["content"] == out.messages[3].content


async def test_empty_arguments_mean_an_empty_object() -> None:
    tools = FakeTools()
    async with ChatStub([reply_calls(("terminate", ""))]) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            await agent(request(), tools)
    assert tools.calls[0][:2] == ("terminate", {})


@pytest.mark.parametrize("status", [400, 404, 500])
async def test_a_server_error_ends_the_episode_cleanly(status: int) -> None:
    script: list[dict[str, Any] | int | Delay] = [
        reply_calls(("find_product", {"q": "x", "page": 1})),
        status,
    ]
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m", max_retries=0) as agent:
            out = await agent(request(), FakeTools())
    assert out.stop == "model_error"
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "tool"]


async def test_an_unreachable_server_is_a_model_error() -> None:
    async with ChatStub([]) as stub:
        base_url = stub.base_url
    async with make_llm_agent(base_url, "m", max_retries=0) as agent:
        out = await agent(request(), FakeTools())
    assert out.stop == "model_error"
    assert out.usage is None


async def test_the_step_budget_ends_a_looping_model() -> None:
    script = [reply_calls(("find_product", {"q": f"q{i}", "page": 1})) for i in range(5)]
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            out = await agent(request(max_steps=3), FakeTools())
    assert out.stop == "max_steps"
    assert len(stub.requests) == 3
    assert sum(m.role == "tool" for m in out.messages) == 3


async def test_the_deadline_ends_a_slow_model_call() -> None:
    script: list[dict[str, Any] | int | Delay] = [Delay(5.0, reply_text("late"))]
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            started = time.monotonic()
            out = await agent(request(deadline_s=0.5), FakeTools())
            elapsed = time.monotonic() - started
    assert out.stop == "deadline"
    assert elapsed < 4.0
    assert [m.role for m in out.messages] == ["system", "user"]


async def test_parallel_calls_run_in_order_and_each_gets_its_result() -> None:
    tools = FakeTools()
    script = [
        reply_calls(("find_product", {"q": "a", "page": 1}), ("find_product", {"q": "b", "page": 2})),
        reply_calls(("recommend_product", {"product_ids": "1001"}), ("terminate", {"status": "success"})),
    ]
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m", parallel_tool_calls=True) as agent:
            out = await agent(request(), tools)
    assert out.stop == "terminated"
    assert [args.get("q") for _, args, _ in tools.calls[:2]] == ["a", "b"]
    assert [m.role for m in out.messages[2:]] == ["assistant", "tool", "tool", "assistant", "tool", "tool"]
    assert stub.requests[0]["parallel_tool_calls"] is True


async def test_missing_or_repeated_call_ids_are_replaced_by_unique_ones() -> None:
    tools = FakeTools()
    first = {
        "role": "assistant",
        "content": None,
        "tool_calls": [tool_call("find_product", {"q": "a", "page": 1}, "")],
    }
    second = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            tool_call("find_product", {"q": "b", "page": 1}, "dup"),
            tool_call("terminate", {"status": "failure"}, "dup"),
        ],
    }
    async with ChatStub([first, second]) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            out = await agent(request(), tools)
    ids = [call_id for _, _, call_id in tools.calls]
    assert len(ids) == 3 and len(set(ids)) == 3 and all(ids)
    assert ids[1] == "dup"
    assert [m.tool_call_id for m in out.messages if m.role == "tool"] == ids


async def test_stop_after_recommend_ends_without_terminate() -> None:
    script = solving_script()
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m", stop_after_recommend=True) as agent:
            out = await agent(request(), FakeTools())
    assert out.stop == "terminated"
    assert len(stub.requests) == 2


async def test_tool_results_can_be_sent_as_user_messages_without_changing_the_trajectory() -> None:
    async with ChatStub(solving_script()) as stub:
        async with make_llm_agent(stub.base_url, "m", tool_results_as_user=True) as agent:
            out = await agent(request(), FakeTools())
    wire = stub.requests[1]["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "user"]
    assert wire[3]["content"].startswith("Result of find_product") and HITS in wire[3]["content"]
    assert out.messages[3].role == "tool" and out.messages[3].content == HITS


async def test_tightened_schemas_are_sent_only_when_asked() -> None:
    async with ChatStub(solving_script()) as stub:
        async with make_llm_agent(stub.base_url, "m", schema_max_string=40, tool_choice="required") as agent:
            await agent(request(), FakeTools())
    sent = stub.requests[0]
    q = sent["tools"][0]["function"]["parameters"]["properties"]["q"]
    assert q["pattern"].endswith("{0,40}$")
    assert sent["tools"][0]["function"]["parameters"]["properties"]["page"]["enum"] == [1, 2, 3, 4, 5]
    assert sent["tool_choice"] == "required"


async def test_a_system_prompt_file_replaces_the_bundled_prompt(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("You are terse.\n", encoding="utf-8")
    async with ChatStub(solving_script()) as stub:
        async with make_llm_agent(stub.base_url, "m", system_prompt=prompt) as agent:
            out = await agent(request(), FakeTools())
    assert out.messages[0].content == "You are terse."
    assert stub.requests[0]["messages"][0] == {"role": "system", "content": "You are terse."}


async def test_a_missing_usage_report_gives_no_usage() -> None:
    async with ChatStub(solving_script(), usage=None) as stub:
        async with make_llm_agent(stub.base_url, "m") as agent:
            out = await agent(request(), FakeTools())
    assert out.usage is None
    assert out.stop == "terminated"


async def test_a_call_slower_than_the_request_timeout_is_a_model_error_not_a_deadline() -> None:
    script: list[dict[str, Any] | int | Delay] = [Delay(3.0, reply_text("late"))]
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "m", request_timeout_s=0.3, max_retries=0) as agent:
            out = await agent(request(deadline_s=30.0), FakeTools())
    assert out.stop == "model_error"


async def test_tool_calls_go_out_with_the_models_own_text() -> None:
    spaced = '{"q":   "nike running",\n "page": 1}'
    tools = FakeTools()
    script = [{"role": "assistant", "content": None, "tool_calls": [tool_call("find_product", spaced, "c1")]}]
    script.append(reply_calls(("terminate", {"status": "success"})))
    async with ChatStub(script) as stub:
        async with make_llm_agent(stub.base_url, "stub-model") as agent:
            await agent(request(), tools)
    assert tools.raws[0] == spaced and tools.calls[0][1] == {"q": "nike running", "page": 1}


@asynccontextmanager
async def gateway_for(policy: AddressPolicy) -> AsyncIterator[tuple[EpisodeRegistry, GatewayAccess, str]]:
    """A validator's gateway on loopback, with one open episode: (registry, its access, the episode id)."""
    registry = EpisodeRegistry(EpisodeTokens(b"g" * 32))
    gateway = Gateway(registry, policy)
    app = FastAPI()
    app.include_router(gateway.router())
    try:
        async with serve_app(app, force_exit=True) as url:
            episode_id, token = registry.open_episode("t-1", "hk", Budgets(10, 60.0))
            yield registry, GatewayAccess(base_url=f"{url}{INFERENCE_PREFIX}", token=token), episode_id
    finally:
        await gateway.aclose()


async def test_the_model_is_called_through_the_gateway_where_the_task_offers_one() -> None:
    async with ChatStub(solving_script()) as stub, gateway_for(address_policy(["127.0.0.0/8"])) as gw:
        registry, access, episode_id = gw
        async with make_llm_agent(stub.base_url, "stub-model") as agent:
            out = await agent(request(gateway=access), FakeTools())
    assert out.stop == "terminated" and len(stub.requests) == 3
    exchanges = registry.inference_log(episode_id)
    assert [e.outcome for e in exchanges] == ["ok"] * 3
    assert [json.loads(e.request)["messages"] for e in exchanges] == [r["messages"] for r in stub.requests]


async def test_a_gateway_refusing_the_endpoint_sends_the_agent_to_its_model_directly() -> None:
    async with ChatStub(solving_script()) as stub, gateway_for(address_policy()) as gw:
        registry, access, episode_id = gw
        async with make_llm_agent(stub.base_url, "stub-model") as agent:
            out = await agent(request(gateway=access), FakeTools())
    assert out.stop == "terminated" and len(stub.requests) == 3  # all three straight to the model
    assert [e.outcome for e in registry.inference_log(episode_id)] == ["refused"]  # asked once


async def test_without_a_gateway_or_with_it_off_the_agent_calls_its_model_directly() -> None:
    async with ChatStub(solving_script() * 2) as stub:
        absent = GatewayAccess(base_url=f"{stub.base_url.removesuffix('/v1')}{INFERENCE_PREFIX}", token="t")
        async with make_llm_agent(stub.base_url, "stub-model") as agent:
            out = await agent(request(gateway=absent), FakeTools())  # 404: no gateway there
        async with make_llm_agent(stub.base_url, "stub-model", via_gateway=False) as agent:
            off = await agent(request(gateway=absent), FakeTools())
    assert out.stop == off.stop == "terminated" and len(stub.requests) == 6
