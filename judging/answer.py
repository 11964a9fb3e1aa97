"""The final answer of a trajectory: the last `recommend_product` call, parsed production-strictly."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from arena.types import ToolCall, Trajectory

RECOMMEND = "recommend_product"
TERMINATE = "terminate"


@dataclass(frozen=True)
class Answer:
    """The recommended product ids and how they were read.

    ``product_ids`` are trimmed, empty pieces dropped and de-duplicated keeping the first
    occurrence, so ``"a, a,"`` fills one position, not two. ``error`` says why the arguments
    could not be read (then ``product_ids`` is empty); ``call`` is None when there was no
    `recommend_product` call at all.
    """

    call: ToolCall | None
    product_ids: tuple[str, ...]
    error: str | None = None
    recommend_calls: int = 0

    @property
    def call_id(self) -> str | None:
        """The id of the answering call, if any."""
        return self.call.id if self.call else None


def parse_arguments(arguments: str) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a tool call's JSON-string arguments into an object.

    Returns:
        ``(value, None)`` for a JSON object, ``(None, reason)`` otherwise. NaN and infinity
        literals are refused, as no tool argument can need them.
    """

    def refuse(constant: str) -> Any:
        raise ValueError(f"non-finite literal {constant}")

    try:
        value = json.loads(arguments, parse_constant=refuse)
    except (ValueError, TypeError) as exc:
        return None, f"arguments are not JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"arguments are a JSON {type(value).__name__}, not an object"
    return value, None


def split_ids(raw: Any) -> tuple[tuple[str, ...], str | None]:
    """Read ``product_ids`` (a comma-separated string, or a list of ids) into clean ids."""
    if isinstance(raw, str):
        pieces: list[Any] = raw.split(",")
    elif isinstance(raw, list):
        pieces = raw
    else:
        return (), f"product_ids is a {type(raw).__name__}, not a string or list"
    ids: list[str] = []
    for piece in pieces:
        if isinstance(piece, bool) or not isinstance(piece, str | int):
            return (), f"product id {piece!r} is not a string"
        text = str(piece).strip()
        if text and text not in ids:
            ids.append(text)
    if not ids:
        return (), "product_ids is empty"
    return tuple(ids), None


def final_answer(trajectory: Trajectory) -> Answer:
    """Return the trajectory's answer: the arguments of its last `recommend_product` call."""
    calls = [c for c in trajectory.tool_calls() if c.function.name == RECOMMEND]
    if not calls:
        return Answer(call=None, product_ids=(), error="no recommend_product call")
    last = calls[-1]
    args, error = parse_arguments(last.function.arguments)
    if args is None:
        return Answer(call=last, product_ids=(), error=error, recommend_calls=len(calls))
    if "product_ids" not in args:
        return Answer(call=last, product_ids=(), error="no product_ids argument", recommend_calls=len(calls))
    ids, error = split_ids(args["product_ids"])
    return Answer(call=last, product_ids=ids, error=error, recommend_calls=len(calls))
