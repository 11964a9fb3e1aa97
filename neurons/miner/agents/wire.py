"""Our messages on the OpenAI chat wire: request messages, the reply's assistant message, running calls."""

from __future__ import annotations

import json
import uuid
from typing import Any

from arena.types import FunctionCall, Message, ToolCall, ToolResult
from neurons.miner.agents.contract import ToolCaller

# How a tool result is shown to a server whose template drops tool messages (wire only; the
# returned trajectory always carries a proper tool message with the verbatim content).
TOOL_RESULT_AS_USER = "Result of {name} (call {call_id}):\n{content}"


def forced_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    """Return an OpenAI ``tool_choice``: a bare tool name becomes a forced function."""
    if isinstance(choice, str) and choice not in ("auto", "required", "none"):
        return {"type": "function", "function": {"name": choice}}
    return choice


def assistant_message(message: Any, seen_ids: set[str]) -> Message:
    """Turn a server's assistant message into ours: tool calls with unique ids, reasoning if any.

    Args:
        message: the ``choices[0].message`` of a chat completion.
        seen_ids: call ids already used in this episode; updated in place.

    Returns:
        The assistant message; ``arguments`` strings are kept exactly as the model wrote them.
    """
    calls: list[ToolCall] = []
    for raw in getattr(message, "tool_calls", None) or ():
        function = getattr(raw, "function", None)
        if function is None:  # a non-function ("custom") tool call: not ours to run
            continue
        call_id = getattr(raw, "id", None) or ""
        if not call_id or call_id in seen_ids:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        seen_ids.add(call_id)
        arguments = function.arguments if isinstance(function.arguments, str) else ""
        calls.append(
            ToolCall(id=call_id, function=FunctionCall(name=function.name or "", arguments=arguments))
        )
    content = getattr(message, "content", None)
    return Message(
        role="assistant",
        content=content if isinstance(content, str) else None,
        reasoning_content=reasoning_of(message),
        tool_calls=tuple(calls) or None,
    )


def reasoning_of(message: Any) -> str | None:
    """Return the model's reasoning text where the server reports it (vLLM/SGLang name it differently)."""
    extra = getattr(message, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = getattr(message, key, None) or extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


async def run_call(call: ToolCall, call_tool: ToolCaller) -> ToolResult:
    """Run one tool call; arguments that are not a JSON object are an error result the model sees.

    Such a call never reaches the tool server: its arguments cannot be sent as an object. The
    model's own text goes with the parsed arguments (``raw``), so the call reaches the tool
    server byte for byte as the model wrote it (what the validator attests).
    """
    text = call.function.arguments.strip() or "{}"
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        return ToolResult(
            content=f"Error: the arguments of {call.function.name} are not valid JSON ({exc}).", error=True
        )
    if not isinstance(arguments, dict):
        return ToolResult(
            content=f"Error: the arguments of {call.function.name} must be a JSON object.", error=True
        )
    return await call_tool(call.function.name, arguments, call.id, raw=call.function.arguments)


def wire_messages(messages: list[Message], *, tool_results_as_user: bool = False) -> list[dict[str, Any]]:
    """Return the messages as the chat API expects them (reasoning is not sent back).

    Args:
        messages: the conversation so far.
        tool_results_as_user: render tool messages as user messages naming the call.
    """
    names = {call.id: call.function.name for m in messages for call in m.tool_calls or ()}
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool" and tool_results_as_user:
            call_id = message.tool_call_id or ""
            text = TOOL_RESULT_AS_USER.format(
                name=names.get(call_id, "tool"), call_id=call_id, content=message.content or ""
            )
            wire.append({"role": "user", "content": text})
            continue
        item = message.model_dump(mode="json", exclude_none=True, exclude={"reasoning_content"})
        # Always a string: some servers (llama-cpp-python) reject a null content, and chat
        # templates index message.content directly.
        item["content"] = message.content or ""
        wire.append(item)
    return wire
