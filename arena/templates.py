"""Deterministic query templates: turn a task's ground truth into a shopper's request, with varied wording.

Variety comes from the word banks in ``arena.phrasing``: the opener, the article, the register
of each constraint (a modifier "in black" or a statement "the colour should be black"), the
order of the constraints, the list style of multi-item requests, and the voucher block's
wording. Every choice is drawn from the ``random.Random`` passed in, so a seed fixes the text.
Every constraint is printed with its literal value, so the mention check passes by construction.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from arena import phrasing as P
from arena.types import GoldItem, PriceConstraint, Voucher

_TITLE_WORD = re.compile(r"[a-z][a-z0-9'&+-]*")
# Title words that say nothing about what the product is (marketing, logistics, filler).
TITLE_NOISE: frozenset[str] = frozenset(
    """
    new original authentic genuine hot sale best top quality high premium cheap ready stock free shipping
    cod in with for and the of on to by from a an or at is are fast delivery local seller official store
    shop mall item items pcs pc set piece pieces lot pack edition version latest promo sale sales deal
    """.split()
)


# Words naming who a product is for; a title often ends with them after the head noun.
AUDIENCE_WORDS: frozenset[str] = frozenset(
    "men mens man women womens woman ladies lady kids kid boys boy girls girl unisex adult baby".split()
)


def title_words(title: str) -> list[str]:
    """Return the descriptive words of a product title, in order (noise words and codes dropped)."""
    words = [w.strip("'&+-") for w in _TITLE_WORD.findall(title.casefold())]
    return [w for w in words if len(w) >= 2 and w not in TITLE_NOISE]


def name_span(words: Sequence[str], title: str, rng: random.Random) -> tuple[int, int]:
    """Choose the item's name as a span ``words[start:end]`` of 2..4 descriptive title words.

    English product titles put the head noun last in the noun phrase, before any "for ..."
    tail ("Violin Bow for 4/4 ..."), trailing model codes or audiences ("... Sneakers MT106",
    "... Running Shoes Men"). So the span ends there: at the last word before " for ", with
    codes (words with digits) and audience words trimmed off the end.

    Args:
        words: ``title_words(title)``.
        title: the product title.
        rng: the generator's random source (draws the length).
    """
    head = re.split(r"\s+for\s+", title, maxsplit=1, flags=re.IGNORECASE)[0]
    end = len(title_words(head)) if len(title_words(head)) >= 2 else len(words)
    while end > 1 and (words[end - 1] in AUDIENCE_WORDS or any(c.isdigit() for c in words[end - 1])):
        end -= 1
    length = min(end, rng.randint(2, 4))
    return end - length, end


def join_list(parts: Sequence[str], rng: random.Random) -> str:
    """Join clauses as English does ("a", "a and b", "a, b and c"), the serial comma by chance."""
    if len(parts) <= 1:
        return "".join(parts)
    last = ", and " if len(parts) > 2 and rng.random() < 0.5 else " and "
    return ", ".join(parts[:-1]) + last + parts[-1]


def with_article(phrase: str, rng: random.Random) -> str:
    """Prefix a noun phrase with nothing, "a"/"an" (not before a likely plural), or "some", by chance."""
    pick = rng.randrange(3)
    if pick == 1 and not phrase.endswith("s") and not phrase.startswith("u"):  # "a unisex", "an umbrella"
        return ("an " if phrase[:1] in "aeio" else "a ") + phrase
    if pick == 2:
        return "some " + phrase
    return phrase


def _price_text(price: PriceConstraint, bank: dict[str, tuple[str, ...]], rng: random.Random) -> str:
    low = P.number_text(price.low) if price.low is not None else ""
    high = P.number_text(price.high) if price.high is not None else ""
    return rng.choice(bank[price.mode]).format(low=low, high=high, cur=rng.choice(P.CURRENCY))


def constraint_clauses(item: GoldItem, rng: random.Random, *, statements: bool) -> list[str]:
    """Render every constraint of a gold item (beyond its title) as a clause, in a shuffled order."""
    clauses: list[str] = []
    for variant in item.sku_options:
        pairs = list(variant.items())
        if statements:
            bank = P.SKU_STATEMENTS
            parts = [rng.choice(bank).format(key=P.key_text(k), value=v) for k, v in pairs]
        else:
            parts = [
                rng.choice(P.SKU_COLOUR_MODIFIERS if P.is_colour_key(k) else P.SKU_MODIFIERS).format(
                    key=P.key_text(k), value=v
                )
                for k, v in pairs
            ]
        clauses.append(join_list(parts, rng))
    for attribute in item.attributes:
        for key, values in attribute.items():
            bank = P.ATTRIBUTE_STATEMENTS if statements else P.ATTRIBUTE_MODIFIERS
            clauses.append(rng.choice(bank).format(key=P.key_text(key), value=" and ".join(values)))
    for service in item.service:
        clauses.append(rng.choice((P.SERVICE_STATEMENTS if statements else P.SERVICE_MODIFIERS)[service]))
    for price in item.price:
        clauses.append(_price_text(price, P.PRICE_STATEMENTS if statements else P.PRICE_MODIFIERS, rng))
    rng.shuffle(clauses)
    return clauses


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def product_query(item: GoldItem, phrase: str, rng: random.Random, *, closing: bool = True) -> str:
    """Write a one-item request: opener, the item's name, then its constraints in one of three styles."""
    head = rng.choice(P.PRODUCT_OPENERS).format(item=with_article(phrase, rng))
    style = rng.randrange(3)
    if style == 0:
        clauses = constraint_clauses(item, rng, statements=False)
        text = f"{head} {join_list(clauses, rng)}".rstrip() + "."
    elif style == 1:
        clauses = constraint_clauses(item, rng, statements=True)
        text = f"{head}."
        if clauses:
            text += " " + _capitalise(rng.choice(P.STATEMENT_LEADS) + join_list(clauses, rng)) + "."
    else:
        singles = _single_constraints(item)
        rng.shuffle(singles)
        cut = rng.randint(0, len(singles))
        mods = [c for s in singles[:cut] for c in constraint_clauses(s, rng, statements=False)]
        stmts = [c for s in singles[cut:] for c in constraint_clauses(s, rng, statements=True)]
        text = f"{head} {join_list(mods, rng)}".rstrip() + "."
        if stmts:
            text += " " + _capitalise(join_list(stmts, rng)) + "."
    return text + (rng.choice(P.PRODUCT_CLOSINGS) if closing else "")


