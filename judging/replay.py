"""Offline tool logs: replay a trajectory's calls against the index when no tool-server log exists."""

from __future__ import annotations

from datetime import UTC, datetime

from arena.tools import ToolContext, canonical_arguments, run_tool
from arena.types import ToolLogEntry, Trajectory, result_hash


def replay_log(trajectory: Trajectory, ctx: ToolContext) -> list[ToolLogEntry]:
    """Run every tool call of ``trajectory`` against ``ctx`` and log it as the tool server would.

    The replayed log stands in for the server's: grounding then checks that each tool message
    carries exactly what our tools return for that call on this catalog. Offline this proves
    consistency with the catalog, not that the calls were made when the miner says.

    Args:
        trajectory: The trajectory whose calls to replay, in order.
        ctx: The tool context (index and toolset) to run them in.

    Returns:
        One entry per call, ``seq`` from 0, with the trajectory's call ids.
    """
    entries: list[ToolLogEntry] = []
    for seq, call in enumerate(trajectory.tool_calls()):
        name, raw = call.function.name, call.function.arguments
        started = datetime.now(UTC)
        result = run_tool(name, raw, ctx)
        finished = datetime.now(UTC)
        entries.append(
            ToolLogEntry(
                episode_id=trajectory.episode_id,
                seq=seq,
                call_id=call.id,
                tool=name,
                arguments=canonical_arguments(name, raw),
                result=result.content,
                result_hash=result_hash(result.content),
                status="error" if result.error else "ok",
                started_at=started,
                finished_at=finished,
            )
        )
    return entries
