"""Harness noise compiled out of a logged trace: the calls whose results never inform a later step.

Over the validator's log, in ``seq`` order (the answer and the end, ``recommend_product`` and
``terminate``, always stay; a call is read by its tool's kind, ``arena.tools.tool_kind``):

- ``repeat``: the same tool with the same canonical arguments as an earlier successful call (a
  loop; the tools are deterministic, so the earlier call already showed the same bytes);
- ``error``: an error result (bad arguments, unknown ids): it shows nothing;
- ``unused_search``: a search none of whose hits a later kept step names (views, compares,
  prices or recommends) and none of whose shops a later kept call searches in; repeated page
  sweeps fall here. An empty search followed by another kept search stays: it is why the next
  one relaxes a filter;
- ``unused_view``: a view (or a computation, ``calculate_voucher``) of ids none of which a later
  kept step names: a batch view of products never considered.

A shopper's question (``ask_user``) is never ``unused``: its answer, "no preference" included,
is a fact later steps reason from. Its count is scored (the shopper check), so where the
source's questions beyond those needed were penalised, every question stays, a refused or
repeated one too (``questions_scored``); else a refused or repeated one may go like any other
call, which leaves the shopper check's value as it was. The re-judged trace must show the same
value (:func:`curation.conversion.verify.judged_problem`).

The decision runs backwards, so "a later kept step" means one that survives pruning itself.
Tools are stateless (a result depends on the call and the index alone), so dropping a call
changes no other call's result; :func:`replays_identically` proves it for a pruned trace by
running its calls from the first dropped one on against the index again (those before it have
the episode's own history), and the conversion keeps the unpruned trace when the bytes differ.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from arena.episode import run_logged
from arena.tools import ToolContext, ToolKind, tool_kind
from arena.types import ToolLogEntry, canonical_json
from arena.world.shopper import ShopperSession
from arena.world.types import ShopperProfile
from curation.conversion.facts import call_ids
from judging.facts import result_facts
from judging.types import Judgment, ShopperEvidence

PruneReason = Literal["repeat", "error", "unused_search", "unused_view"]
# Kinds of call always kept (the answer and the end) and those kept only for an id they name.
ALWAYS_KEPT: frozenset[ToolKind | None] = frozenset({"answer", "end"})
VIEWS: frozenset[ToolKind | None] = frozenset({"view", "compute"})


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


def questions_scored(source: Judgment) -> bool:
    """Whether dropping any ``ask_user`` call would change the source's shopper check (extra questions)."""
    check = source.check("shopper")
    if check is None or check.evidence is None:
        return False
    return check.evidence_as(ShopperEvidence).extra > 0


def _forward(log: Sequence[ToolLogEntry], keep_questions: bool) -> dict[int, PruneReason]:
    """Repeats and errors: decided from what came before."""
    dropped: dict[int, PruneReason] = {}
    done: set[tuple[str, str]] = set()
    for entry in log:
        kind = tool_kind(entry.tool)
        if kind in ALWAYS_KEPT or (keep_questions and kind == "ask"):
            continue
        key = (entry.tool, canonical_json(entry.arguments))
        if entry.status != "ok":
            dropped[entry.seq] = "error"
        elif key in done:
            dropped[entry.seq] = "repeat"
        else:
            done.add(key)
    return dropped


def prune(log: Sequence[ToolLogEntry], *, keep_questions: bool = False) -> Pruned:
    """Decide which logged calls a converted trace keeps (see the module docstring).

    ``keep_questions``: every ``ask_user`` call stays (:func:`questions_scored` of the source).
    """
    entries = sorted(log, key=lambda e: e.seq)
    dropped = _forward(entries, keep_questions)
    needed_ids: set[str] = set()
    needed_shops: set[str] = set()
    later_search = False
    kept: list[ToolLogEntry] = []
    for entry in reversed(entries):
        if entry.seq in dropped:
            continue
        keep, kind = True, tool_kind(entry.tool)
        if kind == "search":
            hits = result_facts(entry.result).ranked_ids
            used = bool(needed_ids.intersection(hits)) or bool(
                needed_shops and needed_shops & _shops(entry.result)
            )
            keep = used or (not hits and later_search)
            if not keep:
                dropped[entry.seq] = "unused_search"
        elif kind in VIEWS and not needed_ids.intersection(call_ids(entry.arguments)):
            keep = False
            dropped[entry.seq] = "unused_view"
        if not keep:
            continue
        kept.append(entry)
        needed_ids.update(call_ids(entry.arguments))
        shop = entry.arguments.get("shop_id")
        if isinstance(shop, str) and shop:
            needed_shops.add(shop)
        later_search = later_search or kind == "search"
    return Pruned(kept=tuple(reversed(kept)), dropped=tuple(sorted(dropped.items())))


def replays_identically(
    entries: Sequence[ToolLogEntry],
    ctx: ToolContext,
    profile: ShopperProfile | None = None,
    *,
    episode: Sequence[ToolLogEntry] = (),
) -> bool:
    """Run each call against the index again; True when every result is byte-identical to the logged one.

    With ``profile``, the questions go to a fresh shopper of that profile (its answers follow
    from the profile and the questions asked so far, as they did in the episode).
    ``episode``: the whole log in order. The leading entries that are its own first calls (the
    same objects: nothing before them was dropped) have the episode's history, so their logged
    results are what a replay returns; they are not run again, except the questions, which
    bring the shopper to where it was.
    """
    if profile is not None:
        ctx = replace(ctx, shopper=ShopperSession(profile))
    shared = zip(entries, episode, strict=False)
    unchanged = next((i for i, (kept, logged) in enumerate(shared) if kept is not logged), len(episode))
    for position, entry in enumerate(entries):
        if position < unchanged and tool_kind(entry.tool) != "ask":
            continue
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
