"""Verification by code: a rationale cites only what the agent has seen; a converted trace passes our judge.

Per rationale (whoever wrote it), against the fact table before its call
(:class:`curation.conversion.facts.FactTable`, which includes the call's own arguments):

- every token with a digit (product and shop ids, prices, sizes, codes, amounts) is a token or
  a number of the user's query, an earlier logged result or an earlier call, or the voucher
  arithmetic of the call's products (their total and the total after the voucher the user
  stated);
- every double-quoted string appears verbatim in the query or in something seen;
- every price or attribute statement about a product (read as the grounding check reads them,
  ``judging.claims``) is correct, and is about something a result already showed of that
  product (its price in a hit; its attributes in a view); and, stricter than the judge, every
  amount stated after a product id (``N pesos``, ``price N``) is that product's logged price,
  a number of the query (a bound, the budget) or the voucher arithmetic;
- it names the request: one of the user's words for an item, or a constraint's name or value.

Per converted trace, from its re-judged Judgment (:func:`judged_problem`): no hard reject,
grounding 1 (nothing fabricated, hidden or hallucinated; every claim correct), the same
outcome and success as the source, and where the source was judged with a shopper profile the
same questions coefficient (the shopper check's value scales the outcome's success share), and
at least ``min_driven`` of its steps driven by the step classifier of ``judging.axis``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from curation.conversion.facts import FactTable, as_number, call_ids, digit_tokens, number_key
from curation.conversion.step import Step
from judging.claims import BASKET_WORDS, PRICE_PATTERN, WINDOW, find_claims, price_matches
from judging.context import ProductLookup
from judging.types import Judgment

_DIGIT = re.compile(r"[0-9]")
_QUOTED = re.compile(r"\"([^\"]*)\"|“([^”]*)”")
ProblemKind = Literal["id", "number", "quote", "price", "attribute", "no_request"]
TraceProblem = Literal["format_failed", "grounding_failed", "outcome_changed", "not_driven"]
_ID_DIGITS = 5  # an integer this long is read as an id, not an amount (for the message only)


@dataclass(frozen=True)
class Unsupported:
    """One thing a rationale states that the fact table does not hold."""

    kind: ProblemKind
    value: str

    def __str__(self) -> str:
        return f"{self.kind} {self.value!r} is not in the query or any result seen so far"


def derived_numbers(step: Step) -> set[float]:
    """The voucher arithmetic of a call's products: their total, and the total after the stated voucher."""
    facts = step.facts
    products = [facts.products.get(pid) for pid in call_ids(step.arguments)]
    if not products or any(p is None or p.price is None for p in products):
        return set()
    known = [p for p in products if p is not None]
    total = round(sum(p.price or 0.0 for p in known), 2)
    derived = {number_key(total)}
    if facts.task.voucher is not None:
        shops = len({p.shop_id for p in known})
        derived.add(number_key(facts.task.voucher.price_after(total, shops)))
    return derived


def _grounded(token: str, facts: FactTable, derived: set[float]) -> bool:
    token = token.rstrip(".-")
    if not token:
        return True
    number = as_number(token)
    if number is not None:  # a number token seen is a number seen: the number alone decides
        key = number_key(number)
        return key in derived or facts.seen_number(key, token)  # the arithmetic first: it needs no reading
    if facts.seen_token(token):
        return True
    parts = [part for part in token.split("-") if part]
    return len(parts) > 1 and all(_grounded(part, facts, derived) for part in parts)


def _kind(token: str) -> ProblemKind:
    number = as_number(token)
    if number is None or (float(number).is_integer() and len(token) >= _ID_DIGITS):
        return "id"
    return "number"


def _names_request(text: str, facts: FactTable) -> bool:
    words = [w for item in facts.task.items for w in item.words]
    words += [c.label for item in facts.task.items for c in item.constraints]
    words += [v for item in facts.task.items for c in item.constraints for v in c.values]
    folded = text.casefold()
    return not words or any(w.casefold() in folded for w in words)


