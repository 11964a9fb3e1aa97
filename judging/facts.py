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
from types import MappingProxyType
from typing import Any

from arena.types import ToolLogEntry


@dataclass(frozen=True)
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
    prices: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    ranked_ids: tuple[str, ...] = ()


NOTHING = ResultFacts()


def _product_id(node: Mapping[str, Any]) -> str | None:
    pid = node.get("product_id")
    return str(pid) if isinstance(pid, str | int) and not isinstance(pid, bool) else None


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
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            pid = _product_id(node)
            if pid is not None:
                ids.add(pid)
                price = node.get("price")
                if isinstance(price, int | float) and not isinstance(price, bool):
                    prices[pid] = float(price)
            if isinstance(node.get("title"), str):
                titles.add(node["title"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    ranked: tuple[str, ...] = ()
    if isinstance(value, list):
        ranked = tuple(pid for item in value if isinstance(item, dict) and (pid := _product_id(item)))
    return ResultFacts(frozenset(ids), frozenset(titles), MappingProxyType(prices), ranked)


def union(facts: Iterable[ResultFacts]) -> ResultFacts:
    """Merge several results' facts (ranked ids are per result, so the union has none)."""
    ids: set[str] = set()
    titles: set[str] = set()
    prices: dict[str, float] = {}
    for item in facts:
        ids |= item.product_ids
        titles |= item.titles
        prices.update(item.prices)
    return ResultFacts(frozenset(ids), frozenset(titles), MappingProxyType(prices))


def logged_facts(log: Iterable[ToolLogEntry]) -> ResultFacts:
    """What the validator's tool log showed the agent: the facts of every successful logged result."""
    return union(result_facts(entry.result) for entry in log if entry.status == "ok")
