"""The `find_products_in_same_shop` tool (tool set arena-2): list or search one shop's products."""

from __future__ import annotations

from pydantic import Field, field_validator

from arena.search import find_products
from arena.tools.find_product import MAX_PAGE, MAX_QUERY_CHARS
from arena.tools.tool import Tool, ToolArgs, ToolContext, error_result, json_result
from arena.types import ToolResult

PAGE_SIZE = 10
SEARCH_FIELDS = ("product_id", "shop_id", "title", "price", "service", "sold_count")
DESCRIPTION = (
    "List the products of one shop, 10 per page, best-selling first; with q, search within the "
    "shop instead (most relevant first). Useful when every item must come from the same shop."
)


class Args(ToolArgs):
    """Arguments of find_products_in_same_shop."""

    shop_id: str = Field(max_length=64, description="The shop_id whose products to list.")
    q: str | None = Field(default=None, description="Optional keywords to search within the shop.")
    page: int = Field(default=1, ge=1, le=MAX_PAGE, description="Page of results, 1 to 5.")

    @field_validator("shop_id")
    @classmethod
    def _shop(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("shop_id must not be empty")
        return value

    @field_validator("q")
    @classmethod
    def _query(cls, value: str | None) -> str | None:
        value = (value or "").strip()
        if len(value) > MAX_QUERY_CHARS:
            raise ValueError(f"the query is longer than {MAX_QUERY_CHARS} characters")
        return value or None


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """List (sold_count desc, then product_id) or search the shop; an unknown shop is an error."""
    ids = ctx.index.shop_product_ids(args.shop_id)
    if not ids:
        return error_result(f"unknown shop_id: {args.shop_id}")
    if args.q is not None:
        return json_result(find_products(ctx.index, q=args.q, page=args.page, shop_id=args.shop_id))
    products = sorted(ctx.index.products(ids).values(), key=lambda p: (-p.sold_count, p.product_id))
    start = (args.page - 1) * PAGE_SIZE
    page = products[start : start + PAGE_SIZE]
    stock = ctx.index.stock_levels([p.product_id for p in page])
    rows = [p.model_dump(mode="json", include=set(SEARCH_FIELDS)) for p in page]
    for row in rows:
        if row["product_id"] in stock:  # a world's stock level; the catalog declares none
            row["stock"] = stock[row["product_id"]]
    return json_result(rows)


TOOL = Tool(
    name="find_products_in_same_shop", kind="search", description=DESCRIPTION, args_model=Args, run=run
)
