"""Agents the demo's miners run by ``module:function``: the local model's LLM agent, and one that gives up.

``arena miner --agent llm`` uses the LLM agent's defaults, which suit real servers. The embedded
135M model needs the options of :func:`neurons.demo.local_llm.agent_options` (constrained tool
choice, tightened schemas, bounded turns); :func:`local_model_agent` applies them, taking the
endpoint from the miner's own variables (``ARENA_LLM_BASE_URL``, ``ARENA_LLM_MODEL``).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from arena.types import FunctionCall, Message, ToolCall
from neurons.demo.local_llm import MODEL_NAME, agent_options
from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller, prompt_text
from neurons.miner.agents.llm import make_llm_agent

BASE_URL_ENV = "ARENA_LLM_BASE_URL"
MODEL_ENV = "ARENA_LLM_MODEL"


async def local_model_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """Run the reference LLM agent against the embedded local model, with that model's options.

    Raises:
        RuntimeError: ``ARENA_LLM_BASE_URL`` is not set (the miner answers ``agent_error``).
    """
    base_url = os.environ.get(BASE_URL_ENV)
    if not base_url:
        raise RuntimeError(f"{BASE_URL_ENV} is not set: the local model agent needs the model's endpoint")
    model = os.environ.get(MODEL_ENV) or MODEL_NAME
    async with make_llm_agent(base_url, model, **agent_options()) as agent:
        return await agent(request, call_tool)


async def give_up_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """Search the query once, then end the episode without recommending anything (scores 0).

    The demo's failing miner: it completes every episode and uses the tools correctly, so its
    traces are judged and stored like any other, but it never answers, so its weight stays at
    the bottom.
    """
    digest = hashlib.sha256(request.episode_id.encode()).hexdigest()[:12]
    messages = [
        Message(role="system", content=prompt_text("shopping_agent.md")),
        Message(role="user", content=request.query),
    ]
    steps: list[tuple[str, dict[str, Any], str]] = [
        ("find_product", {"q": request.query[:100], "page": 1}, "Searching for the request."),
        ("terminate", {"status": "failure"}, "Nothing here looks right; giving up."),
    ]
    for number, (name, arguments, note) in enumerate(steps[: request.max_steps], start=1):
        call = ToolCall(
            id=f"call_{digest}_{number}",
            function=FunctionCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False)),
        )
        messages.append(Message(role="assistant", content=note, tool_calls=(call,)))
        result = await call_tool(name, arguments, call.id)
        messages.append(Message(role="tool", tool_call_id=call.id, content=result.content))
    return AgentOutput(messages=messages, usage=None, stop="terminated")
