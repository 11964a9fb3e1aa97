"""What a task's query says, for the conversion's fact table: its items, their constraints, its numbers.

:class:`TaskFacts` holds the items the query asks for (the query's own words for each gold item,
and each constraint of the ground truth that the query mentions, in the terms the user used:
price bounds, services, sku option and attribute values), the budget and the voucher. A
shopper's answer (``ask_user``, tool set arena-3) is more of the user's words: :func:`heard`
reads it the same way and adds the constraints it states (marked ``shopper``). The
digit-bearing tokens and numbers helpers here are shared with :mod:`curation.conversion.facts`.
The gold product ids and titles are never facts: only the words the user wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from arena.phrasing import SERVICE_SYNONYMS, number_text
from arena.templates import title_words
from arena.types import GoldItem, Task, Voucher
from arena.wording import normalise_text, stem

# A token that may carry a fact: it has a digit (ids, prices, sizes, codes), word characters, inner
# hyphens and one decimal part ("406.07", "91-243", "GF191", "decoy-1"). One regex pass finds only these.
DIGIT_TOKEN = re.compile(r"(?<![0-9A-Za-z_])[A-Za-z_]*[0-9][0-9A-Za-z_]*(?:-[0-9A-Za-z_]+)*(?:\.[0-9]+)?")
# A number written with thousands separators ("1,446"): one number, not two.
_GROUPED = re.compile(r"(?<![0-9.,])[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?(?![0-9])")
_DIGITS = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # what a grouped number's token can look like
ConstraintKind = Literal["price", "service", "sku", "attribute"]


def number_key(value: float) -> float:
    """The form numbers are compared in (two decimals: what a shop shows)."""
    return round(float(value), 2)


def as_number(token: str) -> float | None:
    """The number a token spells, or None ("198", "406.07"; not "91-243" or "5xl")."""
    try:
        return float(token)
    except ValueError:
        return None


def grouped_form(token: str) -> str | None:
    """How a grouped number with this token is written ("1446" -> "1,446"), or None when none has it."""
    if not _DIGITS.fullmatch(token):
        return None
    whole, dot, decimals = token.partition(".")
    if len(whole) <= 3:
        return None
    head = len(whole) % 3 or 3
    groups = [whole[:head], *(whole[i : i + 3] for i in range(head, len(whole), 3))]
    return ",".join(groups) + dot + decimals


def digit_tokens(text: str) -> Iterable[str]:
    """The case-folded tokens of ``text`` that contain a digit, plus grouped numbers without their commas."""
    for token in DIGIT_TOKEN.findall(text):
        yield token.casefold()
    for match in _GROUPED.finditer(text):
        yield match.group(0).replace(",", "")


@dataclass(frozen=True)
class Constraint:
    """One constraint of a gold item that the query mentions, named as the user named it.

    Attributes:
        kind: ``price``, ``service``, ``sku`` or ``attribute``.
        key: the attribute or sku key (``wheel_material``), the service (``COD``) or ``price``.
        label: the words a rationale names it with (``wheel material``, ``cash on delivery``).
        values: the wanted values (``polyurethane``); empty for price and services.
        low: a price constraint's lower bound (inclusive), if any.
        high: its upper bound (inclusive), if any.
        shopper: stated in a shopper's answer (``ask_user``), not in the query.
    """

    kind: ConstraintKind
    key: str
    label: str
    values: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    shopper: bool = False

    def price_text(self) -> str:
        """A price constraint as a shopper says it: "between 91 and 243", "under 500", "above 5000".

        Each form carries a word that ``judging.claims`` reads as talk about a range, not about a
        product, so a bound written after a product id is never taken for that product's price.
        """
        if self.low is not None and self.high is not None:
            return f"between {number_text(self.low)} and {number_text(self.high)}"
        if self.high is not None:
            return f"under {number_text(self.high)}"
        return f"above {number_text(self.low or 0.0)}"

    def admits(self, price: float) -> bool:
        """Whether ``price`` is within the bounds (a price constraint only)."""
        return (self.low is None or price >= self.low) and (self.high is None or price <= self.high)


@dataclass(frozen=True)
class Item:
    """One product the user asks for: the query's words for it and the constraints the query states."""

    position: int
    words: tuple[str, ...]
    constraints: tuple[Constraint, ...]

    @property
    def name(self) -> str:
        """The item in the user's words ("roller stem"), or "item N" when none of them survives."""
        return " ".join(self.words) or f"item {self.position + 1}"

    def of_kind(self, *kinds: ConstraintKind) -> tuple[Constraint, ...]:
        """The item's constraints of these kinds."""
        return tuple(c for c in self.constraints if c.kind in kinds)


