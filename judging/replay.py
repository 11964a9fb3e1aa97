"""Offline tool logs: replay a trajectory's calls against the index when no tool-server log exists."""

from __future__ import annotations

from arena.episode import run_logged
from arena.tools import ToolContext
from arena.types import ToolLogEntry, Trajectory


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
    return [
        run_logged(
            call.function.name,
            call.function.parsed,
            ctx,
            episode_id=trajectory.episode_id,
            seq=seq,
            call_id=call.id,
            raw=call.function.arguments,
        )
        for seq, call in enumerate(trajectory.tool_calls())
    ]
