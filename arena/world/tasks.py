"""Tasks compiled against a world: drafted by ``arena.generate`` on the overlay, ground truth decided on it.

- product tasks (``cheapest_in_stock``): a draft is drawn among the products that have another
  listing in this world; some of the gold product's own services or attributes are held back
  from the request (the shopper profile), preferring those that decide the answer (the cheapest
  listing that fits the request as stated breaks them); the ground truth is the cheapest in-stock listing with
  the same title that meets every constraint, stated or held back, at this world's prices;
- voucher tasks (``world_voucher``): a shop basket whose voucher is one this world's shop offers
  and is valid on the world's date, its budget computed on this world's prices.

Change the world (a price, a stock level) and the ground truth follows.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from arena.constraints import unmet_constraints
from arena.difficulty import with_difficulty
from arena.generate import GenerateConfig, VoucherType, generate_tasks, make_finder
from arena.search import survivors
from arena.solvability import task_problems
from arena.types import SERVICES, GoldItem, Product, Task, Voucher
from arena.world.overlay import WorldOverlay
from arena.world.seed import part_rng, part_seed
from arena.world.types import (
    HeldAttribute,
    HeldConstraint,
    HeldService,
    ShopperProfile,
    ShopVoucher,
    WorldSpec,
    WorldTask,
)

logger = logging.getLogger(__name__)

WORLD_GENERATOR = "arena-world/1"
# Drafts per product task: enough that most worlds find tasks whose held-back constraints decide.
DRAFTS_PER_TASK = 4
CHEAPEST_IN_STOCK = "It has to be in stock, and of the listings that fit I want the cheapest one."


@dataclass(frozen=True)
class _Subset:
    """A ``ProductSource`` that draws only among ``ids`` (and ``shops``) of a world."""

    world: WorldOverlay
    ids: tuple[str, ...]
    shops: tuple[str, ...] = ()

    @property
    def catalog_version(self) -> str:
        return self.world.catalog_version

    def __len__(self) -> int:
        return len(self.ids)

    def product(self, product_id: str) -> Product | None:
        return self.world.product(product_id)

    def product_id_at(self, ordinal: int) -> str:
        return self.ids[ordinal]

    def shop_product_ids(self, shop_id: str) -> list[str]:
        return self.world.shop_product_ids(shop_id)

    def shops_with_at_least(self, n: int) -> list[str]:
        return [s for s in self.shops if len(self.world.shop_product_ids(s)) >= n]


def compile_tasks(
    world: WorldOverlay, vouchers: Sequence[ShopVoucher], spec: WorldSpec, seed: bytes
) -> list[WorldTask]:
    """The world's product tasks, then its voucher tasks (deterministic for ``seed``)."""
    return product_tasks(world, spec, seed) + voucher_tasks(world, vouchers, spec, seed)


def product_tasks(world: WorldOverlay, spec: WorldSpec, seed: bytes) -> list[WorldTask]:
    """Cheapest-in-stock product tasks over the products that have another listing here."""
    if not spec.product_tasks:
        return []
    listings = world.delta.new_listings
    contested = sorted({n.derived_from for n in listings} | {n.product.product_id for n in listings})
    source = _Subset(world, tuple(contested)) if contested else world
    drafts, _ = generate_tasks(
        source,
        n=spec.product_tasks * DRAFTS_PER_TASK,
        seed=part_seed(seed, "product_tasks"),
        config=GenerateConfig(intents=("product",)),
        finder=make_finder(world),
    )
    rng = part_rng(seed, "profiles")
    compiled: list[tuple[bool, WorldTask]] = []
    for draft in drafts:
        task = cheapest_in_stock(draft, world, rng, held_back=spec.held_back)
        if task is not None and all(
            t.task.gold[0].product_id != task.task.gold[0].product_id for _, t in compiled
        ):
            compiled.append((not held_back_decides(draft, task, world), task))
    # Tasks whose held-back constraints decide the answer first, then the others, each in draft order.
    ranked = sorted(range(len(compiled)), key=lambda i: (compiled[i][0], i))[: spec.product_tasks]
    logger.debug(
        "world_product_tasks drafts=%d kept=%d deciding=%d",
        len(drafts),
        len(ranked),
        sum(1 for i in ranked if not compiled[i][0]),
    )
    return [compiled[i][1] for i in sorted(ranked)]


def held_back_decides(draft: Task, task: WorldTask, world: WorldOverlay) -> bool:
    """Whether the request as stated (``draft``) has another ground truth than ``task`` (asking matters)."""
    if not task.profile.held_back:
        return False
    stated = cheapest_in_stock(draft, world, random.Random(0), held_back=0)
    return stated is None or stated.task.gold[0].product_id != task.task.gold[0].product_id


