"""The checks every export row goes through before it is written, and those the formats share.

``validate_row`` checks a row's exact columns and its tools, then the format's own checks
(``Format.check``: its conversations, labels, ground truth...), then the provenance and world
columns where the format has them. The shared pieces (``conversation``, ``prompt``) are what the
formats' own checks are made of: messages with exactly the six keys, roles in order, every call
of a tool in ``tools`` with a dict of arguments, every call answered by one tool message.
"""

from __future__ import annotations

from typing import Any

from curation.chat import MESSAGE_KEYS
from curation.errors import RowError
from curation.formats.format import (
    ORIGINS,
    PROVENANCE_COLUMNS,
    ROLLOUT,
    ROLLOUT_COLUMNS,
    WORLD_COLUMNS,
    Format,
)

ROLES = ("system", "user", "assistant", "tool")


def validate_row(fmt: Format, row: dict[str, Any]) -> None:
    """Check one row against its format's documented TRL shape.

    Raises:
        RowError: with every problem found, the first few named.
    """
    problems: list[str] = []
    expected = set(fmt.features)
    if set(row) != expected:
        problems.append(f"columns {sorted(row)} are not {sorted(expected)}")
    else:
        names = _tools(row["tools"], problems) if "tools" in expected else set()
        fmt.check(row, names, problems)
        if fmt.provenance:
            _provenance(row, problems)
        if set(WORLD_COLUMNS) <= expected:
            _world(row, problems)
    if problems:
        raise RowError(f"invalid {fmt.name} row: " + "; ".join(problems[:5]))


def _provenance(row: dict[str, Any], problems: list[str]) -> None:
    """``origin`` is native, converted or rollout; a converted row names its source, converter and writer.

    A rollout row (``curation.rollouts``) names its policy, its weights' hash (or null) and its k.
    """
    if row["origin"] == ROLLOUT:
        _rollout(row, problems)
    elif row["origin"] not in ORIGINS:
        problems.append(f"origin must be one of {', '.join(ORIGINS)}, not {row['origin']!r}")
    elif row["origin"] == "converted":
        missing = [c for c in PROVENANCE_COLUMNS[1:] if not isinstance(row[c], str) or not row[c]]
        if missing:
            problems.append(f"a converted row needs {', '.join(missing)}")


def _rollout(row: dict[str, Any], problems: list[str]) -> None:
    missing = [c for c in ROLLOUT_COLUMNS if c not in row]
    if missing:
        problems.append(f"a rollout row needs the columns {', '.join(missing)}")
        return
    if not isinstance(row["policy"], str) or not row["policy"]:
        problems.append("a rollout row names its policy")
    if not isinstance(row["k"], int) or isinstance(row["k"], bool) or row["k"] < 1:
        problems.append("a rollout row's k is a positive integer")
    if not isinstance(row["weights_hash"], str | None):
        problems.append("a rollout row's weights_hash is a string or null")


def _world(row: dict[str, Any], problems: list[str]) -> None:
    """``world_id`` and ``pack_hash`` are both strings (a world task) or both null (a static one)."""
    values = [row[c] for c in WORLD_COLUMNS]
    if not (all(v is None for v in values) or all(isinstance(v, str) and v for v in values)):
        problems.append("world_id and pack_hash must be both set or both null")


def _tools(tools: Any, problems: list[str]) -> set[str]:
    names: set[str] = set()
    if not isinstance(tools, list) or not tools:
        problems.append("tools must be a non-empty list of function schemas")
        return names
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict) or not function.get("name"):
            problems.append(f"tool {str(tool)[:60]} is not a function schema")
            continue
        if not isinstance(function.get("parameters"), dict):
            problems.append(f"tool {function['name']} has no parameters schema")
        names.add(function["name"])
    return names


def _message(item: Any, where: str, problems: list[str]) -> bool:
    if not isinstance(item, dict) or tuple(item) != MESSAGE_KEYS:
        problems.append(f"{where}: a message must have exactly the keys {MESSAGE_KEYS}")
        return False
    role = item["role"]
    checks = {
        "unknown role": role not in ROLES,
        "content must be a string": not isinstance(item["content"], str),
        "a tool message needs tool_call_id and name": role == "tool"
        and not (isinstance(item["tool_call_id"], str) and isinstance(item["name"], str)),
        "only a tool message has tool_call_id or name": role != "tool"
        and (item["tool_call_id"] is not None or item["name"] is not None),
        "only an assistant message has tool_calls or reasoning": role != "assistant"
        and (item["tool_calls"] is not None or item["reasoning_content"] is not None),
        "reasoning_content must be a string or None": not isinstance(item["reasoning_content"], str | None),
    }
    problems.extend(f"{where}: {text}" for text, failed in checks.items() if failed)
    return not any(checks.values())


def _calls(item: dict[str, Any], where: str, names: set[str], problems: list[str]) -> list[str]:
    calls = item["tool_calls"]
    if calls is None:
        return []
    if not isinstance(calls, list) or not calls:
        problems.append(f"{where}: tool_calls must be None or a non-empty list")
        return []
    ids: list[str] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or set(call) != {"id", "type", "function"}
            or call["type"] != "function"
            or set(function) != {"name", "arguments"}
        ):
            problems.append(
                f"{where}: a tool call must be {{id, type: function, function: {{name, arguments}}}}"
            )
            continue
        if not isinstance(function["arguments"], dict):
            problems.append(
                f"{where}: arguments must be a JSON object (dict), not {type(function['arguments']).__name__}"
            )
        if function["name"] not in names:
            problems.append(f"{where}: calls {function['name']!r}, which is not in tools")
        ids.append(str(call["id"]))
    return ids


def conversation(
    messages: Any, column: str, names: set[str], problems: list[str], *, prompt_first: bool = False
) -> None:
    """Check a completion (from the assistant on) or, with ``prompt_first``, a whole conversation."""
    if not isinstance(messages, list) or not messages:
        problems.append(f"{column} must be a non-empty list of messages")
        return
    start = 0
    if prompt_first:
        start = prompt(messages, problems, column=column, whole=False)
    elif isinstance(messages[0], dict) and messages[0].get("role") != "assistant":
        problems.append(f"{column} must start with an assistant message")
    pending: set[str] = set()
    for index, item in enumerate(messages[start:], start):
        where = f"{column}[{index}]"
        if not _message(item, where, problems):
            continue
        if item["role"] in ("system", "user"):
            problems.append(f"{where}: no {item['role']} message after the prompt")
        elif item["role"] == "tool":
            if item["tool_call_id"] not in pending:
                problems.append(f"{where}: answers no pending tool call")
            pending.discard(item["tool_call_id"])
        else:
            if pending:
                problems.append(f"{where}: earlier tool calls have no result: {sorted(pending)}")
            pending = set(_calls(item, where, names, problems))
    if pending:
        problems.append(f"{column}: tool calls without a result: {sorted(pending)}")


def prompt(messages: Any, problems: list[str], *, column: str = "prompt", whole: bool = True) -> int:
    """Check a system? + user prompt; return how many messages it takes."""
    if not isinstance(messages, list) or not messages:
        problems.append(f"{column} must be a non-empty list of messages")
        return 0
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    length = 2 if roles[0] == "system" else 1
    if roles[length - 1 : length] != ["user"] or (whole and len(messages) != length):
        problems.append(f"{column} must open with an optional system message and one user message")
    for index, item in enumerate(messages[:length]):
        _message(item, f"{column}[{index}]", problems)
    return length
