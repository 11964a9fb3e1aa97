"""Recovery rows: a training row taught to search again after a search that found nothing.

Why (measured by ``make learn``, bench/results/learning.json): the harness's successful traces
each hold one ``find_product`` call that finds the product, so a model tuned on them never sees a
search come back empty. The tuned model then added price filters the shopper never asked for
(24 of 60 held-out first searches came back ``[]``) and, with nothing to copy, viewed and
recommended the ids of the tool description's example: every hallucinated id of that run.

A recovery row puts, before the row's first search, the same search with a price range that
excludes everything, and its real result, replayed on the index the row was judged on (so the
row stays grounded: every result in it is what the tool returns). The failed call carries
``weight: 0`` (loss off, the convention of OpenAI's fine-tuning format, which the renderer
honours): the model is taught what follows an empty result, never to make the bad call.
A row whose bad search still finds something, or that holds no search, is kept unchanged.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.tools import ToolContext, run_tool

SEARCH = "find_product"


@dataclass(frozen=True)
class Recovered:
    """Rows after augmentation, and how many of them now hold a recovery."""

    rows: tuple[dict[str, Any], ...]
    recovered: int
    unchanged: int


def bad_price(rng: random.Random) -> str:
    """A price range of the kind the tuned model invented ("0-5", "0-9"): below every real price."""
    return f"0-{rng.randint(1, 9)}"


def with_recovery(row: Mapping[str, Any], ctx: ToolContext, rng: random.Random) -> dict[str, Any] | None:
    """Return ``row`` with a failed search and its empty result before its first search, or None."""
    messages: list[dict[str, Any]] = copy.deepcopy(list(row["messages"]))
    for position, message in enumerate(messages):
        calls = message.get("tool_calls") or ()
        if message.get("role") != "assistant" or not calls or calls[0]["function"]["name"] != SEARCH:
            continue
        call = calls[0]
        arguments = call["function"]["arguments"]
        parsed = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        failing = {**parsed, "price": bad_price(rng)}
        result = run_tool(SEARCH, failing, ctx)
        if result.error or json.loads(result.content) != []:
            return None
        call_id = f"{call.get('id') or 'call'}-retry"
        # The same shape as the row's own call (a JSON string, or the object already read).
        text = json.dumps(failing, ensure_ascii=False) if isinstance(arguments, str) else failing
        failed_turn = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": SEARCH, "arguments": text}}
            ],
            "weight": 0,
        }
        observation = {"role": "tool", "tool_call_id": call_id, "content": result.content}
        return {**row, "messages": [*messages[:position], failed_turn, observation, *messages[position:]]}
    return None


def add_recoveries(
    rows: Sequence[Mapping[str, Any]], ctx: ToolContext, *, every: int, seed: int
) -> Recovered:
    """Give every ``every``-th row (1-based: rows every, 2*every, ...) a recovery; others unchanged."""
    if every < 1:
        return Recovered(tuple(dict(r) for r in rows), recovered=0, unchanged=len(rows))
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    recovered = 0
    for number, row in enumerate(rows, start=1):
        changed = with_recovery(row, ctx, rng) if number % every == 0 else None
        recovered += changed is not None
        out.append(changed if changed is not None else dict(row))
    return Recovered(tuple(out), recovered=recovered, unchanged=len(rows) - recovered)
