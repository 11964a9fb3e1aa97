"""Statements an assistant makes about a product (prices, attributes), read conservatively from its text.

The reader aims for precision over recall: a claim is taken only where a product id is named
and, before the next product id (and within a short window), a price figure follows a price
word or currency marker, or ``key: value`` names one of that product's own attribute or sku
keys. Segments that talk about totals, budgets or vouchers are skipped, since their figures
are about the basket, not the product. Anything subtler is left to the reasoning judge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from arena.types import Product
from judging.types import Claim

WINDOW = 160
# A stated price and the words of a basket or range; public because conversion's verifier reads
# rationales with the same two patterns.
PRICE_PATTERN = re.compile(
    r"(?:₱|php|\$|price[sd]?[\"']?\s*(?:is|of|:|=|at)?|priced\s+at|costs?)\s*([0-9][0-9,]*(?:\.[0-9]+)?)"
    r"|([0-9][0-9,]*(?:\.[0-9]+)?)\s*(?:php|pesos?)\b",
    re.IGNORECASE,
)
BASKET_WORDS = re.compile(
    r"\b(total|budget|voucher|discount|sum|threshold|after|under|below|above|less|more|between|"
    r"range|max|min|up to|cheaper|pricier|combined|together)\b",
    re.IGNORECASE,
)
_PAIR = re.compile(r"([a-z_][a-z0-9_]{1,40})[\"']?\s*[:=]\s*[\"']?([^,;.\n)\"']{1,60})", re.IGNORECASE)
_DIGIT = re.compile(r"[0-9]")
_JOINER = re.compile(r"\s+(?:and|with|in)\s+")  # where a stated value runs on into the next clause


_ID_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def named_spans(text: str, ids: Iterable[str]) -> list[tuple[int, int, str]]:
    """Where ids stand in ``text`` as whole tokens (no ASCII letter or digit either side): (start, end, id).

    Leftmost first and never overlapping; where several ids start at one place the longest is
    taken: what one regex alternation of the ids (longest first) finds, without compiling one
    per call (the judge and the conversion's verifier read many texts with their own id sets).
    """
    found: list[tuple[int, int, str]] = []
    for pid in set(ids):
        if not pid:
            continue
        start = text.find(pid)
        while start >= 0:
            end = start + len(pid)
            if (start == 0 or text[start - 1] not in _ID_CHARS) and (
                end == len(text) or text[end] not in _ID_CHARS
            ):
                found.append((start, -len(pid), pid))
            start = text.find(pid, start + 1)
    found.sort()
    spans: list[tuple[int, int, str]] = []
    after = 0
    for start, minus_length, pid in found:
        if start >= after:
            after = start - minus_length
            spans.append((start, after, pid))
    return spans


def _segments(text: str, ids: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Yield (product id, the text after it up to the next named id or the window's end)."""
    spans = named_spans(text, ids)
    for i, (_, end, pid) in enumerate(spans):
        stop = spans[i + 1][0] if i + 1 < len(spans) else len(text)
        yield pid, text[end : min(stop, end + WINDOW)]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _price_claim(pid: str, segment: str, product: Product) -> Claim | None:
    if not _DIGIT.search(segment) or BASKET_WORDS.search(segment):  # a stated price has a digit
        return None
    match = PRICE_PATTERN.search(segment)
    if not match:
        return None
    stated = _number(match.group(1) or match.group(2))
    if stated is None:
        return None
    correct = price_matches(stated, product.price)
    return Claim(
        product_id=pid,
        kind="price",
        key="price",
        stated=f"{stated:g}",
        actual=f"{product.price:g}",
        correct=correct,
    )


def _attribute_claims(pid: str, segment: str, product: Product) -> list[Claim]:
    pairs = list(_PAIR.finditer(segment)) if ":" in segment or "=" in segment else []
    if not pairs:  # most segments state no "key: value": skip reading the product's values
        return []
    values: dict[str, set[str]] = {k.lower(): {v.lower() for v in vs} for k, vs in product.attributes.items()}
    for option in product.sku_options.values():
        for k, v in option.items():
            values.setdefault(k.lower(), set()).add(v.lower())
    claims: list[Claim] = []
    for match in pairs:
        key = match.group(1).strip().lower().replace(" ", "_")
        if key not in values:
            continue
        stated = _JOINER.split(match.group(2).strip().lower())[0]
        correct = any(stated == v or stated in v or v in stated for v in values[key])
        actual = "|".join(sorted(values[key]))
        claims.append(
            Claim(product_id=pid, kind="attribute", key=key, stated=stated, actual=actual, correct=correct)
        )
    return claims


def price_matches(stated: float, price: float) -> bool:
    """Whether a stated price is ``price`` (within a cent in a hundred, or half a unit: rounding)."""
    return abs(stated - price) <= max(0.01 * price, 0.5)


def find_claims(text: str, products: dict[str, Product]) -> list[Claim]:
    """Return the price and attribute claims ``text`` makes about any of ``products``."""
    claims: list[Claim] = []
    for pid, segment in _segments(text, products):
        product = products[pid]
        price = _price_claim(pid, segment, product)
        if price is not None:
            claims.append(price)
        claims += _attribute_claims(pid, segment, product)
    return claims
