"""The `recommend_product` tool: the agent's answer; it only acknowledges, the judge reads the call."""

from __future__ import annotations

from pydantic import Field, field_validator

from arena.tools.tool import Tool, ToolArgs, ToolContext, check_ids, json_result, parse_ids
from arena.types import ToolResult

DESCRIPTION = (
    "Give the user your final answer: the recommended products. Call it once, at the end. "
    "For several requested items, list one product_id per item in the order the user asked for them; "
    "when the user wants everything from one shop, all ids must come from that shop."
)


class Args(ToolArgs):
    """Arguments of recommend_product."""

    product_ids: str = Field(
        description=(
            "Comma-separated product_ids, one per requested item, in the order the user listed "
            'the items, e.g. "1001,2002".'
        )
    )

    @field_validator("product_ids")
    @classmethod
    def _ids(cls, value: str) -> str:
        return ",".join(check_ids(parse_ids(value)))


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """Acknowledge the answer; ids are not checked here (as in ShoppingBench), the judge scores them."""
    del ctx
    return json_result(f"Recommended to the user: {args.product_ids.replace(',', ', ')}.")


TOOL = Tool(name="recommend_product", kind="answer", description=DESCRIPTION, args_model=Args, run=run)
