"""Hand-built fixtures for judging tests: the 20-product catalog, a few tasks, and an episode builder.

The builder plays a tiny tool server over the fixture catalog (ShoppingBench-shaped results),
so a trajectory and its tool log agree by construction; tests then tamper with either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arena.catalog import iter_products
from arena.episode import run_logged
from arena.tools import ToolContext, canonical_arguments
from arena.types import (
    FunctionCall,
    GoldItem,
    Message,
    PriceConstraint,
    Product,
    Task,
    ToolCall,
    ToolLogEntry,
    Trajectory,
    Voucher,
    result_hash,
)
from judging.config import JudgeConfig
from judging.context import JudgingContext
from judging.titles import title_tokens
from judging.types import Check

CATALOG_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "catalog.jsonl"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def catalog() -> dict[str, Product]:
    return {p.product_id: p for p in iter_products([CATALOG_PATH])}


def lookup(ids: Sequence[str]) -> dict[str, Product]:
    products = catalog()
    return {i: products[i] for i in ids if i in products}


def fake_tool(name: str, args: Mapping[str, Any], products: Mapping[str, Product]) -> str:
    if name == "find_product":
        words = title_tokens(str(args.get("q", "")))
        scored = [(len(words & title_tokens(p.title)), p) for p in products.values()]
        hits = [p for s, p in sorted(scored, key=lambda x: (-x[0], x[1].product_id)) if s > 0][:10]
        rows = [
            {
                "product_id": p.product_id,
                "shop_id": p.shop_id,
                "title": p.title,
                "price": p.price,
                "service": list(p.service),
                "sold_count": p.sold_count,
            }
            for p in hits
        ]
        return json.dumps(rows, ensure_ascii=False)
    if name == "view_product_information":
        ids = [i.strip() for i in str(args.get("product_ids", "")).split(",")]
        return json.dumps(
            [products[i].model_dump(mode="json") for i in ids if i in products], ensure_ascii=False
        )
    if name == "recommend_product":
        return json.dumps(f"Having recommended the products to the user: {args.get('product_ids')}.")
    if name == "terminate":
        return json.dumps(f"The interaction has been completed with status: {args.get('status', 'success')}")
    return json.dumps(f"unknown tool {name}")


class Episode:
    """Builds a trajectory and the matching tool log step by step."""

    def __init__(self, query: str, *, task_id: str = "t-x", episode_id: str = "ep-1", hotkey: str = "hk-1"):
        self.task_id, self.episode_id, self.hotkey = task_id, episode_id, hotkey
        self.products = catalog()
        self.messages: list[Message] = [
            Message(role="system", content="You are a shopping assistant."),
            Message(role="user", content=query),
        ]
        self.log: list[ToolLogEntry] = []
        self._n = 0

    def step(
        self,
        reasoning: str | None,
        *calls: tuple[str, dict[str, Any]],
        content: str | None = None,
        raw_arguments: Mapping[int, str] | None = None,
    ) -> list[str]:
        """Append one assistant message with ``calls``, execute them, append results; return the call ids."""
        tool_calls: list[ToolCall] = []
        results: list[Message] = []
        ids: list[str] = []
        for i, (name, args) in enumerate(calls):
            self._n += 1
            cid = f"call_{self._n}"
            arguments = (raw_arguments or {}).get(i, json.dumps(args))
            tool_calls.append(ToolCall(id=cid, function=FunctionCall(name=name, arguments=arguments)))
            result = fake_tool(name, args, self.products)
            results.append(Message(role="tool", tool_call_id=cid, content=result))
            self.log.append(
                ToolLogEntry(
                    episode_id=self.episode_id,
                    seq=len(self.log),
                    call_id=cid,
                    tool=name,
                    arguments=canonical_arguments(name, arguments),
                    result=result,
                    result_hash=result_hash(result),
                    status="ok",
                    started_at=T0,
                    finished_at=T0,
                )
            )
            ids.append(cid)
        self.messages.append(
            Message(
                role="assistant",
                content=content,
                reasoning_content=reasoning,
                tool_calls=tuple(tool_calls) or None,
            )
        )
        self.messages += results
        return ids

    def say(self, content: str) -> None:
        self.messages.append(Message(role="assistant", content=content))

    def trajectory(self) -> Trajectory:
        return Trajectory(
            task_id=self.task_id,
            episode_id=self.episode_id,
            miner_hotkey=self.hotkey,
            messages=tuple(self.messages),
        )


def context(
    trajectory: Trajectory,
    log: Sequence[ToolLogEntry] = (),
    *,
    task: Task | None = None,
    config: JudgeConfig | None = None,
) -> JudgingContext:
    """A judging context over the fixture catalog (the shop task unless another is given)."""
    return JudgingContext(
        task=task or shop_task(),
        trajectory=trajectory,
        log=log,
        products=lookup,
        config=config or JudgeConfig(),
    )


class Checked:
    """A check with its typed evidence at hand: ``result.check.value``, ``result.<evidence field>``."""

    def __init__(self, check: Check) -> None:
        self.check = check

    def __getattr__(self, name: str) -> Any:
        return getattr(self.check.evidence, name)


def replace_message(trajectory: Trajectory, index: int, message: Message) -> Trajectory:
    messages = list(trajectory.messages)
    messages[index] = message
    return trajectory.model_copy(update={"messages": tuple(messages)})


def tool_message_index(trajectory: Trajectory, call_id: str) -> int:
    return next(
        i for i, m in enumerate(trajectory.messages) if m.role == "tool" and m.tool_call_id == call_id
    )


# --------------------------------------------------------------------------- tasks

SHOP_QUERY = (
    "Find a shop that sells both: (1) Nike Air Zoom Pegasus running shoes, size 42, black, LazMall; "
    "(2) Nike Revolution running shoes for women under 2000 pesos."
)


def shop_task() -> Task:
    return Task(
        intent="shop",
        query=SHOP_QUERY,
        gold=(
            GoldItem(
                product_id="1001",
                titles=("Nike Air Zoom Pegasus Running Shoes Men",),
                service=("official",),
                sku_options=({"size": "42", "color_family": "black"},),
            ),
            GoldItem(
                product_id="1002",
                titles=("Nike Revolution Running Shoes Women Lightweight",),
                price=(PriceConstraint(mode="less than", high=2000),),
            ),
        ),
    )


VOUCHER_QUERY = (
    "I need a stainless steel sponge holder and a manual can opener (2pcs).\n\nMy budget is only `150`, "
    "but I have a voucher: 1. It applies to products of one shop. 2. It is valid only when the total "
    "exceeds `150`. 3. It provides a fixed discount of `40`."
)


def voucher_task() -> Task:
    return Task(
        intent="voucher",
        query=VOUCHER_QUERY,
        gold=(
            GoldItem(product_id="3001", titles=("Stainless Steel Sponge Holder Kitchen Sink Caddy",)),
            GoldItem(
                product_id="3003",
                titles=("Manual Can Opener Stainless Steel",),
                sku_options=({"color_family": "2pcs"},),
            ),
        ),
        voucher=Voucher(voucher_type="shop", threshold=150, discount_type="fixed", face_value=40),
        budget=150,
    )


def product_task() -> Task:
    return Task(
        intent="product",
        query="I'm looking for B20 cast bronze crash cymbals, a hybrid ghost one, priced above 5000.",
        gold=(
            GoldItem(
                product_id="2001",
                titles=("Arborea Hybrid ghost crash cymbals cymbal B20 cast bronze",),
                price=(PriceConstraint(mode="greater than", low=5000),),
                attributes=({"material": ("b20 bronze",)},),
            ),
        ),
    )


def knowledge_task() -> Task:
    return Task(
        intent="knowledge",
        query="Which instrument did Alec Aitken play so well? I want a horsetail bow for it.",
        gold=(GoldItem(product_id="2003", titles=("Heart String Violin Bow Horsetail Hair Full Size",)),),
        knowledge_attribute="Violin",
    )


def good_shop_episode() -> Episode:
    """A model-driven, correct solution of :func:`shop_task`."""
    ep = Episode(SHOP_QUERY, task_id=shop_task().task_id)
    ep.step(
        "The user wants two Nike running shoes from one shop. I'll start with the Pegasus: "
        "search 'nike pegasus running'.",
        ("find_product", {"q": "nike pegasus running"}),
    )
    ep.step(
        "Result 1001 Nike Air Zoom Pegasus is in shop s1 at 3200; 1002 Nike Revolution Women is also in s1 "
        "at 1800, under 2000. Adidas 1003 is shop s2, so it cannot pair. Let me view 1001 and 1002 to check "
        "the size 42 black variant.",
        ("view_product_information", {"product_ids": "1001,1002"}),
    )
    ep.step(
        "1001 has a variant size 42 with color_family black and is official; 1002 is priced 1800 in the same "
        "shop s1. Comparing with 1003 (s2, 4500), the s1 pair fits every constraint. Recommending 1001,1002.",
        ("recommend_product", {"product_ids": "1001,1002"}),
    )
    ep.step("Done, both recommended.", ("terminate", {"status": "success"}))
    return ep


def good_voucher_episode(ids: str = "3001,3003") -> Episode:
    ep = Episode(VOUCHER_QUERY, task_id=voucher_task().task_id)
    ep.step(
        "Two kitchen items within 150 after a shop voucher. Search 'stainless steel sponge holder' first.",
        ("find_product", {"q": "stainless steel sponge holder"}),
    )
    ep.step(
        "3001 Stainless Steel Sponge Holder in shop s6 costs 120; 3004 is plastic in s7. Now the can opener "
        "in shop s6: search 'manual can opener'.",
        ("find_product", {"q": "manual can opener"}),
    )
    ep.step(
        "3003 Manual Can Opener is in s6 at 60. Total 180 exceeds 150, but with one shop the voucher "
        "takes 40 off: 140 fits the budget. View 3001 and 3003 to confirm the 2pcs option.",
        ("view_product_information", {"product_ids": "3001,3003"}),
    )
    ep.step(
        "3003 has color_family 2pcs. 3001 plus 3003 beats 3004 (plastic). Recommend them.",
        ("recommend_product", {"product_ids": ids}),
    )
    ep.step("Finished.", ("terminate", {"status": "success"}))
    return ep


def logged_episode(
    ctx: ToolContext, calls: Sequence[tuple[str, Mapping[str, Any]]], *, query: str, task_id: str
) -> tuple[Trajectory, list[ToolLogEntry]]:
    """Run calls through the real tools (``ctx``), logged as the tool server logs them."""
    messages = [Message(role="system", content="Shop."), Message(role="user", content=query)]
    log: list[ToolLogEntry] = []
    for n, (name, arguments) in enumerate(calls):
        call = ToolCall(id=f"c{n}", function=FunctionCall(name=name, arguments=json.dumps(arguments)))
        entry = run_logged(name, json.dumps(arguments), ctx, episode_id="ep", seq=n, call_id=call.id)
        log.append(entry)
        messages += [
            Message(role="assistant", content=f"Step {n}: {name}.", tool_calls=(call,)),
            Message(role="tool", tool_call_id=call.id, content=entry.result),
        ]
    return Trajectory(task_id=task_id, episode_id="ep", miner_hotkey="hk", messages=tuple(messages)), log
