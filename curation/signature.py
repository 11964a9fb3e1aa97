"""Strategy signatures: the ``dedup`` stage's keys of a trace (its calls and its answer).

Two traces follow the same strategy when they make the same calls and give the same answer:

- the **exact signature** hashes the list of ``(tool, canonical arguments)`` per call, in order
  (``arena.tools.canonical_arguments``: trimmed, defaults resolved, so ``{"q": " tent"}`` and
  ``{"q": "tent", "page": 1}`` agree), plus the answer ids;
- the **steps** are a coarser set for near duplicates: a search is its query's sorted, case-folded
  words plus its filters (the page left out), a view is its sorted ids, any other call is its
  canonical arguments. Two traces with the same answer whose step sets have a Jaccard similarity
  of at least the threshold (0.8 by default) are near duplicates.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.arguments import split_product_ids
from arena.tools import canonical_arguments, tool_kind
from arena.types import canonical_json
from curation.chat import ChatRecord, answer_ids

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Strategy:
    """A trace's dedup keys: the exact signature, the coarse steps and the answer."""

    exact: str
    steps: frozenset[str]
    answer: tuple[str, ...]


def _calls(record: ChatRecord) -> list[tuple[str, dict[str, Any]]]:
    return [
        (call["function"]["name"], call["function"]["arguments"])
        for item in record.messages
        for call in item["tool_calls"] or ()
    ]


def strategy(record: ChatRecord) -> Strategy:
    """Compute a trace's exact signature and near-duplicate steps."""
    return strategy_of(_calls(record), answer_ids(record))


def strategy_of(made: Sequence[tuple[str, dict[str, Any]]], answer: tuple[str, ...]) -> Strategy:
    """The keys of a trace that makes these calls (tool, arguments as sent) and gives this answer."""
    calls = [(name, canonical_arguments(name, arguments)) for name, arguments in made]
    digest = hashlib.sha256(canonical_json({"calls": calls, "answer": answer}).encode("utf-8")).hexdigest()
    return Strategy(
        exact=digest[:32], steps=frozenset(_step(name, args) for name, args in calls), answer=answer
    )


def _step(name: str, arguments: dict[str, Any]) -> str:
    kind = tool_kind(name)
    if kind == "search" and isinstance(arguments.get("q"), str):
        words = " ".join(sorted(set(_WORD.findall(arguments["q"].casefold()))))
        filters = {k: v for k, v in arguments.items() if k not in ("q", "page")}
        return f"find:{words}|{canonical_json(filters)}"
    if kind == "view":
        ids, _ = split_product_ids(arguments.get("product_ids"))
        return "view:" + ",".join(sorted(ids))
    return f"{name}:{canonical_json(arguments)}"


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two step sets (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
