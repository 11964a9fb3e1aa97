"""Loading agents by name: llm, scripted, module:function."""

from __future__ import annotations

import functools

import pytest

from arena.types import ToolResult
from neurons.miner.agents.contract import AgentError, AgentOutput, AgentRequest
from neurons.miner.agents.llm import LLMAgent
from neurons.miner.agents.loading import load_agent
from neurons.miner.agents.scripted import scripted_agent


async def no_tools(name: str, arguments: dict[str, object], call_id: str) -> ToolResult:
    return ToolResult(content="[]")


def test_scripted_loads_the_scripted_agent() -> None:
    assert load_agent("scripted") is scripted_agent


async def test_scripted_options_are_bound() -> None:
    agent = load_agent("scripted", narrate=False)
    assert isinstance(agent, functools.partial)
    out = await agent(AgentRequest(task_id="t", episode_id="e", query="chili powder"), no_tools)
    assert all(m.content is None for m in out.messages if m.role == "assistant")


async def test_llm_builds_an_llm_agent_with_its_options() -> None:
    agent = load_agent("llm", base_url="http://127.0.0.1:9/v1", model="m", nudges=3)
    assert isinstance(agent, LLMAgent)
    assert agent.options.model == "m" and agent.options.nudges == 3
    await agent.aclose()


def test_llm_without_an_endpoint_is_refused() -> None:
    with pytest.raises(AgentError, match="base_url"):
        load_agent("llm", model="m")


def test_module_function_loads_any_agent() -> None:
    assert load_agent("neurons.miner.agents.scripted:scripted_agent") is scripted_agent


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nonsense", "is not"),
        ("no_such_module_xyz:agent", "cannot import"),
        ("neurons.miner.agents.scripted:missing", "no callable"),
        ("neurons.miner.agents.scripted:SHOP_TRIES", "no callable"),
    ],
)
def test_bad_specs_are_refused_with_a_reason(spec: str, message: str) -> None:
    with pytest.raises(AgentError, match=message):
        load_agent(spec)


def test_unknown_options_are_refused() -> None:
    with pytest.raises(AgentError, match="options"):
        load_agent("scripted", temperature=0.2)


def test_agent_output_defaults() -> None:
    out = AgentOutput(messages=[])
    assert out.stop == "terminated" and out.usage is None


async def test_an_output_becomes_the_wire_trajectory() -> None:
    request = AgentRequest(task_id="t-9", episode_id="ep-9", query="chili powder")
    out = await load_agent("scripted")(request, no_tools)
    trajectory = out.trajectory(request, "hk-1")
    wire = trajectory.to_wire()
    assert wire["schema"] == "arena.trajectory/1"
    assert (wire["task_id"], wire["episode_id"], wire["miner_hotkey"]) == ("t-9", "ep-9", "hk-1")
    assert len(wire["messages"]) == len(out.messages)
    assert "usage" not in wire  # the scripted agent runs no model
