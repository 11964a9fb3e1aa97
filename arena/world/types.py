"""The world pack's types: spec, catalog delta, shop vouchers, shopper profiles, tasks, manifest."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field, model_validator

from arena.types import Frozen, Product, Service, Task, Voucher

WORLD_FORMAT: Literal["arena.world/1"] = "arena.world/1"


class WorldSpec(Frozen):
    """How large a world's delta is and how many tasks it holds (defaults suit a 20k-1M base)."""

    price_moves: int = Field(default=200, ge=0)
    max_price_move: float = Field(default=0.3, gt=0, lt=1)  # the largest fraction up or down
    stock_levels: int = Field(default=200, ge=0)
    stockout_share: float = Field(default=0.25, ge=0, le=1)  # of declared levels (and new listings)
    new_listings: int = Field(default=100, ge=0)
    delistings: int = Field(default=50, ge=0)
    vouchers: int = Field(default=8, ge=0)
    product_tasks: int = Field(default=6, ge=0)
    voucher_tasks: int = Field(default=2, ge=0)
    held_back: int = Field(default=1, ge=0, le=3)  # constraints per product task the request leaves out
    changes: int = Field(default=2, ge=0)  # product tasks whose cheapest listing reprices mid-episode
    stock_changes: int = Field(default=1, ge=0)  # product tasks whose cheapest listing sells out mid-episode
    change_after: tuple[int, int] = (2, 4)  # a change happens after this many calls (drawn, inclusive)
    as_of: dt.date = dt.date(2025, 1, 1)  # the world's date: which vouchers are valid

    @model_validator(mode="after")
    def _change_after_is_a_range(self) -> WorldSpec:
        low, high = self.change_after
        if not 1 <= low <= high:
            raise ValueError(f"change_after must be 1 <= low <= high, not {self.change_after}")
        return self


class PriceMove(Frozen):
    """A base product's price in this world."""

    product_id: str = Field(min_length=1)
    old_price: float = Field(ge=0)
    new_price: float = Field(ge=0)


class StockLevel(Frozen):
    """A product's stock in this world (0: out of stock); a product without one is available."""

    product_id: str = Field(min_length=1)
    stock: int = Field(ge=0)


class NewListing(Frozen):
    """A listing this world adds: another offer of an existing product (same title, other id)."""

    derived_from: str = Field(min_length=1)
    product: Product


class WorldChange(Frozen):
    """A change during an episode: a product's price or stock from the ``after_calls``-th tool call on.

    The calls of an episode are counted from 0 (the tool log's ``seq``): the call with
    ``seq >= after_calls`` sees the change, the ones before do not.
    """

    after_calls: int = Field(ge=1)
    product_id: str = Field(min_length=1)
    price: float | None = Field(default=None, ge=0)
    stock: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _changes_something(self) -> WorldChange:
        if self.price is None and self.stock is None:
            raise ValueError("a world change sets a price, a stock level or both")
        return self


class WorldDelta(Frozen):
    """Everything a world changes in the base catalog; each list sorted by product id.

    ``changes`` happen during an episode (sorted by ``after_calls``, then product id): world
    version ``v`` is the delta with the first ``v`` of them applied (``arena.world.changes``).
    """

    price_moves: tuple[PriceMove, ...] = ()
    stock: tuple[StockLevel, ...] = ()
    new_listings: tuple[NewListing, ...] = ()
    delisted: tuple[str, ...] = ()
    changes: tuple[WorldChange, ...] = ()

    @model_validator(mode="after")
    def _changes_in_order(self) -> WorldDelta:
        keys = [(c.after_calls, c.product_id) for c in self.changes]
        if keys != sorted(keys) or len(set(keys)) != len(keys):
            raise ValueError("world changes must be sorted by (after_calls, product_id), each pair once")
        return self

    def version_at(self, calls: int) -> int:
        """The world version a call sees after ``calls`` earlier calls of its episode (its ``seq``)."""
        return sum(1 for change in self.changes if change.after_calls <= calls)

    def is_empty(self) -> bool:
        """Whether version 0 of the world changes nothing (its overlay answers exactly as the base does)."""
        return not (self.price_moves or self.stock or self.new_listings or self.delisted)


