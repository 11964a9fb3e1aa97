"""The `ask_user` tool (tool set arena-3): a question to the simulated shopper of a world task."""

from __future__ import annotations

from pydantic import Field, field_validator

from arena.tools.tool import Tool, ToolArgs, ToolContext, error_result, json_result
from arena.types import ToolResult
from arena.world.shopper import MAX_QUESTION_CHARS, MAX_TOPICS

DESCRIPTION = (
    "Ask the customer one short question about a need the request leaves out (a service such as "
    "free shipping or cash on delivery, a brand, a colour, a size, another attribute). The answer "
    "states the need, or says there is no preference. Ask only what you need: every question "
    "beyond those needed lowers the score; the same question three times is refused, and so is a "
    f"question about more than {MAX_TOPICS} things (the services together count as one)."
)


class Args(ToolArgs):
    """Arguments of ask_user."""

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description=f"One question to the customer, at most {MAX_QUESTION_CHARS} characters.",
    )

    @field_validator("question")
    @classmethod
    def _stripped(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the question is empty")
        return value


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """Put the question to the episode's shopper; a loop, a flood, a broad question, no shopper: an error."""
    if ctx.shopper is None:
        return error_result("no customer answers questions in this episode")
    reply = ctx.shopper.ask(args.question)
    if reply.refused is not None:
        return error_result(f"question refused ({reply.refused}): {reply.detail}")
    return json_result({"answer": reply.text})


TOOL = Tool(name="ask_user", kind="ask", description=DESCRIPTION, args_model=Args, run=run)
