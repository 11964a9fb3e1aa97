"""The judging context: what every check looks at (task, trajectory, tool log), and facts computed once.

A check is a function of one :class:`JudgingContext` that returns a ``judging.types.Check``
(the rule checks are plain functions; the reasoning check, which asks an LLM, is a coroutine
function). Facts several checks need (the parsed calls, the final answer, the products it
names, the token estimate, the reconciliation with the log) are computed on first use and
then shared, so one judgment reads each tool call's arguments once and each result once.

Outside the judge (curation re-judging a converted trace, a bench, a notebook), build a
context and call any check, or read a fact::

    ctx = JudgingContext(task=task, trajectory=trajectory, log=log, products=catalog.get_many)
    ctx.answer.product_ids, ctx.reconciliation.hidden, ctx.logged.prices
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from arena.types import Product, Task, ToolCall, ToolLogEntry, Trajectory
from arena.world.types import ShopperProfile
from judging.answer import Answer, final_answer
from judging.config import JudgeConfig
from judging.facts import ResultFacts, logged_facts
from judging.injection import injection_signals
from judging.reasoning_prompt import build_messages
from judging.reconcile import Reconciliation, reconcile
from judging.titles import title_tokens
from judging.world import ProductLookup, StockLookup, answer_version

__all__ = ["Completer", "JudgingContext", "ProductLookup", "StockLookup", "estimate_tokens"]

# Characters per token for the deterministic size estimate (a common rule of thumb for
# English BPE tokenizers). The estimate only has to be stable, not exact.
CHARS_PER_TOKEN = 4


class Completer(Protocol):
    """A chat endpoint at temperature 0 that returns the assistant's text for ``messages``."""

    @property
    def model(self) -> str:
        """The pinned model name (recorded in every Judgment)."""
        ...

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Return the reply text; raise on transport errors (the caller retries)."""
        ...


def estimate_tokens(trajectory: Trajectory) -> int:
    """Estimate a trajectory's tokens: every text field's characters divided by four, rounded up."""
    chars = 0
    for m in trajectory.messages:
        chars += len(m.content or "") + len(m.reasoning_content or "")
        for call in m.tool_calls or ():
            chars += len(call.function.name) + len(call.function.arguments)
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class JudgingContext:
    """One trajectory to judge, with what it is judged against and the facts the checks share.

    Attributes:
        task: the task served (the Judgment is the task's, whatever the trajectory claims).
        trajectory: the miner's returned trajectory (each call's arguments parsed once, on it).
        log: the tool server's log of the episode (``judging.replay.replay_log`` offline).
        products: catalog lookup.
        config: thresholds, budgets and coefficients.
        completer: the LLM reasoning judge, or None to leave reasoning unscored.
        profile: the hidden shopper profile of a world task (``ask_user``, tool set arena-3);
            None for a task without one (then no shopper check runs).
        truth: what the answer is scored against where it differs from ``task``: a world task
            whose world changed during the episode, as it is at the answer's world version
            (``judging.world.judged_at_answer``); None: the task itself.
        stock: the world's stock levels at the answer (``judging.world.AtAnswer``): a pick out
            of stock then fails its item; None: stock is not judged (a static catalog).
    """

    task: Task
    trajectory: Trajectory
    products: ProductLookup
    log: Sequence[ToolLogEntry] = ()
    config: JudgeConfig = field(default_factory=JudgeConfig)
    completer: Completer | None = None
    profile: ShopperProfile | None = None
    truth: Task | None = None
    stock: StockLookup | None = None

    @cached_property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every tool call, in order, across the assistant messages."""
        return tuple(self.trajectory.tool_calls())

    @cached_property
    def answer(self) -> Answer:
        """The final answer: the last `recommend_product` call's ids."""
        return final_answer(self.calls)

    @cached_property
    def found(self) -> Mapping[str, Product]:
        """The catalog products the answer names (unknown ids absent)."""
        ids = self.answer.product_ids
        return self.products(list(ids)) if ids else {}

    @cached_property
    def out_of_stock(self) -> frozenset[str]:
        """The answer's products that are out of stock at the answer (empty where stock is not judged)."""
        if self.stock is None or not self.found:
            return frozenset()
        return frozenset(i for i, level in self.stock(list(self.found)).items() if level <= 0)

    @cached_property
    def tokens(self) -> int:
        """The trajectory's estimated tokens (:func:`estimate_tokens`)."""
        return estimate_tokens(self.trajectory)

    @cached_property
    def query(self) -> str:
        """The first user message (the query the agent was given)."""
        return next((m.content or "" for m in self.trajectory.messages if m.role == "user"), "")

    @cached_property
    def query_tokens(self) -> frozenset[str]:
        """The query's lower-cased word tokens."""
        return title_tokens(self.query)

    @cached_property
    def reconciliation(self) -> Reconciliation:
        """The trajectory paired with the tool log: matched, hidden, fabricated, ids seen."""
        return reconcile(self.trajectory, self.calls, self.log, self.answer)

    @cached_property
    def injection_signals(self) -> tuple[str, ...]:
        """Where the miner's own text addresses the judge (``judging.injection``)."""
        return tuple(injection_signals(self.trajectory))

    @cached_property
    def judge_messages(self) -> list[dict[str, str]]:
        """The reasoning judge's prompt for this episode (bounded by construction)."""
        return build_messages(self.task, self.trajectory)

    @cached_property
    def answer_world_version(self) -> int | None:
        """The world version of the answer (``judging.world.answer_version``); None over a static catalog."""
        if all(entry.world_version is None for entry in self.log):
            return None
        return answer_version(self.log)

    @cached_property
    def logged(self) -> ResultFacts:
        """What the tool log showed the agent: ids, titles and prices of every successful result."""
        return logged_facts(self.log)
