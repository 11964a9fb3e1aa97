"""What a stored trajectory may weigh: an over-long one is stored truncated, with markers saying so.

The judge reads the whole trajectory; storage keeps at most ``MAX_STORED_TRAJECTORY_CHARS`` of
its wire JSON. That is four times the judge's token budget in characters (32,768 tokens of
about 4 characters), so every trajectory that can score is stored whole: one over the bound is
a ``too_long`` reject anyway, and keeping all of it (up to the client's 4 MiB per answer) only
made the database, and every read of it, bigger. Truncation works on the wire dict, keeps the
stored form valid ``arena.trajectory/1``, and is deterministic, so a retried write has the same
content hash:

1. every text field (content, reasoning, call arguments) over ``MAX_FIELD_CHARS`` is cut, ending
   in ``…[N chars cut: stored truncated]``; a message keeps its first ``MAX_CALLS`` calls;
2. if that is still over the bound, the first and last messages that fit are kept around one
   ``system`` message saying how many were cut and that the trajectory was judged whole.
"""

from __future__ import annotations

import json
from typing import Any

MAX_STORED_TRAJECTORY_CHARS = 4 * 4 * 32_768  # 524,288: four times the judge's budget in characters
MAX_FIELD_CHARS = 16_384
MAX_CALLS = 64
_FIELDS = ("content", "reasoning_content")

Wire = dict[str, Any]


def _size(wire: Wire) -> int:
    return len(json.dumps(wire, ensure_ascii=False))


def _cut(text: str) -> str:
    return text[:MAX_FIELD_CHARS] + f" …[{len(text) - MAX_FIELD_CHARS} chars cut: stored truncated]"


def _cut_message(message: dict[str, Any]) -> dict[str, Any]:
    cut = dict(message)
    for name in _FIELDS:
        text = cut.get(name)
        if isinstance(text, str) and len(text) > MAX_FIELD_CHARS:
            cut[name] = _cut(text)
    calls = cut.get("tool_calls")
    if isinstance(calls, list):
        kept = []
        for call in calls[:MAX_CALLS]:
            function = dict(call.get("function", {}))
            arguments = function.get("arguments")
            if isinstance(arguments, str) and len(arguments) > MAX_FIELD_CHARS:
                function["arguments"] = _cut(arguments)
            kept.append({**call, "function": function})
        cut["tool_calls"] = kept
        if len(calls) > MAX_CALLS:
            note = f"[{len(calls) - MAX_CALLS} more calls cut: stored truncated]"
            cut["content"] = f"{cut['content']} {note}" if cut.get("content") else note
    return cut


def _ends(wire: Wire, messages: list[dict[str, Any]]) -> Wire:
    """The most messages that fit, half from each end, around one marker message."""

    def kept(n: int) -> Wire:
        head, tail = (n + 1) // 2, n // 2
        marker = {
            "role": "system",
            "content": f"[{len(messages) - n} messages cut: the stored trajectory is truncated; "
            "it was judged whole]",
        }
        return {
            **wire,
            "messages": [*messages[:head], marker, *(messages[len(messages) - tail :] if tail else [])],
        }

    low, high = 0, len(messages) - 1
    while low < high:  # kept(0) is a few hundred characters: it always fits
        middle = (low + high + 1) // 2
        if _size(kept(middle)) <= MAX_STORED_TRAJECTORY_CHARS:
            low = middle
        else:
            high = middle - 1
    return kept(low)


def bounded_wire(wire: Wire) -> tuple[Wire, bool]:
    """The wire form to store (``Trajectory.to_wire()``), and whether it was truncated."""
    if _size(wire) <= MAX_STORED_TRAJECTORY_CHARS:
        return wire, False
    messages = [_cut_message(m) for m in wire["messages"]]
    cut = {**wire, "messages": messages}
    if _size(cut) <= MAX_STORED_TRAJECTORY_CHARS:
        return cut, True
    return _ends(wire, messages), True
