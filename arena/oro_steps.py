"""Trajectories from other formats: ORO's step list (think / tool_call / response per step).

ORO (Bittensor subnet 15) and ShoppingBench's rollouts record an episode as a list of steps.
A step is either ``{"completion": {"message": {...}, "reasoning_content": ...}, "extra_info":
{"query": ..., "step": ...}}`` or the bare message ``{"think", "tool_call", "response", "obs"}``.
Each ``tool_call`` item is ``{"name", "parameters", "tool_call_id", "result"?}``; results may
instead sit in ``obs`` as ``{"tool_call_id", "results"}``. The mapping to ``arena.trajectory/1``:

- the query (``extra_info.query``, a ``user`` field, or the ``query`` argument) -> user message;
- each step -> one assistant message: ``think`` (else ``completion.reasoning_content``) ->
  ``reasoning_content``, ``response`` -> ``content``, each tool call -> an OpenAI tool call
  whose ``arguments`` are ``json.dumps(parameters)``; ORO derives call ids from a hash of name and
  parameters, so a repeated id gets a ``#n`` suffix to stay unique;
- each call's result -> a tool message right after its step: a string verbatim, anything else
  as ``json.dumps(result, ensure_ascii=False)`` (our tools' own encoding). A call without a
  recorded result gets no tool message, which the format check then rejects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from arena.types import FunctionCall, Message, ToolCall, Trajectory


def _message(step: Mapping[str, Any]) -> tuple[dict[str, Any], str, str | None]:
    """Return (the step's message dict, its fallback reasoning, its query if it carries one)."""
    completion = step.get("completion")
    if isinstance(completion, Mapping):
        message = completion.get("message") or {}
        extra = step.get("extra_info") or {}
        query = extra.get("query") if isinstance(extra, Mapping) else None
        return dict(message), str(completion.get("reasoning_content") or ""), query
    return dict(step), "", step.get("user") or None


def _content(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def trajectory_from_oro(
    steps: Sequence[Mapping[str, Any]],
    *,
    task_id: str,
    episode_id: str = "",
    miner_hotkey: str = "",
    query: str | None = None,
    system: str | None = None,
) -> Trajectory:
    """Convert an ORO / ShoppingBench step list into an ``arena.trajectory/1`` Trajectory.

    Raises:
        ValueError: when no user query can be found or a step is not an object.
    """
    messages: list[Message] = [Message(role="system", content=system)] if system else []
    body: list[Message] = []
    used: dict[str, int] = {}
    for number, step in enumerate(steps, start=1):
        if not isinstance(step, Mapping):
            raise ValueError(f"step {number} is not an object")
        message, fallback_think, step_query = _message(step)
        query = query or step_query
        think = str(message.get("think") or fallback_think or "") or None
        response = str(message.get("response") or "") or None
        obs = {
            o.get("tool_call_id"): o.get("results")
            for o in message.get("obs") or []
            if isinstance(o, Mapping)
        }
        calls: list[ToolCall] = []
        results: list[Message] = []
        for index, raw in enumerate(message.get("tool_call") or []):
            if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
                raise ValueError(f"step {number} tool call {index} has no name")
            base = str(raw.get("tool_call_id") or f"call_{number}_{index}")
            used[base] = used.get(base, 0) + 1
            call_id = base if used[base] == 1 else f"{base}#{used[base]}"
            arguments = json.dumps(raw.get("parameters") or {}, ensure_ascii=False)
            calls.append(ToolCall(id=call_id, function=FunctionCall(name=raw["name"], arguments=arguments)))
            if "result" in raw:
                results.append(Message(role="tool", tool_call_id=call_id, content=_content(raw["result"])))
            elif base in obs:
                results.append(Message(role="tool", tool_call_id=call_id, content=_content(obs.pop(base))))
        if not (think or response or calls):
            continue
        body.append(
            Message(
                role="assistant", content=response, reasoning_content=think, tool_calls=tuple(calls) or None
            )
        )
        body += results
    if not query:
        raise ValueError("no user query: pass query= or include extra_info.query in a step")
    messages += [Message(role="user", content=query), *body]
    return Trajectory(
        task_id=task_id, episode_id=episode_id, miner_hotkey=miner_hotkey, messages=tuple(messages)
    )


def load_trajectory(value: Any, *, task_id: str = "", query: str | None = None) -> Trajectory:
    """Read a trajectory: ``arena.trajectory/1``, an ORO step list, or ``{"steps": [...]}``.

    Args:
        value: The parsed JSON.
        task_id: Task id for step lists that do not carry one.
        query: The user query for step lists that do not carry one.

    Raises:
        ValueError: (pydantic's ValidationError included) when the value is none of these.
    """
    if isinstance(value, list):
        return trajectory_from_oro(value, task_id=task_id, query=query)
    if not isinstance(value, dict):
        raise ValueError(f"a trajectory is a JSON object or a list of steps, not {type(value).__name__}")
    if "messages" in value:
        return Trajectory.model_validate(value)
    if isinstance(value.get("steps"), list):
        return trajectory_from_oro(
            value["steps"],
            task_id=str(value.get("task_id") or task_id),
            episode_id=str(value.get("episode_id") or ""),
            miner_hotkey=str(value.get("miner_hotkey") or ""),
            query=value.get("query") or query,
            system=value.get("system"),
        )
    raise ValueError("not a trajectory: expected 'messages' (arena.trajectory/1) or 'steps' (ORO)")