@dataclass(frozen=True)
class TaskFacts:
    """What the user's query states: the items, the shop condition, the budget, the voucher, its numbers.

    ``gold`` is kept only to read a shopper's answer the way the query was read (:func:`heard`);
    nothing of it is a fact until the user's own words state it.
    """

    query: str
    intent: str
    items: tuple[Item, ...]
    budget: float | None = None
    voucher: Voucher | None = None
    numbers: frozenset[float] = frozenset()
    gold: tuple[GoldItem, ...] = field(default=(), repr=False)


class _Query:
    """A query prepared once for mention look-ups (normalised text, its tokens and their stems)."""

    def __init__(self, query: str) -> None:
        self.text = f" {normalise_text(query)} "
        self.words = self.text.split()
        self.stems = {stem(w) for w in self.words}

    def says(self, value: str) -> bool:
        wanted = [stem(t) for t in normalise_text(value.rsplit(":", 1)[-1]).split()]
        return bool(wanted) and all(t in self.stems for t in wanted)

    def phrase(self, phrases: Iterable[str]) -> str | None:
        return next((p for p in phrases if f" {normalise_text(p)} " in self.text), None)

    def has_number(self, value: float | None) -> bool:
        return value is not None and number_text(value) in self.words


def _label(key: str) -> str:
    return " ".join(key.replace("_", " ").split())


def _constraints(item: GoldItem, query: _Query) -> list[Constraint]:
    found: list[Constraint] = []
    for price in item.price:
        bounds = [b for b in (price.low, price.high) if b is not None]
        if bounds and all(query.has_number(b) for b in bounds):
            found.append(Constraint("price", "price", "price", low=price.low, high=price.high))
    for service in item.service:
        said = query.phrase(SERVICE_SYNONYMS[service])
        if said:
            found.append(Constraint("service", service, said))
    for variant in item.sku_options:
        for key, value in variant.items():
            if query.says(value):
                found.append(Constraint("sku", key, _label(key), (value,)))
    for attribute in item.attributes:
        for key, values in attribute.items():
            wanted = tuple(v for v in values if query.says(v))
            if wanted:
                found.append(Constraint("attribute", key, _label(key), wanted))
    return found


def task_facts(task: Task) -> TaskFacts:
    """Read what the query states about each gold item (only what the user actually wrote)."""
    query = _Query(task.query)
    surface = [w.strip(".'&+-") for w in re.findall(r"[A-Za-z][A-Za-z0-9'&+-]*", task.query)]
    lowered = [w.lower() for w in surface if len(w) >= 2]
    stemmed = [(w, stem(w)) for w in lowered]  # once for the query, not once per gold item
    items = []
    for position, gold in enumerate(task.gold):
        wanted = {stem(w) for w in title_words(gold.titles[0])}
        words = tuple(dict.fromkeys(w for w, s in stemmed if s in wanted))
        items.append(Item(position, words, tuple(_constraints(gold, query))))
    budget = task.budget if query.has_number(task.budget) else None
    voucher = task.voucher if task.voucher is not None and query.has_number(task.voucher.threshold) else None
    numbers = {as_number(token) for token in digit_tokens(task.query)}
    known = frozenset(number_key(n) for n in numbers if n is not None)
    return TaskFacts(task.query, task.intent, tuple(items), budget, voucher, known, tuple(task.gold))


class TaskFactsMemo:
    """:func:`task_facts` by task for one converter's traces (many miners answer each task).

    Holds at most ``size`` tasks (the oldest read goes first), so a long-lived converter (the
    validator's export) stays bounded. A task's id is its content address, and the facts are
    immutable, so every trace of a task may share them.
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._facts: dict[str, tuple[Task, TaskFacts]] = {}

    def __call__(self, task: Task) -> TaskFacts:
        """The facts of ``task``, read once per task."""
        kept = self._facts.get(task.task_id)
        if kept is not None and (kept[0] is task or kept[0] == task):
            return kept[1]
        facts = task_facts(task)
        if len(self._facts) >= self._size:
            self._facts.pop(next(iter(self._facts)))
        self._facts[task.task_id] = (task, facts)
        return facts


def heard(facts: TaskFacts, answer: str) -> tuple[TaskFacts, tuple[tuple[int, Constraint], ...]]:
    """The request once a shopper's answer is heard: the constraints the answer states join their items.

    The answer is read as the query is (a constraint of an item's ground truth counts once the
    words state it); one the item already has is not added again. Returns the facts and the
    (item position, constraint) pairs the answer added (none: "no preference").
    """
    said = _Query(answer)
    items: list[Item] = []
    added: list[tuple[int, Constraint]] = []
    for item, gold in zip(facts.items, facts.gold, strict=False):
        known = {(c.kind, c.key) for c in item.constraints}
        new = [replace(c, shopper=True) for c in _constraints(gold, said) if (c.kind, c.key) not in known]
        added += [(item.position, c) for c in new]
        items.append(replace(item, constraints=(*item.constraints, *new)) if new else item)
    items += facts.items[len(items) :]
    return replace(facts, items=tuple(items)), tuple(added)
