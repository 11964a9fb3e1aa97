"""A real-data catalog rebuilt from ShoppingBench tasks: gold products, near-miss decoys, shop siblings.

The method (also in docs/catalog.md):

1. Merge. Every gold item of every task is an *occurrence* of its product id. Occurrences
   of one id are merged: the reference title (a second, different title is a conflict),
   the intersection of all price ranges (an empty one is a conflict; the earlier ranges
   win), the union of services, attribute pairs, and sku pairs. Each occurrence's sku
   pairs go into one variant (an existing compatible one, else a new one, at most 9), so
   ShoppingBench's flattening rule finds them together. A knowledge task's full product
   record is kept as it is; other occurrences it fails are reported as conflicts.
2. Shops. Shop tasks and shop-voucher tasks join their gold ids into one shop (union-find
   over ids, so overlapping tasks share a shop); every other gold gets its own shop.
3. Prices. Voucher baskets first: the basket total is back-solved from the voucher's
   ``price_after_voucher`` (fixed: plus the face value; percentage: divided by
   ``1 - discount`` unless the cap binds, then plus the cap), and split over the basket's
   not yet priced items inside their price ranges; the float sum in item order is then
   checked with `Voucher.price_after` against the budget (as ``eval_voucher`` does) and
   nudged by cents if rounding broke it (`arena.prices`). Every other gold is priced in range.
4. Decoys and siblings (`arena.decoys`), then optional synthetic background products.

Products come out sorted by id, so file order says nothing about which are gold.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from arena.constraints import unmet_constraints
from arena.decoys import Decoy, DecoyMaker, IdAllocator, value_pools
from arena.prices import MIN_PRICE_CENTS, price_inside, price_voucher_basket
from arena.synth import iter_synth_products
from arena.types import SERVICES, Product, Service, Task

MAX_VARIANTS = 9
URL_HOST = "https://shop.synth.example/products"
IMAGE_HOST = "https://img.synth.example/p"


@dataclass(frozen=True)
class Conflict:
    """Constraints on one product id that cannot all hold (reported, never fatal)."""

    product_id: str
    task_ids: tuple[str, ...]
    reason: str


@dataclass
class GoldSpec:
    """The merged constraints of one gold product id."""

    product_id: str
    title: str
    occurrences: list[tuple[Task, int]] = field(default_factory=list)
    record: Product | None = None
    low: int | None = None  # cents, inclusive
    high: int | None = None
    services: list[Service] = field(default_factory=list)
    variants: list[dict[str, str]] = field(default_factory=list)
    attributes: dict[str, list[str]] = field(default_factory=dict)
    shop_id: str = ""
    price: int | None = None  # cents


@dataclass
class FromTasksCatalog:
    """The rebuilt catalog and what it is made of."""

    products: list[Product]
    gold_ids: list[str]
    decoys: list[Decoy]
    conflicts: list[Conflict]
    siblings: int = 0
    background: int = 0


def build_from_tasks(
    tasks: Sequence[Task], *, seed: int = 0, decoys: int = 3, siblings: int = 3, background: int = 0
) -> FromTasksCatalog:
    """Rebuild a catalog in which every task's gold exists and satisfies its constraints.

    Args:
        tasks: the tasks (any intents); their order fixes the order of every random draw.
        seed: the seed of every random choice (same tasks and seed, same catalog).
        decoys: near-miss decoys per gold product.
        siblings: extra unrelated products per shop-task shop.
        background: synthetic products added around them (`arena.synth`).
    """
    rng = random.Random(seed)
    specs, conflicts = merge_specs(tasks)
    used_shops = {s.record.shop_id for s in specs.values() if s.record is not None}
    ids = IdAllocator(rng, taken=set(specs), taken_shops=used_shops)
    group_shops = _assign_shops(tasks, specs, ids, conflicts)
    pools = value_pools(tasks)
    _add_variety(rng, specs, pools)
    _price_vouchers(rng, tasks, specs, conflicts)
    for spec in specs.values():
        if spec.price is None:
            spec.price = price_inside(rng, spec.low, spec.high)
    golds = {pid: _gold_product(rng, spec) for pid, spec in specs.items()}
    for spec in specs.values():
        _check_occurrences(spec, golds[spec.product_id], conflicts)
    maker = DecoyMaker(rng=rng, golds=golds, pools=pools, ids=ids, group_shops=group_shops)
    made: list[Decoy] = []
    extra: list[Product] = []
    for spec in specs.values():
        for decoy, product in maker.decoys_for(spec.product_id, spec.occurrences, decoys):
            made.append(decoy)
            extra.append(product)
    filler = iter_synth_products(siblings * len(group_shops) + background, seed + 1)
    for shop_id in sorted(group_shops):
        extra += [ids.adopt(next(filler), shop_id=shop_id) for _ in range(siblings)]
    extra += [ids.adopt(next(filler)) for _ in range(background)]
    products = sorted([*golds.values(), *extra], key=lambda p: p.product_id)
    return FromTasksCatalog(
        products=products,
        gold_ids=list(specs),
        decoys=made,
        conflicts=conflicts,
        siblings=siblings * len(group_shops),
        background=background,
    )


def merge_specs(tasks: Sequence[Task]) -> tuple[dict[str, GoldSpec], list[Conflict]]:
    """Merge every occurrence of each gold product id into one spec (first-seen order)."""
    specs: dict[str, GoldSpec] = {}
    conflicts: list[Conflict] = []
    for task in tasks:
        for index, item in enumerate(task.gold):
            spec = specs.setdefault(item.product_id, GoldSpec(item.product_id, item.titles[0]))
            spec.occurrences.append((task, index))
            if item.product is not None:
                if spec.record is None:
                    spec.record = item.product
                elif spec.record != item.product:
                    conflicts.append(_conflict(spec, "two different reference records; kept the first"))
            if spec.title not in item.titles:
                conflicts.append(
                    _conflict(spec, f"reference titles differ: {spec.title!r} vs {item.titles[0]!r}")
                )
            _merge_price(spec, task, index, conflicts)
            spec.services += [s for s in item.service if s not in spec.services]
            sku = [(k, v) for option in item.sku_options for k, v in option.items()]
            _place_pairs(spec, sku)
            for attr in item.attributes:
                for key, values in attr.items():
                    known = spec.attributes.setdefault(key, [])
                    known += [v for v in values if v not in known]
    return specs, conflicts


def _conflict(spec: GoldSpec, reason: str) -> Conflict:
    task_ids = tuple(dict.fromkeys(task.task_id for task, _ in spec.occurrences))
    return Conflict(spec.product_id, task_ids, reason)


def _merge_price(spec: GoldSpec, task: Task, index: int, conflicts: list[Conflict]) -> None:
    low, high = spec.low, spec.high
    for c in task.gold[index].price:
        if c.mode != "less than" and c.low is not None:
            bound = math.ceil(round(c.low * 100, 6))
            low = bound if low is None else max(low, bound)
        if c.mode != "greater than" and c.high is not None:
            bound = math.floor(round(c.high * 100, 6))
            high = bound if high is None else min(high, bound)
    if low is not None and high is not None and low > high:
        conflicts.append(_conflict(spec, f"price ranges do not intersect in task {task.task_id}"))
        return
    spec.low, spec.high = low, high


def _place_pairs(spec: GoldSpec, pairs: list[tuple[str, str]]) -> None:
    # One occurrence's sku pairs must sit in one variant (or the attributes) to be found together.
    wanted: dict[str, str] = {}
    overflow: list[tuple[str, str]] = []
    for key, value in pairs:
        if wanted.get(key, value) != value:
            overflow.append((key, value))
        else:
            wanted[key] = value
    if wanted:
        home = next((v for v in spec.variants if all(v.get(k, x) == x for k, x in wanted.items())), None)
        if home is not None:
            home.update(wanted)
        elif len(spec.variants) < MAX_VARIANTS:
            spec.variants.append(dict(wanted))
        else:
            overflow += list(wanted.items())
    for key, value in overflow:
        known = spec.attributes.setdefault(key, [])
        if value not in known:
            known.append(value)


def _assign_shops(
    tasks: Sequence[Task], specs: dict[str, GoldSpec], ids: IdAllocator, conflicts: list[Conflict]
) -> set[str]:
    parent: dict[str, str] = {}

    def root(pid: str) -> str:
        while parent.get(pid, pid) != pid:
            pid = parent[pid]
        return pid

    for task in tasks:
        if _is_shop_task(task):
            first = root(task.gold[0].product_id)
            for item in task.gold[1:]:
                other = root(item.product_id)
                if other != first:
                    parent[other] = first
    groups: dict[str, list[GoldSpec]] = {}
    for pid, spec in specs.items():
        groups.setdefault(root(pid), []).append(spec)
    group_shops: set[str] = set()
    for members in groups.values():
        shops = list(dict.fromkeys(s.record.shop_id for s in members if s.record is not None))
        if len(shops) > 1:
            conflicts.append(_conflict(members[0], f"one shop needed, reference records say {shops}"))
        shop_id = shops[0] if shops else ids.new_shop()
        for spec in members:
            spec.shop_id = spec.record.shop_id if spec.record is not None else shop_id
        if any(_is_shop_task(task) for spec in members for task, _ in spec.occurrences):
            group_shops.add(shop_id)
    return group_shops


def _is_shop_task(task: Task) -> bool:
    return task.intent == "shop" or (task.voucher is not None and task.voucher.voucher_type == "shop")


def _add_variety(rng: random.Random, specs: dict[str, GoldSpec], pools: dict[str, list[str]]) -> None:
    # A few sibling variants (other sizes, colours) make sku choice a real choice; they never
    # remove a requested pair, so every occurrence stays satisfied.
    for spec in specs.values():
        if spec.record is not None or not spec.variants:
            continue
        for _ in range(rng.randint(0, 3)):
            if len(spec.variants) >= MAX_VARIANTS:
                break
            variant = dict(rng.choice(spec.variants))
            key = rng.choice(sorted(variant))
            others = [v for v in pools.get(key, []) if v != variant[key]]
            if not others:
                continue
            variant[key] = rng.choice(others)
            if variant not in spec.variants:
                spec.variants.append(variant)


def _price_vouchers(
    rng: random.Random, tasks: Sequence[Task], specs: dict[str, GoldSpec], conflicts: list[Conflict]
) -> None:
    for spec in specs.values():
        if spec.record is not None:
            spec.price = round(spec.record.price * 100)
    for task in tasks:
        if task.intent == "voucher" and not price_voucher_basket(
            rng, task, [specs[item.product_id] for item in task.gold]
        ):
            conflicts.append(
                Conflict(task.gold[0].product_id, (task.task_id,), "voucher basket misses budget")
            )


def _gold_product(rng: random.Random, spec: GoldSpec) -> Product:
    if spec.record is not None:
        return spec.record
    attributes = {k: tuple(v) for k, v in spec.attributes.items()}
    brand = attributes.get("brand", ("",))[0]
    spec_text = ";".join(f"{k}:{v[0]}" for k, v in attributes.items())
    return Product(
        product_id=spec.product_id,
        shop_id=spec.shop_id,
        brand=brand,
        title=spec.title,
        short_description="".join(f"{k.replace('_', ' ')}: {', '.join(v)};" for k, v in attributes.items()),
        description=f"{spec.title}. Reconstructed from ShoppingBench task constraints.",
        specification=spec_text,
        price=(spec.price or MIN_PRICE_CENTS) / 100,
        sold_count=0 if rng.random() < 0.2 else min(100_000, int(rng.paretovariate(0.7))),
        sku_options={str(i): dict(v) for i, v in enumerate(spec.variants, start=1)},
        attributes=attributes,
        service=tuple(s for s in SERVICES if s in spec.services),
        main_image_url=f"{IMAGE_HOST}/{rng.getrandbits(128):032x}.jpg",
        product_url=f"{URL_HOST}/-i{spec.product_id}.html",
    )


def _check_occurrences(spec: GoldSpec, product: Product, conflicts: list[Conflict]) -> None:
    for task, index in spec.occurrences:
        failed = unmet_constraints(product, task.gold[index])
        if failed:
            conflicts.append(Conflict(spec.product_id, (task.task_id,), f"gold fails {failed}"))
