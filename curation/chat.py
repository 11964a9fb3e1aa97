"""The ``normalise`` stage: a judged trace as a canonical chat record (messages + tools), or why not.

The canonical message has the same six keys in every row, whatever its role, because that is
what a trainer sees anyway: ``datasets`` unions the keys of a column across rows and fills the
missing ones with None. Writing them ourselves makes a JSONL row equal the Parquet row read back.

| key | system / user | assistant | tool |
| --- | --- | --- | --- |
| ``role`` | the role | ``assistant`` | ``tool`` |
| ``content`` | the text | the text, ``""`` when the turn only calls tools | the result text, verbatim |
| ``reasoning_content`` | None | the model's thinking, or None | None |
| ``tool_calls`` | None | ``[{"id", "type", "function": {"name", "arguments": {...}}}]`` or None | None |
| ``tool_call_id`` | None | None | the id of the call it answers |
| ``name`` | None | None | the called tool's name |

``arguments`` is a JSON object (a dict), not the JSON string of the OpenAI wire format: TRL's
dataset guide and transformers' chat templates take a dict (templates that print arguments
run ``tojson`` over them, so a string would be quoted twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from arena.arguments import ArgumentError, split_product_ids
from arena.tools import DEFAULT_TOOLSET, TOOLSETS, tool_kind, tool_schemas
from arena.types import Message, Trajectory
from storage.records import JudgedTrace

# Drop reasons of the normalise stage, in the order they are checked.
NORMALISE_REASONS = (
    "no_trajectory",
    "unknown_toolset",
    "prompt_mismatch",
    "extra_user_turn",
    "unknown_tool",
    "bad_arguments",
    "duplicate_call_id",
    "orphan_tool_message",
    "unanswered_tool_call",
    "no_assistant_turn",
)
MESSAGE_KEYS = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")


@dataclass(frozen=True)
class ChatRecord:
    """A trace in the canonical chat schema: the prompt (system + user), the rest, and the tool schemas."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    toolset: str
    prompt_length: int  # how many leading messages are the prompt (system? + user)

    @property
    def prompt(self) -> list[dict[str, Any]]:
        """The system (if any) and user messages the episode started from."""
        return self.messages[: self.prompt_length]

    @property
    def completion(self) -> list[dict[str, Any]]:
        """Everything the agent and its tools said after the prompt."""
        return self.messages[self.prompt_length :]


@lru_cache(maxsize=16)
def schemas(toolset: str) -> list[dict[str, Any]]:
    """The OpenAI tool schemas of a tool set, built once per set (shared: never mutate the result)."""
    return tool_schemas(toolset)


def message(
    role: str,
    content: str,
    *,
    reasoning_content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """Build one canonical message (all six keys, in a fixed order)."""
    return {
        "role": role,
        "content": content,
        "reasoning_content": reasoning_content,
        "tool_calls": tool_calls,
        "tool_call_id": tool_call_id,
        "name": name,
    }


def normalise(trace: JudgedTrace) -> ChatRecord | str:
    """Return the trace as a canonical chat record, or the drop reason (see ``NORMALISE_REASONS``).

    The prompt must be the task's own query (a miner cannot rewrite what the model was asked),
    preceded by at most one system message; no later user turn (a harness nudge after a
    text-only answer teaches the wrong turn); every call names a tool of the episode's tool set
    with a JSON-object argument, and is answered by exactly one tool message.
    """
    trajectory = trace.trajectory
    if trajectory is None:
        return "no_trajectory"
    toolset = trace.judgment.versions.toolset or DEFAULT_TOOLSET
    if toolset not in TOOLSETS:
        return "unknown_toolset"
    head = _prompt(trajectory, trace.task.query)
    if isinstance(head, str):
        return head
    body = _body(trajectory.messages[len(head) :], {tool.name for tool in TOOLSETS[toolset]})
    if isinstance(body, str):
        return body
    return ChatRecord(messages=head + body, tools=schemas(toolset), toolset=toolset, prompt_length=len(head))


def _prompt(trajectory: Trajectory, query: str) -> list[dict[str, Any]] | str:
    messages = trajectory.messages
    head: list[dict[str, Any]] = []
    index = 0
    if messages[0].role == "system":
        head.append(message("system", messages[0].content or ""))
        index = 1
    if index >= len(messages) or messages[index].role != "user":
        return "prompt_mismatch"
    if (messages[index].content or "").strip() != query.strip():
        return "prompt_mismatch"
    head.append(message("user", query))
    return head


def _body(messages: tuple[Message, ...], known: set[str]) -> list[dict[str, Any]] | str:
    out: list[dict[str, Any]] = []
    pending: dict[str, str] = {}  # call id -> tool name, waiting for its result
    answered: set[str] = set()
    for item in messages:
        if item.role in ("system", "user"):
            return "extra_user_turn"
        if item.role == "tool":
            call_id = item.tool_call_id or ""
            if call_id not in pending:
                return "orphan_tool_message"
            out.append(message("tool", item.content or "", tool_call_id=call_id, name=pending.pop(call_id)))
            answered.add(call_id)
            continue
        if pending:  # a new assistant turn before every earlier call got its result
            return "unanswered_tool_call"
        calls: list[dict[str, Any]] = []
        for call in item.tool_calls or ():
            if call.function.name not in known:
                return "unknown_tool"
            arguments = call.function.parsed  # read once, by the tool server's own parser
            if isinstance(arguments, ArgumentError):
                return "bad_arguments"
            if call.id in answered or call.id in pending:
                return "duplicate_call_id"
            pending[call.id] = call.function.name
            calls.append(
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": arguments},
                }
            )
        out.append(
            message(
                "assistant",
                item.content or "",
                reasoning_content=item.reasoning_content,
                tool_calls=calls or None,
            )
        )
    if pending:
        return "unanswered_tool_call"
    if not any(m["role"] == "assistant" for m in out):
        return "no_assistant_turn"
    return out


def answer_ids(record: ChatRecord) -> tuple[str, ...]:
    """The product ids of the last answer call (``recommend_product``), read as the judge reads them."""
    last: Any = None
    for item in record.messages:
        for call in item["tool_calls"] or ():
            if tool_kind(call["function"]["name"]) == "answer":
                last = call["function"]["arguments"].get("product_ids")
    ids, _ = split_product_ids(last)
    return ids
