"""The reasoning judge's prompt: the shipped template, its hash, and the episode rendered as untrusted data.

The trajectory goes to the judge as JSON inside a delimited block, with every ``<`` and ``>``
escaped so that nothing in it can close the block; long fields are cut, more tightly the
longer the episode. The template's hash is recorded in every Judgment (``Versions``).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources
from typing import Any

from arena.types import Task, Trajectory

# (assistant field, tool result) character limits, tried in order until the rendered episode
# fits MAX_EPISODE_CHARS (about 12k tokens), so a long episode cannot overflow a small judge.
LIMITS = ((4000, 1200), (1500, 400), (600, 150), (200, 60))
MAX_EPISODE_CHARS = 48_000


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
            row["tool_calls"] = [
                {"id": c.id, "name": c.function.name, "arguments": _cut(c.function.arguments, field_chars)}
                for c in m.tool_calls
            ]
        if m.tool_call_id:
            row["tool_call_id"] = m.tool_call_id
        rows.append(row)
    return rows


def render_trajectory(trajectory: Trajectory) -> str:
    """Render the trajectory as JSON data with every ``<`` and ``>`` escaped, so it cannot close its block.

    Long fields are cut, more tightly the longer the episode (``LIMITS``), to stay within
    ``MAX_EPISODE_CHARS`` where the cuts allow.
    """
    text = ""
    for field_chars, tool_chars in LIMITS:
        text = json.dumps(_rows(trajectory, field_chars, tool_chars), ensure_ascii=False, indent=1)
        if len(text) <= MAX_EPISODE_CHARS:
            break
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def build_messages(task: Task, trajectory: Trajectory) -> list[dict[str, str]]:
    """Fill the prompt template: a system message with the rubric, a user message with the data."""
    template = prompt_template()
    system, _, user = template.partition("## user")
    system = system.replace("## system", "", 1).strip()
    task_text = json.dumps({"intent": task.intent, "query": task.query}, ensure_ascii=False)
    task_text = task_text.replace("<", "\\u003c").replace(">", "\\u003e")
    user = (
        user.strip().replace("{{TASK}}", task_text).replace("{{TRAJECTORY}}", render_trajectory(trajectory))
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
