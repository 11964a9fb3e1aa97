"""Planted judged traces for the curation tests: every field the funnel looks at is a keyword argument.

``task(n)`` gives tasks whose wording, gold product and constraints share nothing with
``task(m)`` for ``m != n`` (made-up words per task), so the leak audit sees them as unrelated
unless a test links them on purpose. ``trace(...)`` builds a trajectory, the tool log the
validator would have written for it, and a judgment, all consistent with each other.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from arena.types import (
    FunctionCall,
    GoldItem,
    Message,
    PriceConstraint,
    Task,
    ToolCall,
    ToolLogEntry,
    Trajectory,
    result_hash,
)
from judging.types import Check, Judgment, OutcomeScores, ProcessStats, ReasoningVerdict, Unscored, Versions
from storage.records import EpisodeRecord, JudgedTrace
from storage.repository import save_judged, save_tasks
from tests.storage.factories import T0, VALIDATOR, Trace, hotkey

SYSTEM = "You are a shopping assistant. Use the tools; recommend once."
_SYLLABLES = ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "ze", "bo", "di", "fa", "gu", "hi", "jo")


def word(n: int, salt: int) -> str:
    """A made-up word unique to (n, salt)."""
    value, out = n * 7 + salt * 100_003 + 1, []
    while value:
        value, digit = divmod(value, len(_SYLLABLES))
        out.append(_SYLLABLES[digit])
    return "".join(out) + "x"


def task(n: int, *, cluster: str | None = None, gold: str | None = None, pool: str = "held_out") -> Task:
    """A product task with its own words, gold product and price; ``cluster`` defaults to ``lc-<n>``."""
    name = f"{word(n, 1)} {word(n, 2)} {word(n, 3)}"
    item = GoldItem(
        product_id=gold or f"g{n:05d}",
        titles=(name.title(),),
        price=(PriceConstraint(mode="less than", high=100.0 + n),),
    )
    return Task(
        intent="product",
        query=f"Find me a {name} under {100 + n} dollars.",
        gold=(item,),
        leak_cluster=cluster or f"lc-{n:04d}",
        catalog_version="cat-1",
        generator_version="gen-1",
        source="shoppingbench" if n % 2 else "generated",
        pool=pool,  # type: ignore[arg-type]
    )


def default_calls(t: Task, answer: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """Search by the task's words, view the gold, recommend ``answer``."""
    return [
        ("find_product", {"q": t.gold[0].titles[0].lower(), "page": 1}),
        ("view_product_information", {"product_ids": ",".join(item.product_id for item in t.gold)}),
        ("recommend_product", {"product_ids": ",".join(answer)}),
    ]


def _result(name: str, arguments: dict[str, Any], t: Task) -> str:
    if name == "find_product":
        hits = [{"product_id": item.product_id, "title": item.titles[0], "price": 10.0} for item in t.gold]
        return json.dumps(hits + [{"product_id": "decoy-1", "title": "Other", "price": 5.0}])
    if name == "view_product_information":
        ids = str(arguments.get("product_ids", "")).split(",")
        return json.dumps([{"product_id": i.strip(), "attributes": {}} for i in ids if i.strip()])
    return json.dumps(f"Recommended to the user: {arguments.get('product_ids', '')}.")


def trace(
    i: int,
    t: Task,
    *,
    miner: int = 0,
    calls: list[tuple[str, dict[str, Any]]] | None = None,
    answer: Sequence[str] | None = None,
    success: bool = True,
    score: float = 0.9,
    axis: str = "A",
    reasoning: float | None = 0.9,
    injection: bool = False,
    rejects: Sequence[str] = (),
    fabricated: Sequence[str] = (),
    hallucinated: Sequence[str] = (),
    process: ProcessStats | None = None,
    system: str | None = SYSTEM,
    user: str | None = None,
    extra: Sequence[Message] = (),
    end: str = "completed",
    answered: bool = True,
    toolset: str | None = None,
) -> Trace:
    """Build episode ``ep-<i>`` of task ``t`` (see the module docstring)."""
    episode_id = f"ep-{i:06d}"
    answer = tuple(answer) if answer is not None else tuple(item.product_id for item in t.gold)
    calls = calls if calls is not None else default_calls(t, answer)
    messages = [Message(role="system", content=system)] if system is not None else []
    messages.append(Message(role="user", content=user if user is not None else t.query))
    log: list[ToolLogEntry] = []
    start = T0 + timedelta(seconds=i)
    for seq, (name, arguments) in enumerate(calls):
        call_id = f"c{i}-{seq}"
        result = _result(name, arguments, t)
        call = ToolCall(id=call_id, function=FunctionCall(name=name, arguments=json.dumps(arguments)))
        messages.append(
            Message(role="assistant", content=None, reasoning_content=f"I call {name}.", tool_calls=(call,))
        )
        messages.append(Message(role="tool", tool_call_id=call_id, content=result))
        at = start + timedelta(milliseconds=10 * seq)
        log.append(
            ToolLogEntry(
                episode_id=episode_id,
                seq=seq,
                call_id=call_id,
                tool=name,
                arguments=arguments,
                result=result,
                result_hash=result_hash(result),
                status="ok",
                started_at=at,
                finished_at=at + timedelta(milliseconds=5),
            )
        )
    messages.append(Message(role="assistant", content=f"I recommend {', '.join(answer)}."))
    messages.extend(extra)
    episode = EpisodeRecord(
        episode_id=episode_id,
        task_id=t.task_id,
        miner_hotkey=hotkey(miner),
        miner_uid=miner,
        validator_hotkey=VALIDATOR,
        started_at=start,
        finished_at=start + timedelta(seconds=2),
        end=end,  # type: ignore[arg-type]
    )
    judgment = Judgment(
        task_id=t.task_id,
        episode_id=episode_id,
        miner_hotkey=hotkey(miner),
        success=success,
        score=score,
        outcome=OutcomeScores(rule=score, gt=float(success), product=score),
        checks=(Check(name="outcome", value=score),),
        rejects=tuple(rejects),  # type: ignore[arg-type]
        axis=axis,  # type: ignore[arg-type]
        hallucinated_product_ids=tuple(hallucinated),
        fabricated_call_ids=tuple(fabricated),
        process=process
        or ProcessStats(tool_calls=len(calls), searches=1, views=1, verified=True, depth=len(calls)),
        reasoning=ReasoningVerdict(
            value=reasoning,
            model="judge",
            injection_flagged=injection,
            unscored=None if reasoning is not None else Unscored(cause="error", detail="judge unavailable"),
        ),
        end=end,
        versions=Versions(
            scorer="scorer-1", judge_model="judge", prompt_hash="ph", catalog_version="cat-1", toolset=toolset
        ),
    )
    trajectory = Trajectory(
        task_id=t.task_id, episode_id=episode_id, miner_hotkey=hotkey(miner), messages=tuple(messages)
    )
    return Trace(
        episode=episode, trajectory=trajectory if answered else None, tool_log=tuple(log), judgment=judgment
    )


