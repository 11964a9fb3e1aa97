"""The mention check: does a task's query text name every constraint its ground truth demands?

ShoppingBench's released generator sometimes drops a constraint from the text (the agent is
then scored on something it was never asked for). A generated task must pass this check
before it is kept; the generator regenerates (or falls back to the templates) otherwise.

Rules (all on normalised, plural-stripped tokens, so case, punctuation and "1,000" do not matter):

- title: at least two descriptive title words (one if the title has only one);
- sku option and attribute values: every token of the value; for ``region:value`` forms such
  as ``int:5xl`` the part after the colon suffices;
- service: one of its synonyms (``arena.phrasing.SERVICE_SYNONYMS``);
- price: each bound as a number, and a word of the right direction (under/over/between...);
- shop intent: the word shop, store or seller;
- voucher: the budget, threshold, face value or percentage and cap as numbers, and a word
  naming the voucher's scope (all products / same shop).
"""

from __future__ import annotations

from arena.phrasing import PRICE_DIRECTION_PHRASES, SERVICE_SYNONYMS, VOUCHER_SCOPE_WORDS, number_text
from arena.templates import title_words
from arena.types import GoldItem, Task
from arena.wording import normalise_text, stem, tokens

_SHOP_WORDS = frozenset({"shop", "store", "seller"})


class _Text:
    """A query prepared once for many look-ups: stemmed tokens, raw tokens, padded normalised string."""

    def __init__(self, query: str) -> None:
        self.normalised = f" {normalise_text(query)} "
        self.raw = set(self.normalised.split())
        self.stemmed = {stem(t) for t in self.raw}

    def has_value(self, value: str) -> bool:
        wanted = tokens(value)
        if wanted and all(t in self.stemmed for t in wanted):
            return True
        if ":" in value:
            tail = tokens(value.rsplit(":", 1)[1])
            return bool(tail) and all(t in self.stemmed for t in tail)
        return not wanted

    def has_number(self, value: float) -> bool:
        return number_text(value) in self.raw

    def has_phrase(self, phrase: str) -> bool:
        return f" {normalise_text(phrase)} " in self.normalised


def _item_missing(item: GoldItem, text: _Text, label: str) -> list[str]:
    missing: list[str] = []
    for title in item.titles[:1]:
        words = set(tokens(" ".join(title_words(title))))
        needed = min(2, len(words))
        if len(words & text.stemmed) < needed:
            missing.append(f"{label}title words of {title!r}")
    for variant in item.sku_options:
        missing += [f"{label}sku {k}={v!r}" for k, v in variant.items() if not text.has_value(v)]
    for attribute in item.attributes:
        for key, values in attribute.items():
            missing += [f"{label}attribute {key}={v!r}" for v in values if not text.has_value(v)]
    for service in item.service:
        if not any(text.has_phrase(p) for p in SERVICE_SYNONYMS[service]):
            missing.append(f"{label}service {service}")
    for price in item.price:
        wanted = {
            "less than": (price.high,),
            "greater than": (price.low,),
            "between": (price.low, price.high),
        }
        bounds = [b for b in wanted[price.mode] if b is not None]
        if not all(text.has_number(b) for b in bounds):
            missing.append(f"{label}price {price.mode} bound")
        if not any(text.has_phrase(p) for p in PRICE_DIRECTION_PHRASES[price.mode]):
            missing.append(f"{label}price direction {price.mode!r}")
    return missing


def missing_mentions(task: Task) -> list[str]:
    """Return a description of each constraint the query does not mention (empty when all are named).

    Args:
        task: the task whose ``query`` is checked against its own ground truth.
    """
    text = _Text(task.query)
    missing: list[str] = []
    many = len(task.gold) > 1
    for position, item in enumerate(task.gold, start=1):
        missing += _item_missing(item, text, f"item {position}: " if many else "")
    if task.intent == "shop" and not (_SHOP_WORDS & text.stemmed):
        missing.append("shop: the word shop/store/seller")
    if task.voucher is not None and task.budget is not None:
        voucher = task.voucher
        numbers = [("budget", task.budget), ("threshold", voucher.threshold)]
        if voucher.discount_type == "fixed":
            numbers.append(("face value", voucher.face_value or 0.0))
        else:
            numbers += [
                ("percentage", round((voucher.discount or 0.0) * 100, 2)),
                ("cap", voucher.cap or 0.0),
            ]
        missing += [f"voucher {name}" for name, value in numbers if not text.has_number(value)]
        if not any(text.has_phrase(p) for p in VOUCHER_SCOPE_WORDS[voucher.voucher_type]):
            missing.append(f"voucher scope {voucher.voucher_type}")
    return missing


def mentions_all(task: Task) -> bool:
    """Return whether the query mentions every constraint of the ground truth."""
    return not missing_mentions(task)
