"""What a tool result shows the agent: product ids, titles and prices, read from its JSON once.

One walk over a result serves every reader: grounding (ids seen before the answer), the axis
step classifier (titles, ids cited, result order), curation's turn rewards (gold products
first shown by a call), and whoever must check a statement against what the log holds
(:func:`logged_facts`). Non-JSON text shows nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from arena.types import ToolLogEntry


@dataclass(frozen=True, slots=True)
class ResultFacts:
    """The products one tool result (or a whole log) shows.

    Attributes:
        product_ids: every ``product_id`` value anywhere in the JSON (strings or integers).
        titles: every ``title`` string anywhere in the JSON.
        prices: ``product_id`` -> ``price`` for each object that carries both (the last one wins).
        ranked_ids: for a result that is a JSON list (a search page), the ids of its items in
            order; empty otherwise.
    """

    product_ids: frozenset[str] = frozenset()
    titles: frozenset[str] = frozenset()
    prices: Mapping[str, float] = field(default_factory=dict)  # shared through the cache: read only
    ranked_ids: tuple[str, ...] = ()


NOTHING = ResultFacts()


@lru_cache(maxsize=4096)
def result_facts(content: str) -> ResultFacts:
    """Read the products a tool result shows (see :class:`ResultFacts`).

    Cached by content: the same results are read by several checks, and recur across the
    trajectories of a round.
    """
    try:
        value = json.loads(content)
    except (ValueError, TypeError, RecursionError):
        return NOTHING
    ids: set[str] = set()
    titles: set[str] = set()
    prices: dict[str, float] = {}
    # This walk runs for every result the judge and curation read, so it is written for speed:
    # exact type tests (a JSON decoder makes only dict, list, str, int, float, bool and None,
    # and ``type(True) is not int``), and only containers go on the stack.
    stack: list[Any] = [value]
    push, pop = stack.append, stack.pop
    while stack:
        node = pop()
        if type(node) is list:
            for item in node:
                if type(item) is dict or type(item) is list:
                    push(item)
            continue
        if type(node) is not dict:
            continue
        pid = node.get("product_id")
        if type(pid) is str or type(pid) is int:
            pid = str(pid)
            ids.add(pid)
            price = node.get("price")
            if type(price) is float or type(price) is int:
                prices[pid] = float(price)
        title = node.get("title")
        if type(title) is str:
            titles.add(title)
        for item in node.values():
            if type(item) is dict or type(item) is list:
                push(item)
    ranked: tuple[str, ...] = ()
    if type(value) is list:
        ranked = tuple(
            str(item["product_id"])
            for item in value
            if type(item) is dict
            and (type(item.get("product_id")) is str or type(item.get("product_id")) is int)
        )
    return ResultFacts(frozenset(ids), frozenset(titles), prices, ranked)


def union(facts: Iterable[ResultFacts]) -> ResultFacts:
    """Merge several results' facts (ranked ids are per result, so the union has none)."""
    ids: set[str] = set()
    titles: set[str] = set()
    prices: dict[str, float] = {}
    for item in facts:
        ids |= item.product_ids
        titles |= item.titles
        prices.update(item.prices)
    return ResultFacts(frozenset(ids), frozenset(titles), prices)


def logged_facts(log: Iterable[ToolLogEntry]) -> ResultFacts:
    """What the validator's tool log showed the agent: the facts of every successful logged result."""
    return union(result_facts(entry.result) for entry in log if entry.status == "ok")