def _positions(text: str, ids: list[str]) -> list[tuple[int, int, str]]:
    """Where each id stands in ``text`` as a whole token: (start, end, id), in order."""
    found: list[tuple[int, int, str]] = []
    for pid in ids:
        start = text.find(pid)
        while start >= 0:
            end = start + len(pid)
            before = text[start - 1] if start else " "
            after = text[end] if end < len(text) else " "
            if not (before.isalnum() or after.isalnum()):
                found.append((start, end, pid))
            start = text.find(pid, end)
    return sorted(found)


def _amounts(text: str, mentioned: list[str], facts: FactTable, derived: set[float]) -> list[Unsupported]:
    """Amounts stated after a product id that are not its logged price: a misquoted price to the judge.

    In talk of ranges and baskets a number the user gave, or the voucher arithmetic, is allowed too.
    """
    spots = _positions(text, mentioned)
    problems: list[Unsupported] = []
    for i, (_, end, pid) in enumerate(spots):
        stop = spots[i + 1][0] if i + 1 < len(spots) else len(text)
        segment = text[end : min(stop, end + WINDOW)]
        if not _DIGIT.search(segment):  # no figure after this id: nothing to check
            continue
        own = facts.products[pid].price
        allowed = {number_key(own)} if own is not None else set()
        if BASKET_WORDS.search(segment):
            allowed |= facts.task.numbers | derived
        for stated in PRICE_PATTERN.finditer(segment):
            value = as_number((stated.group(1) or stated.group(2)).replace(",", ""))
            if value is not None and number_key(value) not in allowed:
                problems.append(Unsupported("price", f"{pid} costs {stated.group(0).strip()}"))
    return problems


def unsupported(text: str, step: Step, products: ProductLookup) -> list[Unsupported]:
    """Everything ``text`` states that the step's fact table does not hold (empty: the rationale is grounded).

    Args:
        text: the rationale.
        step: the step it was written for (its fact table is the state before the call's result).
        products: the catalog lookup the judge uses, for the price and attribute claims.
    """
    facts = step.facts
    derived = derived_numbers(step)
    grounded: dict[str, bool] = {}  # a rationale repeats its ids and figures: each looked up once
    problems = []
    for token in digit_tokens(text):
        found = grounded.get(token)
        if found is None:
            found = grounded[token] = _grounded(token, facts, derived)
        if not found:
            problems.append(Unsupported(_kind(token), token))
    for match in _QUOTED.finditer(text):
        quoted = match.group(1) if match.group(1) is not None else match.group(2)
        if quoted.strip() and not facts.shows(quoted):
            problems.append(Unsupported("quote", quoted))
    mentioned = [pid for pid in facts.products if pid in text]
    if mentioned:
        problems += _amounts(text, mentioned, facts, derived)
    if mentioned and (":" in text or "=" in text):  # an attribute statement needs "key: value"
        for claim in find_claims(text, dict(products(mentioned))):
            seen = facts.products[claim.product_id]
            # A price is held against the result that showed it (a world may have changed it
            # since; the judge's grounding reconciles it at that result's version too).
            stated = as_number(claim.stated) if claim.kind == "price" else None
            if claim.kind == "price" and (
                seen.price is None or stated is None or not price_matches(stated, seen.price)
            ):
                problems.append(Unsupported("price", f"{claim.product_id} costs {claim.stated}"))
            elif claim.kind == "attribute" and (not claim.correct or not seen.values(claim.key)):
                problems.append(Unsupported("attribute", f"{claim.product_id} {claim.key}={claim.stated}"))
    if step.kind != "end" and not _names_request(text, facts):
        problems.append(Unsupported("no_request", text[:60]))
    return problems


def judged_problem(source: Judgment, converted: Judgment, *, min_driven: float) -> TraceProblem | None:
    """Why a converted trace's re-judged Judgment fails verification, or None when it passes."""
    if converted.rejects:
        return "format_failed"
    grounding = converted.check("grounding")
    if grounding is None or grounding.value != 1.0:
        return "grounding_failed"
    if converted.success != source.success or converted.outcome != source.outcome:
        return "outcome_changed"
    shopper = source.check("shopper")
    if shopper is not None:  # the questions coefficient is part of the outcome's success share
        again = converted.check("shopper")
        if again is None or again.value != shopper.value:
            return "outcome_changed"
    axis = converted.check("axis")
    if axis is None or axis.value is None or axis.value < min_driven:
        return "not_driven"
    return None
