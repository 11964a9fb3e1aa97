"""The `calculate_voucher` tool (tool set arena-2): a basket's total before and after a voucher."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from arena.tools.tool import Tool, ToolArgs, ToolContext, check_ids, error_result, json_result, parse_ids
from arena.types import ToolResult, Voucher

DESCRIPTION = (
    "Price a basket (one unit of each product) and apply a voucher: returns each product's price "
    "and shop, the total, whether the voucher applies, and the total after the voucher."
)


class Args(ToolArgs):
    """Arguments of calculate_voucher."""

    product_ids: str = Field(description='Comma-separated product_ids in the basket, e.g. "1001,2002".')
    voucher_type: Literal["platform", "shop"] = Field(
        description="platform: any products; shop: only when every product comes from the same shop."
    )
    threshold: float = Field(ge=0, description="The basket total must reach this amount for the voucher.")
    discount_type: Literal["fixed", "percentage"] = Field(
        description="fixed: face_value off; percentage: discount off, at most cap."
    )
    face_value: float | None = Field(default=None, ge=0, description="Amount off (fixed vouchers).")
    discount: float | None = Field(
        default=None, gt=0, lt=1, description="Fraction off, e.g. 0.1 for 10% (percentage vouchers)."
    )
    cap: float | None = Field(default=None, ge=0, description="Largest amount off (percentage vouchers).")

    @field_validator("product_ids")
    @classmethod
    def _ids(cls, value: str) -> str:
        return ",".join(check_ids(parse_ids(value)))

    @model_validator(mode="after")
    def _voucher_complete(self) -> Args:
        self.voucher()
        return self

    def voucher(self) -> Voucher:
        """Build the voucher; raises ``ValueError`` when its fields do not fit its type."""
        try:
            return Voucher(
                voucher_type=self.voucher_type,
                threshold=self.threshold,
                discount_type=self.discount_type,
                face_value=self.face_value,
                discount=self.discount,
                cap=self.cap,
            )
        except ValidationError as exc:
            raise ValueError(exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")) from None


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """Price the basket from the catalog and apply the voucher rule; unknown ids are an error."""
    ids = args.product_ids.split(",")
    found = ctx.index.products(ids)
    unknown = [i for i in ids if i not in found]
    if unknown:
        return error_result(f"unknown product ids: {', '.join(unknown)}")
    voucher = args.voucher()
    total = sum(found[i].price for i in ids)
    shop_count = len({found[i].shop_id for i in ids})
    applies = voucher.applies(total, shop_count)
    reason = "ok"
    if not applies:
        reason = (
            f"a shop voucher needs every product from one shop, the basket spans {shop_count} shops"
            if voucher.voucher_type == "shop" and shop_count > 1
            else f"the total {_money(total)} is below the threshold {_money(voucher.threshold)}"
        )
    return json_result(
        {
            "products": [
                {"product_id": i, "shop_id": found[i].shop_id, "price": found[i].price} for i in ids
            ],
            "total": _money(total),
            "shop_count": shop_count,
            "voucher_applies": applies,
            "reason": reason,
            "price_after_voucher": _money(voucher.price_after(total, shop_count)),
        }
    )


def _money(value: float) -> float:
    # Sums of prices pick up float noise (0.1 + 0.2); two decimals is what a shop shows.
    return round(value, 2)


TOOL = Tool(name="calculate_voucher", kind="compute", description=DESCRIPTION, args_model=Args, run=run)
