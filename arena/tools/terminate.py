"""The `terminate` tool: the agent ends the episode and states whether it thinks it succeeded."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from arena.tools.tool import Tool, ToolArgs, ToolContext, json_result
from arena.types import ToolResult

DESCRIPTION = "End the conversation and report whether the task was completed."


class Args(ToolArgs):
    """Arguments of terminate."""

    status: Literal["success", "failure"] = Field(description="success if the task was done, else failure.")


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """Acknowledge the end of the episode."""
    del ctx
    return json_result(f"The conversation has ended with status: {args.status}.")


TOOL = Tool(name="terminate", kind="end", description=DESCRIPTION, args_model=Args, run=run)
