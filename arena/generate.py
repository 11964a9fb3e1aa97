"""The task generator: fresh product, shop and voucher tasks from a search index, deterministic for a seed.

For each task, in round-robin over the requested intents:

1. Ground truth (``arena.sampling``, ShoppingBench's method): product: one sampled product;
   shop: a shop with at least N products (N uniform in 2..4), N of its products; voucher:
   platform (1..4 products anywhere) or shop (2..4 from one shop), basket total >= 100, a
   voucher and a budget synthesised from the total. A product is gold at most once per run.
2. The item's name: a window of 2..4 descriptive title words. Fairness: when a finder is
   given (by default ``find_product`` on the index with the item's price and service filters),
   the gold must be on the first results page for that name; otherwise the window grows word
   by word up to the whole title, and the product is redrawn if it is still not found. Items of
   one task get distinct names.
3. The query: templates (``arena.templates``) by default, or an LLM paraphrase of the template
   text (the voucher block is kept verbatim). The mention check must pass: a failing paraphrase
   is retried, then replaced by the template text; a failing template draw is redrawn.
4. Solvability (``arena.solvability``) must hold against the index, or the draw is dropped.

One ``random.Random(seed)`` drives every choice, so the same index and seed give the same
tasks (LLM paraphrases excepted: a server may not be deterministic).
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from arena import templates
from arena.difficulty import with_difficulty
from arena.errors import InvalidTask
from arena.index import ProductIndex
from arena.mention import missing_mentions
from arena.sampling import sample_item, sample_voucher
from arena.search import find_products
from arena.solvability import task_problems
from arena.types import GoldItem, Intent, Product, Task, Voucher

VoucherType = Literal["platform", "shop"]

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "arena-gen/1"
INTENTS: tuple[Intent, ...] = ("product", "shop", "voucher")

# Finder: (item name, gold item) -> product ids of the first results page.
Finder = Callable[[str, GoldItem], Sequence[str]]
# Paraphraser: template text -> reworded text, or None when it could not.
Paraphraser = Callable[[str], str | None]
# Voucher drawer: (gold basket, voucher type, rng) -> (voucher, budget), or None to redraw.
VoucherDrawer = Callable[[Sequence[Product], VoucherType, random.Random], tuple[Voucher, float] | None]


def sampled_voucher(
    products: Sequence[Product], kind: VoucherType, rng: random.Random
) -> tuple[Voucher, float] | None:
    """The default voucher drawer: ShoppingBench's voucher synthesised from the basket total."""
    return sample_voucher(sum(p.price for p in products), len({p.shop_id for p in products}), kind, rng)


class ProductSource(Protocol):
    """What the generator reads from a search index (``arena.index.SearchIndex`` satisfies it)."""

    @property
    def catalog_version(self) -> str:
        """The catalog version the index was built from."""
        ...

    def __len__(self) -> int:
        """Number of products."""
        ...

    def product(self, product_id: str) -> Product | None:
        """One product by id."""
        ...

    def product_id_at(self, ordinal: int) -> str:
        """The product id at a stable ordinal in ``0..len-1``."""
        ...

    def shop_product_ids(self, shop_id: str) -> list[str]:
        """The product ids of a shop."""
        ...

    def shops_with_at_least(self, n: int) -> list[str]:
        """Sorted ids of the shops with at least ``n`` products."""
        ...


@dataclass(frozen=True)
class GenerateConfig:
    """Knobs of the generator (defaults follow ShoppingBench)."""

    intents: tuple[Intent, ...] = INTENTS
    keep: float = 0.5
    min_voucher_total: float = 100.0
    max_draws_per_task: int = 200
    paraphrase_attempts: int = 2


@dataclass
class GenerateReport:
    """What a run did: tasks made, draws, why draws were rejected, paraphrases used, seconds."""

    tasks: int = 0
    draws: int = 0
    paraphrased: int = 0
    paraphrase_fallbacks: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


