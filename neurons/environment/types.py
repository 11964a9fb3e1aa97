"""The environment's vocabulary: a reset's request and answer, an action, a step's outcome, a session's state.

One shape each, shared by the library (``neurons.environment.session``), the HTTP server
(``neurons.environment.server``), the OpenEnv adapter and the TRL factory.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from arena.types import Frozen

# Why a session ended: the agent called terminate; the step budget ran out; the wall-time budget
# ran out; the agent (or its trainer) finished it, as a miner returns its trajectory.
SessionEnd = Literal["terminated", "max_steps", "timeout", "finished"]
MAX_CONTENT_CHARS = 20_000  # one turn's text (the judge caps a trajectory's size, the wire caps a step)
MAX_ARGUMENT_CHARS = 20_000


class ResetRequest(Frozen):
    """Which task a session opens on: by id, else by seed (the seed-th task, modulo), else at random.

    ``system`` is the agent's own system prompt, kept at the head of the transcript (the
    environment has none of its own: the validator sends a miner only the request and the tools).
    """

    task_id: str | None = Field(default=None, min_length=1, max_length=128)
    seed: int | None = Field(default=None, ge=0)
    system: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)


class Reset(Frozen):
    """A new session: the request as a miner gets it, the tools it may call, the budget."""

    session_id: str
    task_id: str
    request: str
    tools: tuple[dict[str, Any], ...]
    toolset: str
    max_steps: int
    messages: tuple[dict[str, Any], ...]  # the prompt: the system message (if any) and the request
    world_id: str | None = None
    pack_hash: str | None = None


class Action(Frozen):
    """One step: one tool call, and the assistant's text that came with it (judged for claims).

    ``arguments`` is the call's JSON text as the model wrote it, or that object already decoded.
    """

    tool: str = Field(max_length=128)
    arguments: str | dict[str, Any] = Field(default="{}")
    call_id: str | None = Field(default=None, min_length=1, max_length=64)
    content: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    reasoning: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)


class Final(Frozen):
    """A finished episode: the validator's score of it, and the return (the score less the penalties)."""

    score: float
    success: bool
    total_reward: float
    end: SessionEnd
    axis: str
    hallucinated_product_ids: tuple[str, ...] = ()
    judgment_hash: str


class StepOutcome(Frozen):
    """What one step returns: the tool's result, the turn's reward and its parts, and the end if it came."""

    session_id: str
    step: int  # the call's place in the episode (its tool-log seq); -1 for a step refused after the end
    tool: str
    result: str  # the tool message's content, verbatim from the log
    error: bool
    reward: float
    reward_parts: dict[str, float] = Field(default_factory=dict)
    done: bool = False
    final: Final | None = None


class SessionState(Frozen):
    """A session as it stands: its task, its steps, its rewards so far, and its end."""

    session_id: str
    task_id: str
    steps: int
    max_steps: int
    rewards: tuple[float, ...]
    total_reward: float
    done: bool
    end: SessionEnd | None = None
    final: Final | None = None
    world_id: str | None = None
