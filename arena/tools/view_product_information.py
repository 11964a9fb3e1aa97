"""The `view_product_information` tool: descriptions, SKU options and attributes of named products."""

from __future__ import annotations

from pydantic import Field, field_validator

from arena.tools.tool import Tool, ToolArgs, ToolContext, check_ids, error_result, json_result, parse_ids
from arena.types import ToolResult

DESCRIPTION = (
    "Fetch details of products by product_id: short description, description, SKU options "
    "(the purchasable variants) and attributes. Ids that match no product are listed with an error."
)
INFORMATION_FIELDS = ("product_id", "short_description", "description", "sku_options", "attributes")


class Args(ToolArgs):
    """Arguments of view_product_information."""

    product_ids: str = Field(description='Comma-separated product_ids, e.g. "1001,1002" (at most 20).')

    @field_validator("product_ids")
    @classmethod
    def _ids(cls, value: str) -> str:
        return ",".join(check_ids(parse_ids(value)))


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """Look the ids up in request order; unknown ids get an entry with an error, not an exception.

    The result is an error only when no id names a product.
    """
    ids = args.product_ids.split(",")
    found = ctx.index.products(ids)
    stock = ctx.index.stock_levels(ids)
    if not found:
        return error_result(f"no product has any of these ids: {', '.join(ids)}")
    rows: list[dict[str, object]] = []
    for product_id in ids:
        product = found.get(product_id)
        if product is None:
            rows.append({"product_id": product_id, "error": "unknown product id"})
        else:
            row = product.model_dump(mode="json", include=set(INFORMATION_FIELDS))
            if product_id in stock:  # a world's stock level; the catalog declares none
                row["stock"] = stock[product_id]
            rows.append(row)
    return json_result(rows)


TOOL = Tool(name="view_product_information", kind="view", description=DESCRIPTION, args_model=Args, run=run)
