"""Near-miss decoys of gold products, each breaking exactly one constraint of one task, and fresh ids.

A decoy is a copy of a gold product under a fresh id whose title keeps every word of the
reference title and adds a seller word (similar, so BM25 ranks it next to the gold), with
exactly one change:

- ``sku`` / ``attribute``: one requested pair's value replaced everywhere (variants and
  attributes) by another value of the same key (seen in the tasks or the synth vocabulary);
- ``service``: one requested service removed;
- ``price``: the price moved just outside one price range (3%, at least one peso);
- ``budget``: a voucher item priced up until the basket misses the budget;
- ``shop``: the same product in another shop (breaks a shop task, or a shop voucher that
  is needed to meet the budget);
- ``title``: a lookalike whose title drops a reference word (used when nothing else applies).

Every candidate is proven before it is kept: put in place of its gold in the task's basket,
`arena.constraints.task_failures` (with word-containment title similarity) must report
exactly the one check it was made to break. Decoys of a shop task's gold stay in the gold's
shop (near misses inside the shop), except the ``shop`` kind.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from arena.constraints import requested_pairs, similar_title, task_failures, title_words
from arena.synth import load_vocabulary
from arena.types import PriceConstraint, Product, Task

DecoyKind = Literal["sku", "attribute", "service", "price", "budget", "shop", "title"]
KINDS: tuple[DecoyKind, ...] = ("sku", "attribute", "service", "price", "budget", "shop")
SELLER_WORDS = (
    "Original",
    "Ready Stock",
    "New Arrival",
    "Hot Sale",
    "Best Seller",
    "Authentic",
    "High Quality",
    "Local Seller",
    "2024",
    "Premium",
)
# Ten-digit ids in the span ShoppingBench's real ids occupy, so an id does not reveal a decoy.
PRODUCT_ID_RANGE = (1_000_000_000, 5_200_000_000)
SHOP_ID_RANGE = (1_000_000, 9_999_999)
URL_HOST = "https://shop.synth.example/products"
IMAGE_HOST = "https://img.synth.example/p"


@dataclass(frozen=True)
class Decoy:
    """What one decoy is: which gold it imitates and which check of which task it breaks."""

    product_id: str
    gold_id: str
    kind: DecoyKind
    task_id: str
    item: int
    breaks: str  # the one key `task_failures` reports with this decoy in place of the gold


class IdAllocator:
    """Hands out random product and shop ids that collide with nothing already taken."""

    def __init__(self, rng: random.Random, *, taken: set[str], taken_shops: set[str]) -> None:
        self._rng = rng
        self._taken = set(taken)
        self._taken_shops = set(taken_shops)
        self._shop_map: dict[str, str] = {}

    def new_product(self) -> str:
        """Return an unused ten-digit product id."""
        return self._fresh(PRODUCT_ID_RANGE, self._taken)

    def new_shop(self) -> str:
        """Return an unused seven-digit shop id."""
        return self._fresh(SHOP_ID_RANGE, self._taken_shops)

    def _fresh(self, bounds: tuple[int, int], taken: set[str]) -> str:
        while True:
            candidate = str(self._rng.randrange(*bounds))
            if candidate not in taken:
                taken.add(candidate)
                return candidate

    def adopt(self, product: Product, *, shop_id: str | None = None) -> Product:
        """Give a synthetic product a fresh id, and a given shop or a fresh one per source shop."""
        product_id = self.new_product()
        if shop_id is None:
            shop_id = self._shop_map.get(product.shop_id) or self._shop_map.setdefault(
                product.shop_id, self.new_shop()
            )
        url = re.sub(r"-i\d+\.html$", f"-i{product_id}.html", product.product_url)
        return product.model_copy(update={"product_id": product_id, "shop_id": shop_id, "product_url": url})


def value_pools(tasks: Sequence[Task]) -> dict[str, list[str]]:
    """Collect, per sku/attribute key, the values seen in the tasks and the synth vocabulary (sorted)."""
    pools: dict[str, set[str]] = {}
    for task in tasks:
        for item in task.gold:
            for key, value in requested_pairs(item):
                pools.setdefault(key, set()).add(value)
    for category in load_vocabulary().categories:
        for key, values in (*category.attributes, *category.sku):
            if key in pools:
                pools[key].update(values)
    return {key: sorted(values) for key, values in pools.items()}


Candidate = tuple[DecoyKind, Task, int, Any]


@dataclass
class DecoyMaker:
    """Makes proven decoys for gold products."""

    rng: random.Random
    golds: dict[str, Product]
    pools: dict[str, list[str]]
    ids: IdAllocator
    group_shops: set[str]
    _shops: list[str] = field(default_factory=list)
    _words: list[str] = field(default_factory=list)

    def decoys_for(
        self, gold_id: str, occurrences: Sequence[tuple[Task, int]], count: int
    ) -> list[tuple[Decoy, Product]]:
        """Return up to ``count`` decoys of one gold, spreading over the kinds that apply."""
        clean = [
            (t, i) for t, i in occurrences if not task_failures(t, self._basket(t), title_match=similar_title)
        ]
        by_kind: dict[DecoyKind, list[Candidate]] = {kind: [] for kind in KINDS}
        for task, index in clean:
            for candidate in self._candidates(task, index):
                by_kind[candidate[0]].append(candidate)
        kinds = [k for k in KINDS if by_kind[k]]
        self.rng.shuffle(kinds)
        for kind in kinds:
            self.rng.shuffle(by_kind[kind])
        # Round robin over the kinds, so three decoys break three different kinds of constraint.
        queues = [by_kind[k] for k in kinds]
        ordered = [
            queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)
        ]
        made: list[tuple[Decoy, Product]] = []
        for candidate in ordered:
            if len(made) >= count:
                return made
            decoy = self._make(self.golds[gold_id], candidate)
            if decoy is not None:
                made.append(decoy)
        if clean:
            for _ in range(3 * count):
                if len(made) >= count:
                    break
                task, index = clean[0]
                decoy = self._make(self.golds[gold_id], ("title", task, index, None))
                if decoy is not None:
                    made.append(decoy)
        return made

    def _basket(self, task: Task) -> list[Product]:
        return [self.golds[item.product_id] for item in task.gold]

    def _candidates(self, task: Task, index: int) -> list[Candidate]:
        item = task.gold[index]
        out: list[Candidate] = []
        sku = [(k, v) for option in item.sku_options for k, v in option.items()]
        out += [("sku", task, index, pair) for pair in sku]
        attrs = [pair for pair in requested_pairs(item) if pair not in sku]
        out += [("attribute", task, index, pair) for pair in attrs]
        out += [("service", task, index, s) for s in item.service]
        out += [("price", task, index, j) for j in range(len(item.price))]
        if task.intent == "voucher":
            out.append(("budget", task, index, None))
        if task.intent == "shop" or (task.voucher is not None and task.voucher.voucher_type == "shop"):
            out.append(("shop", task, index, None))
        return out

    def _make(self, gold: Product, candidate: Candidate) -> tuple[Decoy, Product] | None:
        kind, task, index, detail = candidate
        data = gold.model_dump()
        data["product_id"] = self.ids.new_product()
        data["title"] = self._similar(gold.title) if kind != "title" else self._lookalike(gold.title)
        data["shop_id"] = gold.shop_id if gold.shop_id in self.group_shops else self._other_shop(gold.shop_id)
        data["sold_count"] = 0 if self.rng.random() < 0.3 else int(self.rng.paretovariate(0.8))
        data["main_image_url"] = f"{IMAGE_HOST}/{self.rng.getrandbits(128):032x}.jpg"
        data["product_url"] = f"{URL_HOST}/-i{data['product_id']}.html"
        expected = f"{index}:title" if kind == "title" else ""
        if kind in ("sku", "attribute"):
            key, value = detail
            replacement = self._other_value(key, value)
            for variant in data["sku_options"].values():
                if variant.get(key) == value:
                    variant[key] = replacement
            if value in data["attributes"].get(key, ()):
                values = [replacement if v == value else v for v in data["attributes"][key]]
                data["attributes"][key] = tuple(dict.fromkeys(values))
            expected = f"{index}:pair:{key}={value}"
        elif kind == "service":
            data["service"] = tuple(s for s in gold.service if s != detail)
            expected = f"{index}:service:{detail}"
        elif kind == "price":
            price = _outside(task.gold[index].price[detail])
            if price is None:
                return None
            data["price"] = price
            expected = f"{index}:price:{detail}"
        elif kind == "budget":
            data["price"] = self._over_budget(task, index, gold)
            expected = "budget"
        elif kind == "shop":
            data["shop_id"] = self._other_shop(gold.shop_id, fresh=True)
            expected = "shop" if task.intent == "shop" else "budget"
        decoy = Product.model_validate(data)
        basket = self._basket(task)
        basket[index] = decoy
        if task_failures(task, basket, title_match=similar_title) != [expected]:
            return None
        return Decoy(decoy.product_id, gold.product_id, kind, task.task_id, index, expected), decoy

    def _similar(self, title: str) -> str:
        word = self.rng.choice(SELLER_WORDS)
        return f"[{word}] {title}" if self.rng.random() < 0.5 else f"{title} {word}"

    def _lookalike(self, title: str) -> str:
        words = title.split()
        if not self._words:
            pool = {w for p in self.golds.values() for w in p.title.split() if w.isalpha() and len(w) >= 4}
            self._words = sorted(pool)
        droppable = [i for i, w in enumerate(words) if len(w) >= 3] or list(range(len(words)))
        for i in sorted(self.rng.sample(droppable, min(len(droppable), 2)), reverse=True):
            del words[i]
        for _ in range(2):
            words.insert(self.rng.randint(0, len(words)), self.rng.choice(self._words))
        candidate = " ".join(words)
        if title_words(title) <= title_words(candidate):  # a dropped word survived elsewhere
            candidate = " ".join(w for w in words if w.lower() not in title_words(title)) or "Assorted Item"
        return candidate

    def _other_value(self, key: str, value: str) -> str:
        options = [v for v in self.pools.get(key, ()) if v != value]
        if options:
            return self.rng.choice(options)
        number = re.search(r"\d+", value)
        if number:
            bumped = str(int(number.group()) * 2 + 1)
            return value[: number.start()] + bumped + value[number.end() :]
        everything = sorted({v for values in self.pools.values() for v in values} - {value})
        return self.rng.choice(everything) if everything else f"not {value}"

    def _other_shop(self, avoid: str, *, fresh: bool = False) -> str:
        if not fresh and self._shops and self.rng.random() < 0.5:
            shop = self.rng.choice(self._shops)
            if shop != avoid:
                return shop
        shop = self.ids.new_shop()
        self._shops.append(shop)
        return shop

    def _over_budget(self, task: Task, index: int, gold: Product) -> float:
        basket = self._basket(task)
        step = max(1.0, round(gold.price * 0.05, 2))
        price = gold.price
        for _ in range(60):
            price = round(price + step, 2)
            basket[index] = gold.model_copy(update={"price": price})
            if task_failures(task, basket) == []:
                step *= 2
                continue
            return price
        return price


def _outside(constraint: PriceConstraint) -> float | None:
    # Just outside the range: 3% (at least one peso) beyond the bound that can be crossed.
    if constraint.mode != "less than" and constraint.low is not None:
        price = round(constraint.low - max(1.0, round(constraint.low * 0.03)), 2)
        if price > 0:
            return float(price)
    if constraint.mode != "greater than" and constraint.high is not None:
        return float(round(constraint.high + max(1.0, round(constraint.high * 0.03)), 2))
    return None