class ShopVoucher(Frozen):
    """A voucher one shop offers in this world: a threshold, an amount or a capped percentage, a validity."""

    voucher_id: str = Field(min_length=1)
    shop_id: str = Field(min_length=1)
    threshold: float = Field(ge=0)
    discount: Literal["amount", "percent"]
    amount: float | None = Field(default=None, gt=0)
    percent: int | None = Field(default=None, ge=1, le=90)
    cap: float | None = Field(default=None, gt=0)
    valid_from: dt.date
    valid_until: dt.date

    @model_validator(mode="after")
    def _rule_is_complete(self) -> ShopVoucher:
        if self.discount == "amount" and (self.amount is None or self.percent is not None):
            raise ValueError("an amount voucher has an amount and no percent")
        if self.discount == "percent" and (
            self.percent is None or self.cap is None or self.amount is not None
        ):
            raise ValueError("a percent voucher has a percent, a cap and no amount")
        if self.valid_until < self.valid_from:
            raise ValueError("a voucher's validity ends before it starts")
        return self

    def valid_on(self, day: dt.date) -> bool:
        """Whether the voucher can be used on ``day`` (both ends inclusive)."""
        return self.valid_from <= day <= self.valid_until

    def as_voucher(self) -> Voucher:
        """The task-side voucher (``arena.types.Voucher``, a shop voucher) with this rule."""
        if self.discount == "amount":
            return Voucher(
                voucher_type="shop", threshold=self.threshold, discount_type="fixed", face_value=self.amount
            )
        return Voucher(
            voucher_type="shop",
            threshold=self.threshold,
            discount_type="percentage",
            discount=(self.percent or 0) / 100,
            cap=self.cap,
        )


class HeldService(Frozen):
    """A service the shopper needs but did not say."""

    kind: Literal["service"] = "service"
    item: int = Field(ge=0)  # which gold item
    service: Service


class HeldAttribute(Frozen):
    """An attribute value the shopper needs but did not say."""

    kind: Literal["attribute"] = "attribute"
    item: int = Field(ge=0)
    key: str = Field(min_length=1)
    value: str = Field(min_length=1)


HeldConstraint = Annotated[HeldService | HeldAttribute, Field(discriminator="kind")]


class ShopperProfile(Frozen):
    """The hidden side of a task: what the request leaves out (for the ask_user simulator, arena-3)."""

    held_back: tuple[HeldConstraint, ...] = ()
    wants_cheapest_in_stock: bool = False


class GoldRevision(Frozen):
    """A product task's ground truth from a world version on: the cheapest in-stock fit and its price."""

    version: int = Field(ge=0)
    product_id: str = Field(min_length=1)
    price: float = Field(ge=0)


class WorldTask(Frozen):
    """A task compiled against a world, its hidden profile, and how its ground truth was decided."""

    task: Task
    profile: ShopperProfile
    basis: Literal["cheapest_in_stock", "world_voucher"]
    voucher_id: str | None = None
    # The listings the ground truth was chosen among (cheapest_in_stock), for audit.
    candidates: tuple[str, ...] = ()
    # Where the world's changes reach this task's candidates: its ground truth per world
    # version, from version 0 (empty: the task's gold holds at every version).
    revisions: tuple[GoldRevision, ...] = ()


class PackManifest(Frozen):
    """The manifest: inputs, the sha256 of each part's canonical bytes, and the pack hash over them."""

    format: Literal["arena.world/1"] = WORLD_FORMAT
    world_id: str
    seed_hex: str
    base_hash: str
    catalog_version: str
    spec: WorldSpec
    parts: dict[str, str]
    pack_hash: str


class WorldPack(Frozen):
    """A compiled world: the manifest, the delta, the vouchers and the tasks."""

    manifest: PackManifest
    delta: WorldDelta
    vouchers: tuple[ShopVoucher, ...]
    tasks: tuple[WorldTask, ...]
