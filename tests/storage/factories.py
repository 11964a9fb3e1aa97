"""Realistic judged episodes for storage tests and the storage benchmark (deterministic in ``i``).

Episode ``i`` has ``tool_calls(i)`` tool calls (5..9): searches, a view, and a final
recommend_product; its trajectory has 2 + 2 * calls + 1 messages (13..21) and its tool log
one entry per call, with the same result text the trajectory carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from arena.types import (
    FunctionCall,
    GoldItem,
    Message,
    PriceConstraint,
    Task,
    ToolCall,
    ToolLogEntry,
    Trajectory,
    Usage,
    Voucher,
    result_hash,
)
from judging.types import Check, Judgment, OutcomeScores, ProcessStats, ReasoningVerdict, Unscored, Versions
from storage.records import EpisodeRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)
VALIDATOR = "5ValidatorHotkeyxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
WORDS = (
    "waterproof",
    "hiking",
    "backpack",
    "bluetooth",
    "speaker",
    "linen",
    "shirt",
    "steel",
    "kettle",
    "lamp",
)


@dataclass(frozen=True)
class Trace:
    """The four arguments of ``save_judged`` for one episode."""

    episode: EpisodeRecord
    trajectory: Trajectory | None
    tool_log: tuple[ToolLogEntry, ...]
    judgment: Judgment


def hotkey(n: int) -> str:
    return f"5Miner{n:04d}" + "x" * 38


def make_task(i: int, *, intent: str = "product") -> Task:
    words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3))
    gold = GoldItem(
        product_id=f"p{i:07d}",
        titles=(f"{words.title()} Model {i}",),
        price=(PriceConstraint(mode="between", low=10.0, high=80.5 + i % 7),),
        service=("freeShipping",),
        sku_options=({"color": "black", "size": "L"},),
        attributes=({"material": ("nylon", "polyester")},),
    )
    common: dict[str, Any] = {
        "query": f"I need a {words} (#{i}) between 10 and 80 dollars with free shipping, black, size L.",
        "leak_cluster": f"c-{i % 37}",
        "difficulty": ("easy", "medium", "hard")[i % 3],
        "catalog_version": "cat-v1",
        "generator_version": "gen-1",
    }
    if intent == "voucher":
        voucher = Voucher(
            voucher_type="shop", threshold=50.0, discount_type="percentage", discount=0.1, cap=8.0
        )
        return Task(intent="voucher", gold=(gold,), voucher=voucher, budget=75.0, **common)
    if intent == "shop":
        second = gold.model_copy(update={"product_id": f"q{i:07d}"})
        return Task(intent="shop", gold=(gold, second), **common)
    if intent == "knowledge":
        return Task(intent="knowledge", gold=(gold,), knowledge_attribute="material", **common)
    return Task(intent="product", gold=(gold,), **common)


def tool_calls(i: int) -> int:
    return 5 + i % 5


def _search_result(i: int, step: int) -> str:
    hits = [
        {
            "product_id": f"p{(i * 10 + step * 3 + k) % 9_999_999:07d}",
            "shop_id": f"s{k % 4}",
            "title": f"{WORDS[k % len(WORDS)].title()} item {k} — “ünïcode” ok",
            "price": round(9.99 + k * 3.5, 2),
            "service": ["freeShipping", "COD"][: 1 + k % 2],
            "sold_count": 100 * k,
        }
        for k in range(10)
    ]
    return json.dumps(hits, ensure_ascii=False)


def make_trace(
    i: int,
    *,
    task: Task,
    round_id: int | None = None,
    miner: int | None = None,
    answered: bool = True,
    score: float | None = None,
) -> Trace:
    """Build episode ``i`` of ``task``: trajectory, tool log and judgment that agree with each other."""
    episode_id = f"ep-{i:08d}"
    miner = i % 8 if miner is None else miner
    start = T0 + timedelta(seconds=i)
    calls: list[tuple[str, dict[str, Any], str]] = []
    n = tool_calls(i)
    for step in range(n - 2):
        calls.append(
            ("find_product", {"q": f"{WORDS[step % 10]} {i}", "page": 1 + step % 2}, _search_result(i, step))
        )
    calls.append(
        ("view_product_information", {"product_ids": [task.gold[0].product_id]}, _search_result(i, 99))
    )
    calls.append(("recommend_product", {"product_ids": [task.gold[0].product_id]}, '"recommended"'))
    messages = [
        Message(role="system", content="You are a shopping assistant. Use the tools; recommend once."),
        Message(role="user", content=task.query),
    ]
    log: list[ToolLogEntry] = []
    for seq, (tool, args, result) in enumerate(calls):
        call_id = f"call_{i}_{seq}"
        messages.append(
            Message(
                role="assistant",
                content=None,
                reasoning_content=f"Step {seq}: I should call {tool}." if seq % 2 == 0 else None,
                tool_calls=(
                    ToolCall(id=call_id, function=FunctionCall(name=tool, arguments=json.dumps(args))),
                ),
            )
        )
        messages.append(Message(role="tool", tool_call_id=call_id, content=result))
        at = start + timedelta(milliseconds=200 * seq)
        log.append(
            ToolLogEntry(
                episode_id=episode_id,
                seq=seq,
                call_id=call_id,
                tool=tool,
                arguments=args,
                result=result,
                result_hash=result_hash(result),
                status="ok" if seq != 1 else "error",
                started_at=at,
                finished_at=at + timedelta(milliseconds=35),
                nonce_status=("none", "valid", "invalid")[seq % 3],
            )
        )
    messages.append(Message(role="assistant", content=f"I recommend {task.gold[0].product_id}."))
    trajectory = Trajectory(
        task_id=task.task_id,
        episode_id=episode_id,
        miner_hotkey=hotkey(miner),
        messages=tuple(messages),
        usage=Usage(prompt_tokens=1000 + i, completion_tokens=200),
    )
    end = "completed" if answered else "timeout"
    episode = EpisodeRecord(
        episode_id=episode_id,
        round_id=round_id,
        task_id=task.task_id,
        miner_hotkey=hotkey(miner),
        miner_uid=miner,
        validator_hotkey=VALIDATOR,
        started_at=start,
        finished_at=start + timedelta(seconds=4, microseconds=123_457),
        end=end,
    )
    value = score if score is not None else (i % 10) / 10 if answered else 0.0
    judgment = Judgment(
        task_id=task.task_id,
        episode_id=episode_id,
        miner_hotkey=hotkey(miner),
        success=answered and value >= 0.5,
        score=value,
        outcome=OutcomeScores(
            rule=value, gt=float(value >= 0.5), product=value, fields={"title": 1.0, "price": 0.5}
        ),
        checks=(
            Check(name="outcome", value=value, explanation="constraints met", evidence={"items": [1, 2]}),
            Check(name="format", value=1.0),
            Check(name="grounding", value=0.9, evidence={"verified_ids": [task.gold[0].product_id]}),
            Check(name="process", value=0.75),
            Check(name="axis", value=None, explanation="no nonce"),
            Check(name="reasoning", value=None if i % 4 == 0 else 0.8, explanation="judge"),
        ),
        rejects=() if answered else ("no_final_action",),
        axis=("A", "B", "mixed", "unknown")[i % 4],
        process=ProcessStats(tool_calls=n, searches=n - 2, views=1, verified=True, depth=n, tokens=1200),
        reasoning=ReasoningVerdict(
            value=None if i % 4 == 0 else 0.8,
            model="judge-model",
            labels=("grounded",),
            unscored=Unscored(cause="error", detail="judge unavailable") if i % 4 == 0 else None,
        ),
        end=end,
        versions=Versions(
            scorer="scorer-1", judge_model="judge-model", prompt_hash="ph-1", catalog_version="cat-v1"
        ),
    )
    return Trace(
        episode=episode, trajectory=trajectory if answered else None, tool_log=tuple(log), judgment=judgment
    )
