"""The final answer of a trajectory: the last `recommend_product` call, read production-strictly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arena.arguments import ArgumentError, split_product_ids
from arena.types import ToolCall

RECOMMEND = "recommend_product"
TERMINATE = "terminate"


@dataclass(frozen=True)
class Answer:
    """The recommended product ids and how they were read.

    ``product_ids`` are trimmed, empty pieces dropped and de-duplicated keeping the first
    occurrence (``arena.arguments.split_product_ids``), so ``"a, a,"`` fills one position, not
    two. ``error`` says why the arguments could not be read (then ``product_ids`` is empty);
    ``call`` is None when there was no `recommend_product` call at all.
    """

    call: ToolCall | None
    product_ids: tuple[str, ...]
    error: str | None = None
    recommend_calls: int = 0

    @property
    def call_id(self) -> str | None:
        """The id of the answering call, if any."""
        return self.call.id if self.call else None


def final_answer(calls: Sequence[ToolCall]) -> Answer:
    """Return the answer among a trajectory's tool calls: the arguments of its last `recommend_product`."""
    recommends = [c for c in calls if c.function.name == RECOMMEND]
    if not recommends:
        return Answer(call=None, product_ids=(), error="no recommend_product call")
    last = recommends[-1]
    args = last.function.parsed
    if isinstance(args, ArgumentError):
        return Answer(call=last, product_ids=(), error=str(args), recommend_calls=len(recommends))
    if "product_ids" not in args:
        return Answer(
            call=last, product_ids=(), error="no product_ids argument", recommend_calls=len(recommends)
        )
    ids, error = split_product_ids(args["product_ids"])
    return Answer(call=last, product_ids=ids, error=error, recommend_calls=len(recommends))


def named_ids(call: ToolCall, key: str = "product_ids") -> tuple[str, ...]:
    """The product ids a call names in its ``key`` argument, read as the answer is; () when unreadable."""
    ids, _ = split_product_ids(call.function.parsed_or_empty.get(key, ""))
    return ids