def held_back_candidates(item: GoldItem, product: Product) -> list[HeldConstraint]:
    """What the shopper could need unsaid: the product's services and attributes the item leaves out."""
    services: list[HeldConstraint] = [
        HeldService(item=0, service=s) for s in SERVICES if s in product.service and s not in item.service
    ]
    stated = {key for attr in item.attributes for key in attr} | {
        key for sku in item.sku_options for key in sku
    }
    attributes: list[HeldConstraint] = []
    for key in sorted(product.attributes):
        values = sorted(v for v in product.attributes[key] if v.strip())
        if key.strip() and key not in stated and values:
            attributes.append(HeldAttribute(item=0, key=key, value=values[0]))
    return services + attributes


def with_held_back(item: GoldItem, held: Sequence[HeldConstraint]) -> GoldItem:
    """The gold item with the held-back constraints added (what success needs)."""
    services = {*item.service, *(h.service for h in held if isinstance(h, HeldService))}
    attributes = [*item.attributes, *({h.key: (h.value,)} for h in held if isinstance(h, HeldAttribute))]
    return item.model_copy(
        update={"service": tuple(s for s in SERVICES if s in services), "attributes": tuple(attributes)}
    )


def cheapest_in_stock(
    draft: Task, world: WorldOverlay, rng: random.Random, *, held_back: int
) -> WorldTask | None:
    """Recompile a drafted product task on the world: hold constraints back, gold = cheapest in-stock fit."""
    item = draft.gold[0]
    product = world.product(item.product_id)
    if product is None:
        return None
    ids = [hit.product_id for hit in survivors(world, product.title) if hit.title == product.title]
    listings = world.products(sorted({*ids, product.product_id}))
    stock = world.stock_levels(list(listings))

    def cheapest(wanted: GoldItem) -> Product | None:
        fitting = sorted(
            (
                p
                for p in listings.values()
                if stock.get(p.product_id, 1) > 0 and not unmet_constraints(p, wanted)
            ),
            key=lambda p: (p.price, p.product_id),
        )
        return fitting[0] if fitting else None

    candidates = held_back_candidates(item, product)
    # Held back are, where there are any, constraints that decide the answer: the cheapest listing
    # that fits the request as stated breaks them, so an agent that never asks picks wrong.
    stated = cheapest(item)
    deciding = [c for c in candidates if stated and unmet_constraints(stated, with_held_back(item, [c]))]
    pool = deciding or candidates
    held = tuple(pool[i] for i in sorted(rng.sample(range(len(pool)), min(held_back, len(pool)))))
    full = with_held_back(item, held)
    best = cheapest(full)
    if best is None:
        return None
    gold = full.model_copy(update={"product_id": best.product_id})
    task = Task(
        intent="product",
        query=f"{draft.query.rstrip()} {CHEAPEST_IN_STOCK}",
        gold=(gold,),
        catalog_version=world.catalog_version,
        generator_version=WORLD_GENERATOR,
        source="world",
    )
    if task_problems(task, {best.product_id: best}):
        return None
    return WorldTask(
        task=with_difficulty(task),
        profile=ShopperProfile(held_back=held, wants_cheapest_in_stock=True),
        basis="cheapest_in_stock",
        candidates=tuple(sorted(listings)),
    )


def voucher_tasks(
    world: WorldOverlay, vouchers: Sequence[ShopVoucher], spec: WorldSpec, seed: bytes
) -> list[WorldTask]:
    """Shop-basket tasks whose voucher is one this world's shop offers, valid on the world's date."""
    active = sorted((v for v in vouchers if v.valid_on(spec.as_of)), key=lambda v: v.voucher_id)
    shops = tuple(sorted({v.shop_id for v in active}))
    if not spec.voucher_tasks or not shops:
        return []
    ids = tuple(i for shop in shops for i in world.shop_product_ids(shop))

    def drawer(
        products: Sequence[Product], kind: VoucherType, rng: random.Random
    ) -> tuple[Voucher, float] | None:
        if kind != "shop":
            return None
        total = sum(p.price for p in products)
        usable = [v for v in active if v.shop_id == products[0].shop_id and v.threshold <= total]
        if not usable:
            return None
        voucher = usable[0].as_voucher()
        after = voucher.price_after(total, 1)
        if after <= 0:
            return None
        budget = math.ceil(after) + rng.randint(0, math.ceil(after * 0.1))
        return voucher.model_copy(update={"price_after_voucher": round(after, 2)}), float(budget)

    drafts, _ = generate_tasks(
        _Subset(world, ids, shops),
        n=spec.voucher_tasks,
        seed=part_seed(seed, "voucher_tasks"),
        config=GenerateConfig(intents=("voucher",)),
        finder=make_finder(world),
        voucher_drawer=drawer,
    )
    compiled = []
    for draft in drafts:
        first = world.product(draft.gold[0].product_id)
        plain = draft.voucher.model_copy(update={"price_after_voucher": None}) if draft.voucher else None
        offer = next(
            (v for v in active if first and v.shop_id == first.shop_id and v.as_voucher() == plain), None
        )
        task = draft.model_copy(update={"generator_version": WORLD_GENERATOR, "source": "world"})
        compiled.append(
            WorldTask(
                task=task,
                profile=ShopperProfile(),
                basis="world_voucher",
                voucher_id=offer.voucher_id if offer else None,
            )
        )
    return compiled
