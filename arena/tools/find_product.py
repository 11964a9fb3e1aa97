"""The `find_product` tool: keyword search over the catalog with ShoppingBench's filters, sort and pages.

Where ShoppingBench's server silently ignores an argument it cannot parse (a price without a
dash, an unknown service, an unknown sort), this tool returns an error result instead: an
ignored filter hands the agent results it believes are filtered. See docs/tools.md.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from arena.search import find_products
from arena.tools.tool import Tool, ToolArgs, ToolContext, json_result
from arena.types import SERVICES, ToolResult

MAX_QUERY_CHARS = 512
MAX_PAGE = 5
_NUMBER = r"(\d+(?:\.\d+)?)"
_PRICE = re.compile(rf"^\s*{_NUMBER}?\s*-\s*{_NUMBER}?\s*$")

DESCRIPTION = (
    "Search the catalog by keywords. Returns at most 10 products per page, each with its "
    "product_id, shop_id, title, price, service list and sold_count. Filters (shop_id, price, "
    "service) are applied to the most relevant matches, and up to 50 filtered matches are kept; "
    "sort reorders those 50 and page selects 10 of them."
)


def _format_number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


class Args(ToolArgs):
    """Arguments of find_product."""

    q: str = Field(
        description='Keywords describing the product, e.g. "wireless earbuds" or "school backpack".'
    )
    page: int = Field(ge=1, le=MAX_PAGE, description="Page of results, 1 to 5; each page holds 10 products.")
    shop_id: str | None = Field(
        default=None, max_length=64, description="Only return products sold by the shop with this shop_id."
    )
    price: str | None = Field(
        default=None,
        description='Price range "low-high"; either bound may be left out, e.g. "100-500", "-300", "1000-".',
    )
    sort: Literal["priceasc", "pricedesc", "order", "default"] | None = Field(
        default=None,
        description=(
            "Order of the kept matches: priceasc (cheapest first), pricedesc (most expensive first), "
            "order (best-selling first), default (most relevant first)."
        ),
    )
    service: str | None = Field(
        default=None,
        description=(
            "Comma-separated services every product must offer: official (LazMall, authentic "
            "with easy returns), freeShipping, COD (cash on delivery), flashsale (LazFlash "
            "limited-time deal); default applies no service filter."
        ),
    )

    @field_validator("page", mode="before")
    @classmethod
    def _page_digits(cls, value: Any) -> Any:
        # ShoppingBench took page from a query string, and models often quote small numbers:
        # a string of digits is the integer it spells; anything else stays strictly typed.
        if isinstance(value, str) and value.strip().isdigit():
            return int(value.strip())
        return value

    @field_validator("q")
    @classmethod
    def _query(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the query must not be empty")
        if len(value) > MAX_QUERY_CHARS:
            raise ValueError(f"the query is longer than {MAX_QUERY_CHARS} characters")
        return value

    @field_validator("shop_id")
    @classmethod
    def _shop(cls, value: str | None) -> str | None:
        return (value or "").strip() or None

    @field_validator("sort", mode="before")
    @classmethod
    def _sort_blank(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("sort")
    @classmethod
    def _sort_default(cls, value: str | None) -> str | None:
        return None if value == "default" else value

    @field_validator("price")
    @classmethod
    def _price(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        match = _PRICE.match(value)
        if match is None:
            raise ValueError('price must look like "low-high", "low-" or "-high" with plain numbers')
        low, high = (float(g) if g is not None else None for g in match.groups())
        if low is not None and high is not None and low > high:
            raise ValueError("the low price is above the high price")
        if low is None and high is None:
            return None
        return "-".join("" if v is None else _format_number(v) for v in (low, high))

    @field_validator("service")
    @classmethod
    def _service(cls, value: str | None) -> str | None:
        if value is None:
            return None
        asked = {part.strip() for part in value.split(",")} - {"", "default"}
        unknown = sorted(asked.difference(SERVICES))
        if unknown:
            allowed = ", ".join((*SERVICES, "default"))
            raise ValueError(f"unknown service {unknown[0]!r} (allowed: {allowed})")
        return ",".join(s for s in SERVICES if s in asked) or None

    def price_range(self) -> tuple[float | None, float | None]:
        """Return the (low, high) price bounds; ``None`` where a side is open."""
        if self.price is None:
            return (None, None)
        low, high = self.price.split("-")
        return (float(low) if low else None, float(high) if high else None)

    def services(self) -> tuple[str, ...]:
        """Return the services every result must offer."""
        return tuple(self.service.split(",")) if self.service else ()


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """Search the index with the validated arguments; an empty page is a normal (empty) result."""
    found = find_products(
        ctx.index,
        q=args.q,
        page=args.page,
        shop_id=args.shop_id,
        price=args.price_range(),
        sort=args.sort,
        service=args.services(),
    )
    return json_result(found)


TOOL = Tool(name="find_product", kind="search", description=DESCRIPTION, args_model=Args, run=run)
