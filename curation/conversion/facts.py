"""The fact table of one conversion: what the user's query says, and what each logged result showed, in order.

A rationale may cite only what the agent could see at that point: the user's query and the
results of the calls before it (and the arguments it is about to send). The table is built
step by step from the validator's tool log, so "before the call" is exact:

- :class:`TaskFacts` (:mod:`curation.conversion.task_facts`): the items the query asks for, their
  constraints in the user's terms, the budget and the voucher;
- :class:`ProductFacts`: per product id, what results showed of it (title, price, shop,
  services, sold count; attributes and sku options once viewed), and the search that found it;
  a result is read by its tool's kind (``arena.tools.tool_kind``): a search's rows, a view's
  details, a computation's ``products``, an ask's answer;
- :class:`Heard`: per ``ask_user`` call (tool set arena-3), the question, the shopper's answer as
  logged, and the constraints it stated, which join the request from then on ("no preference"
  states none, and is a fact too: the request is all there is);
- :class:`FactTable`: all of these, plus every digit-bearing token, number and text the agent has
  seen, which the verifier (:mod:`curation.conversion.verify`) looks each citation up in.

The gold product ids and titles are never facts: only the words the user wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arena.arguments import split_product_ids
from arena.tools import tool_kind
from arena.types import ToolLogEntry
from curation.conversion.task_facts import (
    DIGIT_TOKEN,
    Constraint,
    ConstraintKind,
    Item,
    TaskFacts,
    as_number,
    digit_tokens,
    grouped_form,
    heard,
    number_key,
    task_facts,
)

# The task side lives in curation.conversion.task_facts; the other modules import it from here.
__all__ = [
    "DIGIT_TOKEN",
    "ConstraintKind",
    "Constraint",
    "Item",
    "TaskFacts",
    "as_number",
    "digit_tokens",
    "number_key",
    "task_facts",
]


@dataclass
class ProductFacts:
    """What the logged results showed of one product so far (None: not shown yet)."""

    product_id: str
    title: str | None = None
    price: float | None = None
    shop_id: str | None = None
    services: tuple[str, ...] | None = None
    sold_count: int | None = None
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sku: dict[str, set[str]] = field(default_factory=dict)
    viewed: bool = False
    found_by: int | None = None  # the seq of the first search that showed it
    rank: int | None = None  # its position in that search's results (0-based)

    def values(self, key: str) -> set[str]:
        """The values the product showed for an attribute or sku key (lower-cased)."""
        return {v.lower() for v in self.attributes.get(key, ())} | {v.lower() for v in self.sku.get(key, ())}


@dataclass(frozen=True)
class Search:
    """A logged search as a later step reads it: its arguments, the ids it showed, and for which item."""

    seq: int
    arguments: Mapping[str, Any]
    ids: tuple[str, ...]
    item: int | None


@dataclass(frozen=True)
class Heard:
    """A shopper's answer as a later step reads it: the question, the answer, what it added to the request.

    ``revealed`` holds (item position, constraint) pairs; empty for "no preference".
    """

    seq: int
    question: str
    answer: str
    revealed: tuple[tuple[int, Constraint], ...]


def answer_text(result: str) -> str | None:
    """The shopper's words in a logged ``ask_user`` result (``{"answer": ...}``), or None."""
    value = _read(result)
    answer = value.get("answer") if isinstance(value, dict) else None
    return answer if isinstance(answer, str) and answer.strip() else None