class _Run:
    """State of one generation run: the index, the random source, used products, caches."""

    def __init__(
        self,
        index: ProductSource,
        rng: random.Random,
        config: GenerateConfig,
        finder: Finder | None,
        voucher_drawer: VoucherDrawer = sampled_voucher,
    ):
        self.index, self.rng, self.config, self.finder = index, rng, config, finder
        self.voucher_drawer = voucher_drawer
        self.used: set[str] = set()
        self._shops: dict[int, list[str]] = {}

    def random_product(self) -> Product | None:
        product_id = self.index.product_id_at(self.rng.randrange(len(self.index)))
        return None if product_id in self.used else self.index.product(product_id)

    def shop_products(self, count: int) -> list[Product] | None:
        shops = self._shops.get(count)
        if shops is None:
            shops = self._shops[count] = self.index.shops_with_at_least(count)
        if not shops:
            return None
        ids = sorted(
            pid for pid in self.index.shop_product_ids(self.rng.choice(shops)) if pid not in self.used
        )
        if len(ids) < count:
            return None
        products = [self.index.product(pid) for pid in self.rng.sample(ids, count)]
        return None if any(p is None for p in products) else [p for p in products if p is not None]

    def name_item(self, item: GoldItem, product: Product, taken: set[str]) -> str | None:
        """Pick the item's name (a title window), grown until findable and distinct; None if impossible."""
        words = templates.title_words(product.title)
        if not words:
            return None
        start, end = templates.name_span(words, product.title, self.rng)
        while True:
            name = " ".join(words[start:end])
            distinct = len(set(words[start:end])) >= min(2, len(set(words)))  # the mention check needs two
            if (
                distinct
                and name not in taken
                and (self.finder is None or product.product_id in self.finder(name, item))
            ):
                return name
            if start == 0 and end == len(words):
                return None
            # Grow towards the start first (more specific modifiers), then towards the end.
            if start > 0:
                start -= 1
            else:
                end += 1


def price_filter(item: GoldItem) -> tuple[float | None, float | None]:
    """Return the ``find_product`` price filter an agent would set from the item's price constraint."""
    if not item.price:
        return (None, None)
    price = item.price[0]
    return (
        price.low if price.mode != "less than" else None,
        price.high if price.mode != "greater than" else None,
    )


def make_finder(index: ProductIndex, *, pages: int = 1) -> Finder:
    """Build the findability check on a real index: the product ids on ``find_product``'s first pages.

    The search is the item's name with the filters an agent would read off the query (price
    bounds and services), exactly as the ``find_product`` tool runs it.
    """

    def find(name: str, item: GoldItem) -> list[str]:
        ids: list[str] = []
        for page in range(1, pages + 1):
            hits = find_products(index, q=name, page=page, price=price_filter(item), service=item.service)
            ids += [str(hit["product_id"]) for hit in hits]
        return ids

    return find


def _basket(run: _Run, intent: Intent) -> tuple[list[Product], VoucherType] | None:
    rng = run.rng
    if intent == "product":
        product = run.random_product()
        return ([product], "platform") if product else None
    if intent == "shop":
        products = run.shop_products(rng.randint(2, 4))
        return (products, "shop") if products else None
    kind: VoucherType = "shop" if rng.random() < 0.5 else "platform"
    if kind == "shop":
        shop_basket = run.shop_products(rng.randint(2, 4))
        return (shop_basket, "shop") if shop_basket else None
    basket = [run.random_product() for _ in range(rng.randint(1, 4))]
    if any(p is None for p in basket) or len({p.product_id for p in basket if p}) != len(basket):
        return None
    return [p for p in basket if p is not None], "platform"


