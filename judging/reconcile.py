"""The trajectory reconciled with the tool server's log: matched calls, hidden calls, fabricated results.

- A trajectory call and a log entry pair up by call id, then (for log entries without an id)
  by tool and canonical arguments, in order. A logged call no trajectory call claims is
  *hidden*.
- A tool message is *fabricated* when its call is not in the trajectory, the server never ran
  it, the logged call was another tool or other arguments, or its content differs from the
  logged result (or from its hash where the log keeps only the hash).
- The ids an agent *saw* are those in the tool messages that are not fabricated; the ids it
  saw *before answering*, those in the messages before the answering call.

Arguments are compared in the form the tool server logs (``arena.tools.canonical_arguments``),
computed once per call from its parsed arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arena.tools import canonical_arguments
from arena.types import Message, ToolCall, ToolLogEntry, Trajectory, canonical_json, result_hash
from judging.answer import Answer
from judging.facts import result_facts


@dataclass(frozen=True)
class Reconciliation:
    """What pairing a trajectory with its tool log found.

    Attributes:
        matched: call id -> the log entry it pairs with.
        hidden: log entries no trajectory call claims, in ``seq`` order.
        fabricated: call id -> why its tool message is not what the server returned.
        seen: product ids in tool messages that are not fabricated.
        seen_before_answer: the same, counting only messages before the answering call (empty
            when there is no answer).
    """

    matched: dict[str, ToolLogEntry]
    hidden: tuple[ToolLogEntry, ...]
    fabricated: dict[str, str]
    seen: frozenset[str]
    seen_before_answer: frozenset[str]

    @property
    def hidden_names(self) -> tuple[str, ...]:
        """The hidden calls by call id (``seq:<n>`` for entries without one)."""
        return tuple(e.call_id or f"seq:{e.seq}" for e in self.hidden)


class _Canonical:
    """Each trajectory call's arguments in the logged form, computed on first need."""

    def __init__(self) -> None:
        self._forms: dict[int, str] = {}

    def same(self, call: ToolCall, entry: ToolLogEntry) -> bool:
        if call.function.name != entry.tool:
            return False
        form = self._forms.get(id(call))
        if form is None:
            args = canonical_arguments(call.function.name, call.function.parsed, raw=call.function.arguments)
            form = self._forms[id(call)] = canonical_json(args)
        return form == canonical_json(entry.arguments)


def _match(
    calls: Sequence[ToolCall], log: Sequence[ToolLogEntry], canonical: _Canonical
) -> tuple[dict[str, ToolLogEntry], list[ToolLogEntry]]:
    by_id = {c.id: c for c in calls}
    matched: dict[str, ToolLogEntry] = {}
    leftovers: list[ToolLogEntry] = []
    for entry in sorted(log, key=lambda e: e.seq):
        if entry.call_id is not None and entry.call_id in by_id and entry.call_id not in matched:
            matched[entry.call_id] = entry
        else:
            leftovers.append(entry)
    hidden: list[ToolLogEntry] = []
    for entry in leftovers:
        if entry.call_id is None:
            call = next((c for c in calls if c.id not in matched and canonical.same(c, entry)), None)
            if call is not None:
                matched[call.id] = entry
                continue
        hidden.append(entry)
    return matched, hidden


def _fabrication(
    message: Message, call: ToolCall | None, entry: ToolLogEntry | None, canonical: _Canonical
) -> str | None:
    """Return why a tool message is not what the server returned, or None when it is."""
    if call is None:
        return "answers no call in the trajectory"
    if entry is None:
        return "the tool server never ran this call"
    if not canonical.same(call, entry):
        return "the logged call with this id was a different tool or arguments"
    content = message.content or ""
    same = content == entry.result if entry.result else result_hash(content) == entry.result_hash
    return None if same else "content differs from the logged result"


def reconcile(
    trajectory: Trajectory,
    calls: Sequence[ToolCall],
    log: Sequence[ToolLogEntry],
    answer: Answer,
) -> Reconciliation:
    """Pair ``trajectory`` (whose tool calls are ``calls``) with its tool log (see the module docstring)."""
    canonical = _Canonical()
    matched, hidden = _match(calls, log, canonical)
    by_id = {c.id: c for c in calls}
    fabricated: dict[str, str] = {}
    seen: set[str] = set()
    before: set[str] | None = None
    for message in trajectory.messages:
        if message.role == "assistant" and answer.call is not None and before is None:
            if any(c.id == answer.call.id for c in message.tool_calls or ()):
                before = set(seen)
        if message.role != "tool":
            continue
        cid = message.tool_call_id or ""
        reason = _fabrication(message, by_id.get(cid), matched.get(cid), canonical)
        if reason:
            fabricated[cid] = reason
        else:
            seen |= result_facts(message.content or "").product_ids
    return Reconciliation(
        matched=matched,
        hidden=tuple(hidden),
        fabricated=fabricated,
        seen=frozenset(seen),
        seen_before_answer=frozenset(before or ()),
    )
