"""Agents the e2e miners run by ``module:function``: one that always fails, one that is slow to answer."""

from __future__ import annotations

import asyncio

from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller
from neurons.miner.agents.scripted import scripted_agent


async def failing_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """Raise on every task: the miner answers 500 ``agent_error`` and the validator scores it 0."""
    raise RuntimeError(f"this agent fails on purpose (task {request.task_id})")


async def slow_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """The scripted agent after a pause, so a test can act while episodes are in flight."""
    await asyncio.sleep(min(4.0, request.deadline_s / 2))
    return await scripted_agent(request, call_tool)
