"""The final answer of a trajectory: the last answer call (`recommend_product`), read production-strictly.

An answer tool (``Tool.kind`` ``answer``) names the answer in its ``product_ids`` argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arena.arguments import ArgumentError, split_product_ids
from arena.tools import tool_kind, tool_names
from arena.types import ToolCall


@dataclass(frozen=True)
class Answer:
    """The recommended product ids and how they were read.

    ``product_ids`` are trimmed, empty pieces dropped and de-duplicated keeping the first
    occurrence (``arena.arguments.split_product_ids``), so ``"a, a,"`` fills one position, not
    two. ``error`` says why the arguments could not be read (then ``product_ids`` is empty);
    ``call`` is None when there was no answer call at all.
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
    """Return the answer among a trajectory's tool calls: the arguments of its last answer call."""
    recommends = [c for c in calls if tool_kind(c.function.name) == "answer"]
    if not recommends:
        return Answer(call=None, product_ids=(), error=f"no {answer_tools()} call")
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


def answer_tools() -> str:
    """The answer tools' names, as a verdict's explanations name them ("recommend_product")."""
    return " or ".join(tool_names("answer"))


def named_ids(call: ToolCall, key: str = "product_ids") -> tuple[str, ...]:
    """The product ids a call names in its ``key`` argument, read as the answer is; () when unreadable."""
    ids, _ = split_product_ids(call.function.parsed_or_empty.get(key, ""))
    return ids
