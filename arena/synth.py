"""A deterministic generator of realistic synthetic catalogs in ShoppingBench's product schema.

The vocabulary (``synth_vocabulary.json``) holds a few dozen categories, each with its own
product nouns, descriptors, brands, attribute keys and values, SKU option keys and values,
a price median and spread, and feature phrases. From it the generator draws:

- shops with a long-tailed size (Pareto, 1..500 products; most shops have one or two), a
  primary category, and a service profile (a few official brand stores; per-shop rates of
  free shipping and cash on delivery; flash sales on a few products);
- products in a shop's category (mostly), priced log-normally around the category median,
  with long-tailed sold counts, 0..2 SKU option keys giving 1..9 numbered variants, 2..4
  lower-cased attributes, and a title composed from brand, descriptors, attribute words,
  noun, model code and seller words (varied enough that BM25 ranking means something).

Everything comes from one ``random.Random(seed)``; iteration never depends on set order, so
the same seed gives the same products. Memory is bounded: only the open shops are held
(at most `MAX_OPEN_SHOPS`), and product and shop ids come from a seeded bijection rather
than a set of used ids.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Container, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import accumulate, product
from typing import Any

from arena.types import Product, Service

MAX_OPEN_SHOPS = 2000
MAX_SHOP_SIZE = 500
MAX_VARIANTS = 9
PRODUCT_ID_BASE, PRODUCT_ID_SPAN = 10**9, 9 * 10**9  # ten-digit ids, as ShoppingBench's
SHOP_ID_BASE, SHOP_ID_SPAN = 10**6, 9 * 10**6  # seven-digit shop ids
OFFICIAL_SHOP_RATE = 0.04
FLASHSALE_RATE = 0.08
NO_BRAND = "No Brand"
IMAGE_HOST = "https://img.synth.example/p"
SHOP_HOST = "https://shop.synth.example/products"


@dataclass(frozen=True)
class Category:
    """One category's vocabulary and price model."""

    path: str
    nouns: tuple[str, ...]
    descriptors: tuple[str, ...]
    brands: tuple[str, ...]
    brand_weights: tuple[float, ...]  # cumulative Zipf weights over brands
    attributes: tuple[tuple[str, tuple[str, ...]], ...]
    sku: tuple[tuple[str, tuple[str, ...]], ...]
    price_median: float
    price_sigma: float
    features: tuple[str, ...]


@dataclass(frozen=True)
class Vocabulary:
    """The generator's word lists."""

    categories: tuple[Category, ...]
    category_weights: tuple[float, ...]  # cumulative
    noun_suffixes: tuple[str, ...]
    seller_words: tuple[str, ...]
    sentences: tuple[str, ...]


@dataclass
class Shop:
    """An open shop: its id, remaining capacity and what it sells."""

    shop_id: str
    remaining: int
    category: Category
    official_brand: str | None
    free_shipping_rate: float
    cod_rate: float


def _zipf(n: int, s: float = 1.0) -> tuple[float, ...]:
    return tuple(accumulate(1.0 / (rank**s) for rank in range(1, n + 1)))


@lru_cache(maxsize=1)
def load_vocabulary() -> Vocabulary:
    """Load the packaged vocabulary (cached; read on first use, never at import)."""
    text = resources.files("arena").joinpath("synth_vocabulary.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    categories = tuple(
        Category(
            path=c["path"],
            nouns=tuple(c["nouns"]),
            descriptors=tuple(c["descriptors"]),
            brands=tuple(c["brands"]),
            brand_weights=_zipf(len(c["brands"])),
            attributes=tuple((k, tuple(v)) for k, v in c["attributes"].items()),
            sku=tuple((k, tuple(v)) for k, v in c["sku"].items()),
            price_median=float(c["price_median"]),
            price_sigma=float(c["price_sigma"]),
            features=tuple(c["features"]),
        )
        for c in data["categories"]
    )
    return Vocabulary(
        categories=categories,
        category_weights=_zipf(len(categories), 0.6),
        noun_suffixes=tuple(data["noun_suffixes"]),
        seller_words=tuple(data["seller_words"]),
        sentences=tuple(data["description_sentences"]),
    )


