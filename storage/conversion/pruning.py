"""Harness noise compiled out of a logged trace: the calls whose results never inform a later step.

Over the validator's log, in ``seq`` order (``recommend_product`` and ``terminate`` always stay):

- ``repeat``: the same tool with the same canonical arguments as an earlier successful call (a
  loop; the tools are deterministic, so the earlier call already showed the same bytes);
- ``error``: an error result (bad arguments, unknown ids): it shows nothing;
- ``unused_search``: a search none of whose hits a later kept step names (views, compares,
  prices or recommends) and none of whose shops a later kept call searches in; repeated page
  sweeps fall here. An empty search followed by another kept search stays: it is why the next
  one relaxes a filter;
- ``unused_view``: a view (or a voucher calculation) of ids none of which a later kept step
  names: a batch view of products never considered.

The decision runs backwards, so "a later kept step" means one that survives pruning itself.
Tools are stateless (a result depends on the call and the index alone), so dropping a call
changes no other call's result; :func:`replays_identically` proves it for a pruned trace by
running its calls against the index again, and the conversion keeps the unpruned trace when
the bytes differ.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from arena.episode import run_logged
from arena.tools import ToolContext
from arena.types import ToolLogEntry, canonical_json
from judging.facts import result_facts
from storage.conversion.facts import SEARCH_TOOLS, call_ids

PruneReason = Literal["repeat", "error", "unused_search", "unused_view"]
ALWAYS_KEPT = frozenset({"recommend_product", "terminate"})
VIEWS = frozenset({"view_product_information", "calculate_voucher"})


@dataclass(frozen=True)
class Pruned:
    """The calls a converted trace keeps (the log's own entries, in order) and those it drops, with why."""

    kept: tuple[ToolLogEntry, ...]
    dropped: tuple[tuple[int, PruneReason], ...] = ()


def _shops(result: str) -> set[str]:
    try:
        rows = json.loads(result)
    except (ValueError, RecursionError):
        return set()
    if not isinstance(rows, list):
        return set()
    return {
        str(r["shop_id"]) for r in rows if isinstance(r, dict) and isinstance(r.get("shop_id"), str | int)
    }


def _forward(log: Sequence[ToolLogEntry]) -> dict[int, PruneReason]:
    """Repeats and errors: decided from what came before."""
    dropped: dict[int, PruneReason] = {}
    done: set[tuple[str, str]] = set()
    for entry in log:
        if entry.tool in ALWAYS_KEPT:
            continue
        key = (entry.tool, canonical_json(entry.arguments))
        if entry.status != "ok":
            dropped[entry.seq] = "error"
        elif key in done:
            dropped[entry.seq] = "repeat"
        else:
            done.add(key)
    return dropped


def prune(log: Sequence[ToolLogEntry]) -> Pruned:
    """Decide which logged calls a converted trace keeps (see the module docstring)."""
    entries = sorted(log, key=lambda e: e.seq)
    dropped = _forward(entries)
    needed_ids: set[str] = set()
    needed_shops: set[str] = set()
    later_search = False
    kept: list[ToolLogEntry] = []
    for entry in reversed(entries):
        if entry.seq in dropped:
            continue
        keep = True
        if entry.tool in SEARCH_TOOLS:
            hits = result_facts(entry.result).ranked_ids
            used = bool(needed_ids.intersection(hits)) or bool(
                needed_shops and needed_shops & _shops(entry.result)
            )
            keep = used or (not hits and later_search)
            if not keep:
                dropped[entry.seq] = "unused_search"
        elif entry.tool in VIEWS and not needed_ids.intersection(call_ids(entry.arguments)):
            keep = False
            dropped[entry.seq] = "unused_view"
        if not keep:
            continue
        kept.append(entry)
        needed_ids.update(call_ids(entry.arguments))
        shop = entry.arguments.get("shop_id")
        if isinstance(shop, str) and shop:
            needed_shops.add(shop)
        later_search = later_search or entry.tool in SEARCH_TOOLS
    return Pruned(kept=tuple(reversed(kept)), dropped=tuple(sorted(dropped.items())))


def replays_identically(entries: Sequence[ToolLogEntry], ctx: ToolContext) -> bool:
    """Run each call against the index again; True when every result is byte-identical to the logged one."""
    for entry in entries:
        again = run_logged(
            entry.tool,
            entry.arguments,
            ctx,
            episode_id=entry.episode_id,
            seq=entry.seq,
            call_id=entry.call_id,
        )
        if again.result != entry.result or again.status != entry.status:
            return False
    return True
