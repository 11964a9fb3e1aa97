"""The agent contract: what a miner's agent receives, what it returns.

An agent is any ``async def agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput``.
It sees the user's query and the tool schemas, calls tools only through ``call_tool`` (the miner
wraps HTTP calls to the validator's tool server, the eval harness an in-process call), and
returns the whole conversation in OpenAI chat format. Two reference agents ship here:
``llm`` (a model chooses every call, see :mod:`neurons.miner.agents.llm`) and ``scripted`` (Python
chooses every call, see :mod:`neurons.miner.agents.scripted`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from importlib.resources import files
from typing import Any, Literal, Protocol

from pydantic import Field

from arena.types import Frozen, Message, ToolResult, Trajectory, Usage
from neurons.errors import NeuronError


class ToolCaller(Protocol):
    """How an agent calls a tool: ``await call_tool(name, arguments, call_id)`` (agent faults are results).

    ``raw`` is the arguments' JSON text exactly as the model wrote it, where there is one: it is
    sent as it is, so that the validator can match the call, byte for byte, to the completion
    its inference gateway served (an attested call); None sends ``arguments`` serialised.
    """

    def __call__(
        self, name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> Awaitable[ToolResult]:
        """Run one tool call and return its result."""
        ...


# Why an agent stopped. Informational: the validator judges the trajectory, not this.
AgentStop = Literal[
    "terminated",  # the agent called terminate (or, if so configured, recommend_product)
    "no_tool_call",  # the model answered in text and did not call a tool after being reminded
    "max_steps",  # the step budget ran out
    "deadline",  # the time budget ran out
    "model_error",  # the model server failed (connection, HTTP error, context overflow)
]


class AgentError(NeuronError):
    """An agent could not be loaded or built (bad spec, missing option); raised at start-up only."""


class GatewayAccess(Frozen):
    """The validator's inference gateway for one episode (``docs/protocol.md``, The inference gateway).

    Attributes:
        base_url: the OpenAI-compatible base URL (``<tool server>/v1/inference``).
        token: the episode token that authorises it (never logged).
    """

    base_url: str = Field(min_length=1)
    token: str = Field(min_length=1, repr=False)


class AgentRequest(Frozen):
    """One task as an agent sees it.

    Attributes:
        task_id: the task's id (for logs; the agent must not need it to solve the task).
        episode_id: the episode this run belongs to.
        query: the user's shopping request, verbatim.
        tools: OpenAI tool schemas (``{"type": "function", "function": {...}}``) the agent may call.
        max_steps: the most model turns (LLM agent) or tool rounds (scripted agent) to take.
        deadline_s: seconds from the start of the call by which the agent must have returned.
        gateway: the validator's inference gateway for this episode (None in process, where
            there is no validator); a model called through it makes attested tool calls.
    """

    task_id: str
    episode_id: str
    query: str = Field(min_length=1)
    tools: tuple[dict[str, Any], ...] = ()
    max_steps: int = Field(default=20, ge=1)
    deadline_s: float = Field(default=120.0, gt=0)
    gateway: GatewayAccess | None = None

    def tool_names(self) -> list[str]:
        """Return the names of the offered tools, in order."""
        return [str(tool.get("function", {}).get("name", "")) for tool in self.tools]


class AgentOutput(Frozen):
    """What an agent returns: the conversation (system and user first), token usage, why it stopped.

    When a budget ran out while tools were being called, the last assistant message may carry
    tool calls without results: the trajectory shows what was attempted, nothing is invented.
    """

    messages: list[Message]
    usage: Usage | None = None
    stop: AgentStop = "terminated"

    def trajectory(self, request: AgentRequest, miner_hotkey: str) -> Trajectory:
        """Return the ``arena.trajectory/1`` a miner sends back for ``request``."""
        return Trajectory(
            task_id=request.task_id,
            episode_id=request.episode_id,
            miner_hotkey=miner_hotkey,
            messages=tuple(self.messages),
            usage=self.usage,
        )


class Agent(Protocol):
    """Anything callable as ``await agent(request, call_tool)``."""

    def __call__(self, request: AgentRequest, call_tool: ToolCaller) -> Awaitable[AgentOutput]:
        """Solve one task, calling tools through ``call_tool``."""
        ...


def prompt_text(name: str) -> str:
    """Return a bundled prompt file's text (``neurons/miner/agents/prompts/<name>``), stripped."""
    return (files("neurons.miner.agents") / "prompts" / name).read_text(encoding="utf-8").strip()


ASK_TOOL = "ask_user"


def system_prompt(base: str, tool_names: list[str]) -> str:
    """The system prompt for an episode: ``base``, plus how to ask the customer where ask_user is offered."""
    return f"{base}\n\n{prompt_text('ask_user.md')}" if ASK_TOOL in tool_names else base
