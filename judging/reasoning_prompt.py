"""The reasoning judge's prompt: the shipped template, its hash, and the episode rendered as untrusted data.

The trajectory goes to the judge as JSON inside a block delimited by marker lines that carry a
boundary the miner cannot know (``boundary``), with every ``<`` and ``>`` escaped besides, so
nothing in it can close the block; long fields are cut, more tightly the longer the episode,
and the rendered episode never exceeds ``MAX_EPISODE_CHARS`` (a judge that refuses an
over-long prompt must never see one). The template's hash is recorded in every
Judgment (``Versions``).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources
from typing import Any

from arena.types import Task, ToolCall, Trajectory

# (assistant field, tool result) character limits, tried in order until the rendered episode
# fits MAX_EPISODE_CHARS (about 12k tokens), so a long episode cannot overflow a small judge.
LIMITS = ((4000, 1200), (1500, 400), (600, 150), (200, 60))
MAX_EPISODE_CHARS = 48_000
MAX_CALLS_SHOWN = 8  # tool calls rendered per message; the rest are counted
MAX_NAME_CHARS = 64  # a call's id and tool name
_MAX_ROWS = MAX_EPISODE_CHARS // 16  # a rendered row takes 16 characters at least


@lru_cache(maxsize=1)
def prompt_template() -> str:
    """Return the prompt template shipped in ``judging/prompts/reasoning.md``."""
    return resources.files("judging").joinpath("prompts/reasoning.md").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def prompt_hash() -> str:
    """Return the sha256 (first 16 hex digits) of the prompt template, recorded in every Judgment."""
    return hashlib.sha256(prompt_template().encode("utf-8")).hexdigest()[:16]


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f" …[{len(text) - limit} chars cut]"


def _calls(calls: tuple[ToolCall, ...], field_chars: int) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = [
        {
            "id": _cut(c.id, MAX_NAME_CHARS),
            "name": _cut(c.function.name, MAX_NAME_CHARS),
            "arguments": _cut(c.function.arguments, field_chars),
        }
        for c in calls[:MAX_CALLS_SHOWN]
    ]
    if len(calls) > MAX_CALLS_SHOWN:
        shown.append({"cut": f"{len(calls) - MAX_CALLS_SHOWN} more calls not shown"})
    return shown


def _rows(trajectory: Trajectory, field_chars: int, tool_chars: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for m in trajectory.messages:
        if m.role == "system":
            continue
        row: dict[str, Any] = {"role": m.role}
        if m.reasoning_content:
            row["reasoning"] = _cut(m.reasoning_content, field_chars)
        if m.content:
            row["content"] = _cut(m.content, tool_chars if m.role == "tool" else field_chars)
        if m.tool_calls:
            row["tool_calls"] = _calls(m.tool_calls, field_chars)
        if m.tool_call_id:
            row["tool_call_id"] = _cut(m.tool_call_id, MAX_NAME_CHARS)
        rows.append(row)
    return rows


def _dump(rows: list[dict[str, Any]]) -> str:
    text = json.dumps(rows, ensure_ascii=False, indent=1)
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _first_and_last(rows: list[dict[str, Any]]) -> str:
    """The most rows that fit, half from each end, with one row saying how many are not shown.

    Every row is bounded at the tightest limits, and the cut row alone always fits, so the
    search ends with a text within ``MAX_EPISODE_CHARS`` whatever the episode.
    """

    def kept(n: int) -> str:
        head, tail = (n + 1) // 2, n // 2
        cut = {"cut": f"{len(rows) - n} messages not shown"}
        return _dump([*rows[:head], cut, *(rows[len(rows) - tail :] if tail else [])])

    low, high = 0, min(len(rows) - 1, _MAX_ROWS)  # ``low`` rows always fit; find the most that do
    while low < high:
        middle = (low + high + 1) // 2
        if len(kept(middle)) <= MAX_EPISODE_CHARS:
            low = middle
        else:
            high = middle - 1
    return kept(low)


def render_trajectory(trajectory: Trajectory) -> str:
    """Render the trajectory as JSON data with every ``<`` and ``>`` escaped, so it cannot close its block.

    Bounded by construction: at most ``MAX_EPISODE_CHARS`` characters (after the escapes),
    whatever the episode. Long fields are cut, more tightly the longer the episode (``LIMITS``);
    a message shows at most ``MAX_CALLS_SHOWN`` calls; an episode still too long at the
    tightest cuts keeps its first and last messages, with the count of those left out.
    """
    shown = sum(1 for m in trajectory.messages if m.role != "system")
    # More rows than could fit at 16 characters each: only the tightest cuts can help.
    limits = LIMITS if shown <= _MAX_ROWS else LIMITS[-1:]
    rows: list[dict[str, Any]] = []
    for field_chars, tool_chars in limits:
        rows = _rows(trajectory, field_chars, tool_chars)
        text = _dump(rows)
        if len(text) <= MAX_EPISODE_CHARS:
            return text
    return _first_and_last(rows)


def boundary(task_text: str, episode: str) -> str:
    """The data block's boundary: a digest of what it encloses, which the enclosed text cannot contain.

    The miner's text is inside what is hashed, so writing the boundary into it would need a
    fixed point of SHA-256; and ``<`` and ``>`` are escaped in the data besides, so even a
    guessed boundary cannot be written as a tag. Deterministic: one episode, one prompt.
    """
    return hashlib.sha256(f"{task_text}\n{episode}".encode()).hexdigest()[:16]


def build_messages(task: Task, trajectory: Trajectory) -> list[dict[str, str]]:
    """Fill the prompt template: a system message with the rubric, a user message with the data.

    The episode sits between marker lines that carry :func:`boundary`: it ends only where the
    boundary does, whatever the miner's text says (``tests/judging/test_reasoning_prompt.py``
    holds a judge that obeys any instruction it reads outside the block to it).
    """
    template = prompt_template()
    system, _, user = template.partition("## user")
    system = system.replace("## system", "", 1).strip()
    task_text = json.dumps({"intent": task.intent, "query": task.query}, ensure_ascii=False)
    task_text = task_text.replace("<", "\\u003c").replace(">", "\\u003e")
    episode = render_trajectory(trajectory)
    user = (
        user.strip()
        .replace("{{TASK}}", task_text)
        .replace("{{BOUNDARY}}", boundary(task_text, episode))
        .replace("{{TRAJECTORY}}", episode)
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