def _bijection(rng: random.Random, span: int) -> tuple[int, int]:
    # i -> (a * i + b) mod span is a bijection when gcd(a, span) == 1: unique ids, no memory.
    while True:
        a = rng.randrange(span // 3, span)
        if math.gcd(a, span) == 1:
            return a, rng.randrange(span)


def iter_synth_products(
    count: int, seed: int, *, exclude_ids: Container[str] = frozenset(), id_seed: int | None = None
) -> Iterator[Product]:
    """Yield ``count`` synthetic products, deterministically for ``seed``.

    Args:
        count: how many products.
        seed: the only source of randomness.
        exclude_ids: product ids never to emit (skipped in the id sequence), e.g. real ids.
        id_seed: seed of the id bijections (defaults to ``seed``).
    """
    vocab = load_vocabulary()
    rng = random.Random(seed)
    ids = random.Random(seed if id_seed is None else id_seed)
    pa, pb = _bijection(ids, PRODUCT_ID_SPAN)
    sa, sb = _bijection(ids, SHOP_ID_SPAN)
    # Few open shops keep big shops reachable in small catalogs; many interleave large ones.
    open_shops = max(1, min(MAX_OPEN_SHOPS, count // 400))
    shops_made = 0

    def new_shop() -> Shop:
        nonlocal shops_made
        shop_id = str(SHOP_ID_BASE + (sa * shops_made + sb) % SHOP_ID_SPAN)
        shops_made += 1
        return make_shop(rng, vocab, shop_id)

    shops = [new_shop() for _ in range(open_shops)]
    serial = 0
    for _ in range(count):
        while True:
            product_id = str(PRODUCT_ID_BASE + (pa * serial + pb) % PRODUCT_ID_SPAN)
            serial += 1
            if product_id not in exclude_ids:
                break
        slot = rng.randrange(open_shops)
        shop = shops[slot]
        yield make_product(rng, vocab, shop, product_id)
        shop.remaining -= 1
        if shop.remaining <= 0:
            shops[slot] = new_shop()


def make_shop(rng: random.Random, vocab: Vocabulary, shop_id: str) -> Shop:
    """Draw a shop: long-tailed size, primary category, service profile."""
    category = rng.choices(vocab.categories, cum_weights=vocab.category_weights)[0]
    size = min(MAX_SHOP_SIZE, int(rng.paretovariate(1.1)))
    official = rng.random() < OFFICIAL_SHOP_RATE
    brand = rng.choices(category.brands, cum_weights=category.brand_weights)[0] if official else None
    return Shop(
        shop_id=shop_id,
        remaining=size,
        category=category,
        official_brand=brand if brand != NO_BRAND else None,
        free_shipping_rate=1.0 if official else rng.choice((0.05, 0.2, 0.4, 0.7)),
        cod_rate=rng.choice((0.3, 0.7, 0.9, 1.0)),
    )


def make_product(rng: random.Random, vocab: Vocabulary, shop: Shop, product_id: str) -> Product:
    """Draw one product for ``shop`` (its own category 85% of the time)."""
    category = shop.category
    if rng.random() < 0.15:
        category = rng.choices(vocab.categories, cum_weights=vocab.category_weights)[0]
    brand = shop.official_brand or rng.choices(category.brands, cum_weights=category.brand_weights)[0]
    if shop.official_brand is None and rng.random() < 0.12:
        brand = NO_BRAND
    attributes = _attributes(rng, category, brand)
    noun = rng.choice(category.nouns)
    descriptors = rng.sample(category.descriptors, rng.choice((1, 1, 2, 2, 3)))
    title = _title(rng, vocab, brand, noun, descriptors, attributes)
    price = _price(rng, category, official=shop.official_brand is not None)
    service: list[Service] = []
    if shop.official_brand is not None:
        service.append("official")
    if rng.random() < shop.free_shipping_rate:
        service.append("freeShipping")
    if rng.random() < shop.cod_rate:
        service.append("COD")
    if rng.random() < FLASHSALE_RATE:
        service.append("flashsale")
    features = rng.sample(category.features, rng.randint(2, len(category.features)))
    return Product(
        product_id=product_id,
        shop_id=shop.shop_id,
        brand=brand,
        category=category.path,
        title=title,
        short_description="".join(f"{f};" for f in features),
        description=_description(rng, vocab, brand, noun, descriptors, features),
        specification=";".join(f"{k}:{v[0]}" for k, v in attributes.items()),
        price=price,
        sold_count=0 if rng.random() < 0.35 else min(250_000, int(rng.paretovariate(0.8))),
        sku_options=_sku_options(rng, category),
        attributes=attributes,
        service=tuple(service),
        main_image_url=f"{IMAGE_HOST}/{rng.getrandbits(128):032x}.jpg",
        product_url=f"{SHOP_HOST}/{_slug(title)}-i{product_id}.html",
    )


def _attributes(rng: random.Random, category: Category, brand: str) -> dict[str, tuple[str, ...]]:
    chosen = rng.sample(category.attributes, min(len(category.attributes), rng.randint(2, 4)))
    attributes: dict[str, tuple[str, ...]] = {}
    for key, values in chosen:
        picked = rng.sample(values, 2 if len(values) > 2 and rng.random() < 0.15 else 1)
        attributes[key] = tuple(v.lower() for v in picked)
    if brand != NO_BRAND and rng.random() < 0.7:
        attributes["brand"] = (brand.lower(),)
    return attributes


def _title(
    rng: random.Random,
    vocab: Vocabulary,
    brand: str,
    noun: str,
    descriptors: list[str],
    attributes: dict[str, tuple[str, ...]],
) -> str:
    words = [d.title() if rng.random() < 0.7 else d for d in descriptors]
    attr_words = [values[0] for key, values in attributes.items() if key != "brand" and rng.random() < 0.4]
    model = ""
    if rng.random() < 0.3:
        letters = "".join(rng.choice("ABCDEFGHJKLMNPRSTVXZ") for _ in range(rng.randint(1, 2)))
        model = f"{letters}{rng.randint(1, 999)}"
    noun_text = noun.title() if rng.random() < 0.6 else noun
    shown_brand = "" if brand == NO_BRAND or rng.random() < 0.15 else brand
    layout = rng.randrange(3)
    if layout == 0:
        parts = [shown_brand, *words, *attr_words, noun_text, model]
    elif layout == 1:
        parts = [shown_brand, model, noun_text, *words, *attr_words]
    else:
        parts = [*words, shown_brand, noun_text, *attr_words, model]
    suffix = rng.choice(vocab.noun_suffixes)
    if suffix:
        parts.append(suffix)
    if rng.random() < 0.3:
        seller = rng.choice(vocab.seller_words)
        if rng.random() < 0.5:
            parts.insert(0, f"[{seller}]")
        else:
            parts.append(seller)
    return " ".join(p for p in parts if p)


def _price(rng: random.Random, category: Category, *, official: bool) -> float:
    value = category.price_median * math.exp(category.price_sigma * rng.gauss(0.0, 1.0))
    if official:
        value *= 1.2
    style = rng.random()
    if value >= 20 and style < 0.3:
        value = math.floor(value / 10) * 10 - 1  # charm pricing: 1299, 499
    elif style < 0.75:
        value = float(round(value))
    return max(1.0, round(value, 2))


def _sku_options(rng: random.Random, category: Category) -> dict[str, dict[str, str]]:
    roll = rng.random()
    keys = 0 if roll < 0.3 else (1 if roll < 0.75 else 2)
    chosen = rng.sample(category.sku, min(keys, len(category.sku)))
    if not chosen:
        return {}
    axes = [
        [(key, v) for v in rng.sample(values, rng.randint(1, min(len(values), 6)))] for key, values in chosen
    ]
    combos = list(product(*axes))[:MAX_VARIANTS]
    return {str(i): dict(combo) for i, combo in enumerate(combos, start=1)}


def _description(
    rng: random.Random,
    vocab: Vocabulary,
    brand: str,
    noun: str,
    descriptors: list[str],
    features: list[str],
) -> str:
    sentences = rng.sample(vocab.sentences, rng.randint(2, 5))
    fill = {"noun": noun, "brand": brand if brand != NO_BRAND else "our shop", "descriptor": descriptors[0]}
    text = [s.format(**fill) for s in sentences]
    text.insert(rng.randint(0, len(text)), "Features: " + ". ".join(features) + ".")
    return " ".join(text)


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:80] or "product"