def _single_constraints(item: GoldItem) -> list[GoldItem]:
    """Split a gold item into one item per constraint (same product and title), to render them apart."""
    base = {"product_id": item.product_id, "titles": item.titles}
    singles = [GoldItem(**base, sku_options=(v,)) for v in item.sku_options]
    singles += [GoldItem(**base, attributes=(a,)) for a in item.attributes]
    singles += [GoldItem(**base, service=(s,)) for s in item.service]
    singles += [GoldItem(**base, price=(p,)) for p in item.price]
    return singles


def item_phrase(item: GoldItem, phrase: str, rng: random.Random) -> str:
    """Describe one item of a multi-item request: its name and its constraints as modifiers."""
    clauses = constraint_clauses(item, rng, statements=False)
    return f"{with_article(phrase, rng)} {join_list(clauses, rng)}".rstrip()


def items_block(items: Sequence[GoldItem], phrases: Sequence[str], rng: random.Random) -> str:
    """List several items in one of three styles: numbered, ordinal sentences, or dashes."""
    described = [item_phrase(item, phrase, rng) for item, phrase in zip(items, phrases, strict=True)]
    style = rng.randrange(3)
    if style == 0:
        return "; ".join(f"({i}) {text}" for i, text in enumerate(described, start=1)) + "."
    if style == 1:
        return " ".join(f"{P.ORDINALS[i]}, {text}." for i, text in enumerate(described))
    return "\n" + "\n".join(f"- {text}" for text in described)


def shop_query(items: Sequence[GoldItem], phrases: Sequence[str], rng: random.Random) -> str:
    """Write a shop request: several items that one shop must sell."""
    body = f"{rng.choice(P.SHOP_OPENERS)} {items_block(items, phrases, rng)}"
    closing = rng.choice(P.SHOP_CLOSINGS)
    separator = "\n" if body.count("\n- ") else " "
    return f"{body}{separator}{closing}".rstrip()


def voucher_block(voucher: Voucher, budget: float, rng: random.Random) -> str:
    """State the budget and the voucher's rules (scope, threshold, discount), numbered or as sentences."""
    rules = [
        rng.choice(P.VOUCHER_SCOPE[voucher.voucher_type]),
        rng.choice(P.VOUCHER_THRESHOLD).format(threshold=P.number_text(voucher.threshold)),
    ]
    if voucher.discount_type == "fixed":
        rules.append(rng.choice(P.VOUCHER_FIXED).format(face_value=P.number_text(voucher.face_value or 0)))
    else:
        percent = P.number_text(round((voucher.discount or 0) * 100, 2))
        rules.append(
            rng.choice(P.VOUCHER_PERCENTAGE).format(percent=percent, cap=P.number_text(voucher.cap or 0))
        )
    lead = rng.choice(P.BUDGET_LEADS).format(budget=P.number_text(budget))
    if rng.random() < 0.5:
        return lead + "\n" + "\n".join(f"{i}. {rule}" for i, rule in enumerate(rules, start=1))
    return lead + " " + " ".join(rules)


def voucher_query(
    items: Sequence[GoldItem], phrases: Sequence[str], voucher: Voucher, budget: float, rng: random.Random
) -> str:
    """Write a voucher request: the items (one or several), then the budget and voucher rules."""
    if len(items) == 1:
        head = product_query(items[0], phrases[0], rng, closing=False)
    else:
        head = f"{rng.choice(P.MULTI_OPENERS)} {items_block(items, phrases, rng)}"
    return f"{head}\n\n{voucher_block(voucher, budget, rng)}"