def judged(tr: Trace, t: Task, seq: int = 1) -> JudgedTrace:
    """The ``JudgedTrace`` the repository would return for ``tr`` (for stage unit tests, no database)."""
    return JudgedTrace(
        seq=seq,
        stored_at=T0,
        episode=tr.episode,
        task=t,
        trajectory=tr.trajectory,
        tool_log=tr.tool_log,
        judgment=tr.judgment,
    )


def with_messages(tr: Trace, messages: Iterable[Message]) -> Trace:
    """``tr`` with its trajectory's messages replaced."""
    assert tr.trajectory is not None
    return replace(tr, trajectory=tr.trajectory.model_copy(update={"messages": tuple(messages)}))


def store(session: Session, tasks: Iterable[Task], traces: Iterable[Trace]) -> None:
    """Save the tasks, then every trace (one ``save_judged`` each)."""
    save_tasks(session, tasks=list(tasks))
    for tr in traces:
        save_judged(
            session, episode=tr.episode, trajectory=tr.trajectory, tool_log=tr.tool_log, judgment=tr.judgment
        )


# With the default salt and an eval share of 0.4 (GOLDEN_EVAL_SHARE), tasks 2 and 4 land in eval
# and 1, 3, 5 in train (test_export checks that both sides are populated).
GOLDEN_EVAL_SHARE = 0.4
GOLDEN_CLUSTERS = ("lc-golden-0", "lc-golden-6", "lc-golden-1", "lc-golden-8", "lc-golden-2")


def golden_population(session: Session) -> list[Task]:
    """A small, fixed population that exercises every export format (see ``tests/fixtures/export``).

    Per task: a verified success and a grounded failure (a DPO pair, KTO positive and negative);
    task 1 also has an exact duplicate of its success, an axis B trace and an ungrounded failure;
    task 2 searches with filters (arguments with other keys than task 1's); task 3 has
    non-ASCII text and no system prompt; task 4 only fails; task 5 has only a timeout.
    """
    tasks = [task(n, cluster=GOLDEN_CLUSTERS[n - 1]) for n in range(1, 6)]
    one, two, three, four, five = tasks
    filtered = [
        ("find_product", {"q": "wide search", "page": 1, "price": "0-120", "service": "freeShipping"}),
        ("find_product", {"q": two.gold[0].titles[0].lower(), "page": 2, "sort": "priceasc"}),
        ("view_product_information", {"product_ids": two.gold[0].product_id}),
        ("recommend_product", {"product_ids": two.gold[0].product_id}),
    ]
    wrong = ("recommend_product", {"product_ids": "decoy-1"})
    traces = [
        trace(1, one, miner=1),
        trace(2, one, miner=2),  # the same strategy as 1: an exact duplicate
        trace(3, one, miner=3, calls=planted_wrong(one, wrong), answer=["decoy-1"], success=False, score=0.2),
        trace(4, one, miner=4, axis="B"),
        trace(
            5,
            one,
            miner=5,
            calls=planted_wrong(one, ("recommend_product", {"product_ids": "p-ghost"})),
            answer=["p-ghost"],
            success=False,
            score=0.0,
            hallucinated=["p-ghost"],
        ),
        trace(6, two, miner=1, calls=filtered),
        trace(7, two, miner=2, calls=[*filtered[:2], wrong], answer=["decoy-1"], success=False, score=0.3),
        trace(8, three, miner=1, system=None, user=None),
        trace(
            9,
            three,
            miner=2,
            system=None,
            calls=planted_wrong(three, wrong),
            answer=["decoy-1"],
            success=False,
            score=0.1,
        ),
        trace(
            10, four, miner=3, calls=planted_wrong(four, wrong), answer=["decoy-1"], success=False, score=0.1
        ),
        trace(11, five, miner=4, answered=False, end="timeout", success=False, score=0.0),
    ]
    store(session, tasks, traces)
    return tasks


def planted_wrong(t: Task, wrong: tuple[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The default search and view of ``t``, then a wrong recommendation."""
    return [*default_calls(t, ["unused"])[:2], wrong]
