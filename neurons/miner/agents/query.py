"""Rule-based reading of a shopping query for the scripted agent: items, keywords, price, services, budget.

Deliberately simple (regular expressions and a stop-word list): it is the baseline that many
subnet miners run, not a language model. It never raises; a query it cannot read becomes one
item whose keywords are the query's content words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_KEYWORDS = 10

# Phrases that name ShoppingBench's service filters, most specific first.
SERVICE_PHRASES: tuple[tuple[str, str], ...] = (
    (r"\blazmall\b", "official"),
    (r"\bfree\s+(?:shipping|delivery)\b", "freeShipping"),
    (r"\bcash[\s-]+on[\s-]+delivery\b|\bcod\b", "COD"),
    (r"\blazflash\b|\bflash\s*sales?\b", "flashsale"),
)

_NUM = r"(\d+(?:\.\d+)?)"
_CURRENCY = r"(?:\s*(?:pesos?|php|₱))"
_LOW_WORDS = r"above|over|more than|greater than|at least|higher than|exceeding|starting (?:at|from)"
_HIGH_WORDS = r"under|below|less than|at most|up to|no more than|cheaper than|lower than|maximum of"
_PRICE_CONTEXT = re.compile(r"(?:price[ds]?|cost(?:s|ing)?|for|pay(?:ing)?|budget)\W+(?:\w+\W+){0,2}$", re.I)
_RANGE = re.compile(
    rf"(?:between|from)\s+(?:₱|php\s*)?{_NUM}{_CURRENCY}?\s*(?:and|to|-)\s*(?:₱|php\s*)?{_NUM}{_CURRENCY}?",
    re.I,
)
_LOW = re.compile(rf"(?:{_LOW_WORDS})\s+(?:₱|php\s*)?{_NUM}{_CURRENCY}?", re.I)
_HIGH = re.compile(rf"(?:{_HIGH_WORDS})\s+(?:₱|php\s*)?{_NUM}{_CURRENCY}?", re.I)
_BUDGET = re.compile(r"budget is (?:only )?`?(\d+(?:\.\d+)?)`?", re.I)
_VOUCHER_PART = re.compile(r"\n\s*my budget is.*$", re.I | re.S)
_NUMBERED = re.compile(r"\(\d+\)\s*")
_ORDINALS = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|next|then|lastly|finally|additionally)\s*,\s*", re.I
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.?!])\s+(?=(?:also|plus|additionally|and)\b)", re.I)
# Knowledge questions end with the purchase: "... I would like to purchase a horsetail bow for it."
_PURCHASE = re.compile(
    r"\b(?:i would like to|i'd like to|i want to|help me)\s+(?:purchase|buy|find|get)\b(.*)$", re.I | re.S
)
_LIST_SPLIT = re.compile(
    r"\s*;\s*(?:and\s+|also,?\s+|plus,?\s+)?|,\s*(?:and\s+|plus\s+)(?:also\s+)?|\s+as well as\s+"
    r"|,\s*(?=(?:a|an|another|some)\s)|\s+and\s+(?=(?:a|an)\s)",
    re.I,
)
# A closing sentence ("Please show shops that sell all these.") names no item.
_CLOSING = re.compile(r"^(?:please|the shop|the store|can you|could you|show me these|i want them)\b", re.I)
# A list piece that opens like this qualifies the previous item rather than naming a new one.
_QUALIFIER = re.compile(
    r"^(?:priced|price|costing|costs?|with|in|made|from|size|available|that|which|featuring|for|sold|offered)\b",
    re.I,
)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9:./+'&-]*")
_STOPWORDS = frozenset(
    """a an the and or but with without for of in on at to from by as is are be it its it's this that these
    those which who what when where i i'm im me my we our you your can could would like want need please help
    show find finds finding looking look search searching searches get give buy purchase find offer offers
    offering sell sells selling shop shops store stores item items product products option options one another
    also plus some any all both each such several following first second third fourth fifth lastly finally
    priced price prices cost costs costing pesos peso php between above over under below more less than
    greater least most up around about within only just must should have has having made come comes coming
    available through deal deals service services perks promo promotion type types category kind something
    variation variant model version design style look looking feature featuring features ideal great good
    new brand from that's there here them they their other do does did was were will required specifically
    offered focus color colour size sizes material pattern fit category categories compatibility number
    numbers include includes including included suitable perfect preferably ones""".split()
)


@dataclass(frozen=True)
class ItemSpec:
    """One product the customer asks for, as the rules read it."""

    text: str
    keywords: tuple[str, ...]
    price: tuple[float | None, float | None] = (None, None)
    services: tuple[str, ...] = ()

    def query(self) -> str:
        """Return the search string: the keywords joined by spaces."""
        return " ".join(self.keywords)

    def price_arg(self) -> str | None:
        """Return the ``find_product`` price argument ("lo-hi", "lo-", "0-hi") or None."""
        low, high = self.price
        if low is None and high is None:
            return None
        return f"{_number(low or 0)}-{'' if high is None else _number(high)}"

    def service_arg(self) -> str | None:
        """Return the ``find_product`` service argument (comma-separated) or None."""
        return ",".join(self.services) or None


@dataclass(frozen=True)
class ParsedQuery:
    """A query read into items; ``same_shop`` when the customer wants one shop to sell them all."""

    items: tuple[ItemSpec, ...]
    same_shop: bool = False
    budget: float | None = None


def parse_query(query: str) -> ParsedQuery:
    """Read a shopping query into items with keywords, price bounds and services.

    Args:
        query: the customer's request, verbatim.

    Returns:
        The parsed query; always at least one item.
    """
    budget_match = _BUDGET.search(query)
    budget = float(budget_match.group(1)) if budget_match else None
    request = _VOUCHER_PART.sub("", query).strip()
    purchase = _PURCHASE.search(request)
    if purchase and "?" in request[: purchase.start()]:
        request = purchase.group(1).strip() or request
    same_shop = bool(re.search(r"\b(?:shops?|stores?)\b", request, re.I))
    texts = split_items(request) if (same_shop or budget is not None) else [request]
    items = [read_item(text) for text in texts]
    items = [item for item in items if item.keywords] or [read_item(request)]
    return ParsedQuery(items=tuple(items), same_shop=same_shop and len(items) > 1, budget=budget)


def split_items(request: str) -> list[str]:
    """Split a multi-item request at numbered markers, ordinals, semicolons or ", a/an/another"."""
    for marker in (_NUMBERED, _ORDINALS):
        marked = marker.split(request)
        if len(marked) > 2:
            # The text before the first marker is the introduction ("Find a shop that sells:").
            return [part.strip(" ,.;:") for part in marked[1:] if part.strip(" ,.;:")]
    pieces = [
        piece.strip(" ,.;:")
        for sentence in _SENTENCE_SPLIT.split(request)
        for piece in _LIST_SPLIT.split(sentence)
    ]
    parts: list[str] = []
    for piece in pieces:
        if not piece or _CLOSING.match(piece):
            continue
        if parts and _QUALIFIER.match(piece):
            parts[-1] = f"{parts[-1]}, {piece}"
        else:
            parts.append(piece)
    return parts or [request]


def read_item(text: str) -> ItemSpec:
    """Read one item's text: price bounds and services are taken out, content words remain."""
    price, rest = _read_price(text)
    services: list[str] = []
    for pattern, service in SERVICE_PHRASES:
        if re.search(pattern, rest, re.I):
            services.append(service)
            rest = re.sub(pattern, " ", rest, flags=re.I)
    words: list[str] = []
    for token in _TOKEN.findall(rest.lower()):
        token = token.strip(".'-:/")
        if (len(token) < 2 and not token.isdigit()) or token in _STOPWORDS or token in words:
            continue
        words.append(token)
    return ItemSpec(text=text, keywords=tuple(words[:MAX_KEYWORDS]), price=price, services=tuple(services))


def _read_price(text: str) -> tuple[tuple[float | None, float | None], str]:
    low: float | None = None
    high: float | None = None
    rest = text
    for pattern in (_RANGE, _LOW, _HIGH):
        kept: list[str] = []
        position = 0
        for match in pattern.finditer(rest):
            has_currency = bool(re.search(_CURRENCY, match.group(0), re.I))
            if not has_currency and not _PRICE_CONTEXT.search(rest[: match.start()]):
                continue  # "power usage from 1 to 500" is not a price
            if pattern is _RANGE:
                low, high = float(match.group(1)), float(match.group(2))
            elif pattern is _LOW:
                low = float(match.group(1))
            else:
                high = float(match.group(1))
            kept.append(rest[position : match.start()])
            position = match.end()
        rest = " ".join([*kept, rest[position:]])
    return (low, high), rest


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