def _read(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


class FactTable:
    """Everything the agent has seen, grown one logged call at a time (see the module docstring).

    The texts seen (the query, each call's arguments, each result) are kept as they are, and a
    citation is looked up where it occurs instead of tokenising every text: a token of a text
    occurs in it (case-folded), and where it occurs at a place a token can start (no ``-`` or
    ``.`` before it, in an ASCII text, so case-folding moves no boundary) the token there is the
    one :func:`digit_tokens` finds. Anything that check cannot settle reads the whole text's
    tokens (once per text), so :meth:`seen_token` and :meth:`seen_number` answer what a full
    tokenisation of everything seen would.
    """

    def __init__(self, task: TaskFacts) -> None:
        self.task = task
        self.products: dict[str, ProductFacts] = {}
        self.searches: list[Search] = []
        self.answers: list[Heard] = []
        self._texts: list[str] = []
        self._folded: list[str] = []  # the texts case-folded and spaced as ``shows`` compares them
        self._tokens: list[frozenset[str] | None] = []  # each text's digit tokens, once read whole
        self._numbers: list[frozenset[float] | None] = []  # the numbers those tokens spell
        # Citations found so far: texts are only ever added, so a citation seen stays seen (a
        # rationale cites the same ids and prices again and again).
        self._found: set[tuple[float | None, str]] = set()
        self._seen(task.query)

    def _seen(self, text: str) -> None:
        self._texts.append(text)
        self._tokens.append(None)
        self._numbers.append(None)

    def _fold(self, upto: int) -> None:
        """Fold the texts up to index ``upto`` (in order: most look-ups stop at the query or a search)."""
        for text in self._texts[len(self._folded) : upto + 1]:
            self._folded.append(" ".join(text.casefold().split()))

    def _read(self, i: int) -> tuple[frozenset[str], frozenset[float]]:
        """Text ``i``'s digit tokens and their numbers (tokenised whole, once)."""
        tokens, numbers = self._tokens[i], self._numbers[i]
        if tokens is None or numbers is None:
            tokens = self._tokens[i] = frozenset(digit_tokens(self._texts[i]))
            spelt = (as_number(token) for token in tokens)
            numbers = self._numbers[i] = frozenset(number_key(n) for n in spelt if n is not None)
        return tokens, numbers

    def _containing(self, needle: str) -> list[int]:
        """The texts whose folded form contains ``needle`` (every text that could hold it as a token)."""
        self._fold(len(self._texts) - 1)  # every text is looked in: fold them all at once
        return [i for i, folded in enumerate(self._folded) if needle in folded]

    def _at_token(self, needle: str, accept: Callable[[str], bool]) -> bool:
        """Whether a token starting where ``needle`` occurs in some text is accepted (texts in order).

        Stops at the first text that holds one: what a look over :meth:`_containing` would say.
        """
        self._fold(len(self._texts) - 1)
        for i, folded in enumerate(self._folded):
            if needle in folded and any(accept(found) for found in self._tokens_at(i, needle)):
                return True
        return False

    def _tokens_at(self, i: int, needle: str) -> Iterator[str]:
        """The tokens of text ``i`` that start where ``needle`` occurs (see the class docstring)."""
        if not self._texts[i].isascii():
            return
        folded = self._folded[i]
        at = folded.find(needle)
        while at >= 0:
            if at == 0 or folded[at - 1] not in "-.":
                match = DIGIT_TOKEN.match(folded, at)
                if match:
                    yield match.group(0)
            at = folded.find(needle, at + 1)

    def seen_token(self, token: str) -> bool:
        """Whether ``token`` (case-folded, from :func:`digit_tokens`) is a digit token of anything seen.

        A grouped number's token ("1446" for "1,446") is not in its text as written, so it is
        looked for in the texts that hold its grouped form too.
        """
        if (None, token) in self._found:
            return True
        if self._look_for_token(token):
            self._found.add((None, token))
            return True
        return False

    def _look_for_token(self, token: str) -> bool:
        if self._at_token(token, token.__eq__):
            return True
        if any(token in self._read(i)[0] for i in self._containing(token)):
            return True
        grouped = grouped_form(token)
        return grouped is not None and any(token in self._read(i)[0] for i in self._containing(grouped))

    def seen_number(self, key: float, token: str) -> bool:
        """Whether any number seen has ``key`` (:func:`number_key`); ``token``: how the rationale writes it.

        Where ``token`` occurs is looked at first ("329" finds "329.0"); then the texts that
        contain it, then the others, are read whole (another spelling: "1e2" for 100).
        """
        if (key, token) in self._found:
            return True
        if self._look_for_number(key, token):
            self._found.add((key, token))
            return True
        return False

    def _look_for_number(self, key: float, token: str) -> bool:
        def spells(found: str) -> bool:
            number = as_number(found)
            return number is not None and number_key(number) == key

        if self._at_token(token, spells):
            return True
        containing = self._containing(token)
        first = set(containing)
        order = [*containing, *(i for i in range(len(self._texts)) if i not in first)]
        return any(key in self._read(i)[1] for i in order)

    def shows(self, quoted: str) -> bool:
        """Whether ``quoted`` appears verbatim (case and spacing aside) in the query or anything seen."""
        wanted = " ".join(quoted.casefold().split())
        for i in range(len(self._texts)):
            self._fold(i)
            if wanted in self._folded[i]:
                return True
        return False

    def product(self, product_id: str) -> ProductFacts:
        """The facts of a product a result shows (created when it first shows it)."""
        found = self.products.get(product_id)
        if found is None:
            found = self.products[product_id] = ProductFacts(product_id)
        return found

    def add_call(self, entry: ToolLogEntry, arguments: str | None = None) -> None:
        """The agent wrote this call: its arguments are known from now on.

        ``arguments``: the call's arguments as the trajectory writes them (``json.dumps`` of the
        logged ones, :func:`call_text`), where the caller has them already.
        """
        self._seen(call_text(entry) if arguments is None else arguments)

    def add_result(self, entry: ToolLogEntry, item: int | None = None) -> None:
        """The agent read this call's result: record what it showed."""
        self._seen(entry.result)
        if entry.status != "ok":
            return
        value, kind = _read(entry.result), tool_kind(entry.tool)
        if kind == "search":
            rows = value if isinstance(value, list) else []
            ids = self._hits(rows, entry.seq)
            self.searches.append(Search(entry.seq, entry.arguments, ids, item))
        elif kind == "view" and isinstance(value, list):
            self._details(value)
        elif kind == "compute" and isinstance(value, dict):
            self._hits(value.get("products") or [], None)
        elif kind == "ask":
            self._heard(entry)

    def _heard(self, entry: ToolLogEntry) -> None:
        """A shopper's answer: what it states joins the request (:func:`heard`)."""
        answer, question = answer_text(entry.result), entry.arguments.get("question")
        if answer is None or not isinstance(question, str):
            return
        self.task, revealed = heard(self.task, answer)
        self.answers.append(Heard(entry.seq, question, answer, revealed))

    def _hits(self, rows: list[Any], seq: int | None) -> tuple[str, ...]:
        ids: list[str] = []
        for rank, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("product_id"), str | int):
                continue
            facts = self.product(str(row["product_id"]))
            ids.append(facts.product_id)
            if isinstance(row.get("title"), str):
                facts.title = row["title"]
            if isinstance(row.get("price"), int | float) and not isinstance(row.get("price"), bool):
                facts.price = float(row["price"])
            if isinstance(row.get("shop_id"), str | int):
                facts.shop_id = str(row["shop_id"])
            if isinstance(row.get("service"), list):
                facts.services = tuple(str(s) for s in row["service"])
            if isinstance(row.get("sold_count"), int):
                facts.sold_count = row["sold_count"]
            if seq is not None and facts.found_by is None:
                facts.found_by, facts.rank = seq, rank
        return tuple(ids)

    def _details(self, rows: list[Any]) -> None:
        for row in rows:
            if (
                not isinstance(row, dict)
                or "error" in row
                or not isinstance(row.get("product_id"), str | int)
            ):
                continue
            facts = self.product(str(row["product_id"]))
            facts.viewed = True
            attributes = row.get("attributes")
            if isinstance(attributes, dict):
                facts.attributes = {
                    str(k): tuple(str(v) for v in (vs if isinstance(vs, list) else [vs]))
                    for k, vs in attributes.items()
                }
            sku = row.get("sku_options")
            if isinstance(sku, dict):
                for variant in sku.values():
                    if isinstance(variant, dict):
                        for key, option in variant.items():
                            facts.sku.setdefault(str(key), set()).add(str(option))

    def item_of(self, product_id: str) -> int | None:
        """The item the search that first showed ``product_id`` was for."""
        seq = self.products[product_id].found_by if product_id in self.products else None
        return next((s.item for s in self.searches if s.seq == seq), None)


def call_ids(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """The product ids a call's (canonical) arguments name."""
    ids, _ = split_product_ids(arguments.get("product_ids", ""))
    return ids


def call_text(entry: ToolLogEntry) -> str:
    """A logged call's arguments as the converted trajectory writes them (and the agent saw them)."""
    return json.dumps(entry.arguments, ensure_ascii=False)
