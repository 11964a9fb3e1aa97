"""A tool caller for agents under test: each call runs in process, logged as the tool server logs it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from arena.episode import run_logged
from arena.tools import ToolContext
from arena.types import ToolLogEntry, ToolResult
from neurons.miner.agents.contract import ToolCaller


def logging_caller(
    ctx: ToolContext,
    episode_id: str,
    log: list[ToolLogEntry],
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ToolCaller:
    """An agent's ``call_tool`` that appends each call's entry to ``log`` (``arena.episode.run_logged``).

    ``now`` fixes the timestamps where a test or a bench hashes what it produced.
    """

    async def call_tool(
        name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        sent: str | dict[str, Any] = raw if raw is not None else arguments
        entry = run_logged(name, sent, ctx, episode_id=episode_id, seq=len(log), call_id=call_id, now=now)
        log.append(entry)
        return ToolResult(content=entry.result, error=entry.status == "error")

    return call_tool