def _draw(run: _Run, intent: Intent, paraphraser: Paraphraser | None, report: GenerateReport) -> Task | None:
    picked = _basket(run, intent)
    if picked is None:
        report.rejected["basket"] += 1
        return None
    products, kind = picked
    rng = run.rng
    voucher = budget = None
    if intent == "voucher":
        total = sum(p.price for p in products)
        if total < run.config.min_voucher_total:
            report.rejected["voucher_total"] += 1
            return None
        drawn = run.voucher_drawer(products, kind, rng)
        if drawn is None:
            report.rejected["voucher_draw"] += 1
            return None
        voucher, budget = drawn
    items = [sample_item(p, rng, keep=run.config.keep, with_price=intent != "voucher") for p in products]
    names: list[str] = []
    for item, product in zip(items, products, strict=True):
        name = run.name_item(item, product, set(names))
        if name is None:
            report.rejected["not_findable"] += 1
            return None
        names.append(name)
    if intent == "product":
        head, tail = templates.product_query(items[0], names[0], rng), ""
    elif intent == "shop":
        head, tail = templates.shop_query(items, names, rng), ""
    elif voucher is not None and budget is not None:
        full = templates.voucher_query(items, names, voucher, budget, rng)
        head, _, tail = full.partition("\n\n")
        tail = "\n\n" + tail
    else:
        raise InvalidTask(f"no query template for intent {intent!r}")

    def build(query: str) -> Task:
        return Task(intent=intent, query=query, gold=tuple(items), voucher=voucher, budget=budget)

    task = build(head + tail)
    if missing_mentions(task):
        report.rejected["mention_template"] += 1
        return None
    if paraphraser is not None:
        task = _paraphrase(task, head, tail, build, paraphraser, run.config.paraphrase_attempts, report)
    problems = task_problems(task, {p.product_id: p for p in products})
    if problems:
        logger.error("generated_unsolvable problems=%s", "; ".join(problems))
        report.rejected["unsolvable"] += 1
        return None
    run.used.update(p.product_id for p in products)
    return with_difficulty(
        task.model_copy(
            update={"catalog_version": run.index.catalog_version, "generator_version": GENERATOR_VERSION}
        )
    )


def _paraphrase(
    task: Task,
    head: str,
    tail: str,
    build: Callable[[str], Task],
    paraphraser: Paraphraser,
    attempts: int,
    report: GenerateReport,
) -> Task:
    for _ in range(attempts):
        reworded = paraphraser(head)
        if not reworded:
            continue
        candidate = build(reworded.strip() + tail)
        if not missing_mentions(candidate):
            report.paraphrased += 1
            return candidate
    report.paraphrase_fallbacks += 1
    return task


def generate_tasks(
    index: ProductSource,
    *,
    n: int,
    seed: int,
    config: GenerateConfig | None = None,
    finder: Finder | None = None,
    paraphraser: Paraphraser | None = None,
    avoid_product_ids: Iterable[str] = (),
    progress: Callable[[int], None] | None = None,
    voucher_drawer: VoucherDrawer = sampled_voucher,
) -> tuple[list[Task], GenerateReport]:
    """Generate ``n`` tasks from an index, deterministically for ``seed`` (see the module docstring).

    Args:
        index: the search index (or anything with the ``ProductSource`` methods).
        n: how many tasks to make.
        seed: the random seed.
        config: generator knobs.
        finder: the findability check (``make_finder(index)`` in production); None skips it.
        paraphraser: an LLM paraphraser (``arena.paraphrase.make_paraphraser``); None keeps templates.
        avoid_product_ids: products never to use as gold (e.g. gold of tasks already kept).
        progress: called with the number of tasks made so far.
        voucher_drawer: where voucher tasks' vouchers come from (``sampled_voucher``, or a
            world's shop vouchers, ``arena.world``).

    Returns:
        The tasks (fewer than ``n`` only when the draws ran out; the report says why) and a report.

    Raises:
        InvalidTask: the index is empty or an intent is unknown.
    """
    config = config or GenerateConfig()
    if len(index) == 0:
        raise InvalidTask("cannot generate tasks from an empty index")
    unknown = set(config.intents) - set(INTENTS)
    if unknown or not config.intents:
        raise InvalidTask(f"intents must be among {INTENTS}, got {config.intents}")
    started = time.perf_counter()
    run = _Run(index, random.Random(seed), config, finder, voucher_drawer)
    run.used.update(avoid_product_ids)
    report = GenerateReport()
    tasks: list[Task] = []
    for position in range(n):
        intent = config.intents[position % len(config.intents)]
        for _ in range(config.max_draws_per_task):
            report.draws += 1
            task = _draw(run, intent, paraphraser, report)
            if task is not None:
                tasks.append(task)
                break
        else:
            logger.warning("generate_exhausted intent=%s made=%d wanted=%d", intent, len(tasks), n)
            break
        if progress is not None:
            progress(len(tasks))
    report.tasks = len(tasks)
    report.seconds = time.perf_counter() - started
    logger.info("generated tasks=%d draws=%d seconds=%.2f", report.tasks, report.draws, report.seconds)
    return tasks, report
