"""Agents for the round-integrity probes: a guesser, a world oracle, and a task-id inverter.

Each attacker falls back to the guesser's exact episode when its attack finds nothing, so that
"scores no better than a miner that guesses" is a per-task comparison: equal scores mean the
attack added nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from arena.index import SearchIndex
from arena.templates import title_words
from arena.types import FunctionCall, GoldItem, Message, PriceConstraint, Product, Task, ToolCall
from arena.world.compile import compile_world
from arena.world.seed import world_round_at
from arena.world.types import WorldPack
from neurons.chain.client import BittensorChain
from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller


async def _answer(request: AgentRequest, call_tool: ToolCaller, product_ids: Sequence[str]) -> AgentOutput:
    """Search the request, view and recommend ``product_ids`` (none: the top hit, as a guesser does)."""
    messages = [Message(role="system", content="shop"), Message(role="user", content=request.query)]

    async def call(name: str, arguments: dict[str, object]) -> str:
        call_id = f"call_{len(messages)}"
        result = await call_tool(name, dict(arguments), call_id)
        tool_call = ToolCall(id=call_id, function=FunctionCall(name=name, arguments=json.dumps(arguments)))
        messages.append(Message(role="assistant", tool_calls=(tool_call,)))
        messages.append(Message(role="tool", tool_call_id=call_id, content=result.content))
        return result.content

    hits = await call("find_product", {"q": request.query})
    ids = list(product_ids) or _top_hit(hits)
    if ids:  # viewed first: a recommendation of a product never seen is not grounded
        await call("view_product_information", {"product_ids": ",".join(ids)})
        await call("recommend_product", {"product_ids": ",".join(ids)})
    await call("terminate", {"status": "success"})
    return AgentOutput(messages=messages)


def _top_hit(content: str) -> list[str]:
    try:
        hits = json.loads(content)
    except ValueError:
        return []
    if isinstance(hits, dict):
        hits = hits.get("results") or hits.get("products") or []
    return [str(hits[0]["product_id"])] if isinstance(hits, list) and hits else []


async def guesser(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """The trivial policy: search the request verbatim, recommend the top hit."""
    return await _answer(request, call_tool, [])


def public_round_seed(block_hash: str, *, netuid: int, round_index: int) -> bytes:
    """The round seed as main derived it before round secrets: from public data only."""
    head = b"arena.round-seed/1" + netuid.to_bytes(2, "big") + round_index.to_bytes(8, "big")
    return hashlib.sha256(head + bytes.fromhex(block_hash.removeprefix("0x"))).digest()


@dataclass
class WorldOracle:
    """A miner that compiles the round's world from everything public and recommends its gold."""

    chain: BittensorChain  # the miner's own chain client
    base: SearchIndex  # the public base catalog
    netuid: int
    period: int
    delay: int
    knew: list[bool] = field(default_factory=list)  # per episode: whether its world held the task
    _packs: dict[bytes, WorldPack] = field(default_factory=dict)

    async def __call__(self, request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        gold: list[str] = []
        at = world_round_at(await self.chain.block(), period=self.period, delay=self.delay)
        block_hash = await self.chain.block_hash(at.seed_block) if at is not None else None
        if at is not None and block_hash is not None:
            seed = public_round_seed(block_hash, netuid=self.netuid, round_index=at.index)
            if seed not in self._packs:
                self._packs[seed] = compile_world(seed, self.base)
            for compiled in self._packs[seed].tasks:
                if compiled.task.query == request.query:
                    truth = compiled.revisions[0].product_id if compiled.revisions else None
                    gold = [truth] if truth else [item.product_id for item in compiled.task.gold]
        self.knew.append(bool(gold))
        return await _answer(request, call_tool, gold)


MAX_CANDIDATES = 20_000  # candidate tasks hashed per request (a one-item request needs a few hundred)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _price_options(query: str) -> list[tuple[PriceConstraint, ...]]:
    numbers = sorted({float(n) for n in _NUMBER.findall(query)})
    options: list[tuple[PriceConstraint, ...]] = [()]
    for n in numbers:
        options += [
            (PriceConstraint(mode="less than", high=n),),
            (PriceConstraint(mode="greater than", low=n),),
        ]
    for low, high in itertools.combinations(numbers, 2):
        options.append((PriceConstraint(mode="between", low=low, high=high),))
    return options


def _mentioned(value: str, text: str) -> bool:
    return bool(value.strip()) and re.search(rf"(?<!\w){re.escape(value.casefold())}(?!\w)", text) is not None


def candidate_items(product: Product, query: str) -> Iterator[GoldItem]:
    """Every gold item of ``product`` whose constraints the query could be rendering."""
    text = query.casefold()
    variants: list[tuple[dict[str, str], ...]] = [()]
    variants += [
        (dict(v),) for v in product.sku_options.values() if v and all(_mentioned(x, text) for x in v.values())
    ]
    attribute_sets: list[list[dict[str, tuple[str, ...]]]] = [[]]
    for key in sorted(product.attributes):
        hits = [v for v in product.attributes[key] if _mentioned(v, text)]
        attribute_sets = [s + [{key: (v,)}] for s in attribute_sets for v in hits] + attribute_sets
    services = [
        combo for n in range(len(product.service) + 1) for combo in itertools.combinations(product.service, n)
    ]
    for sku, attributes, service, price in itertools.product(
        variants, attribute_sets, services, _price_options(query)
    ):
        yield GoldItem(
            product_id=product.product_id,
            titles=(product.title,),
            price=price,
            service=service,
            sku_options=sku,
            attributes=tuple(attributes),
        )


def _named(product: Product, text: str) -> bool:
    words = title_words(product.title)
    return any(" ".join(words[i : i + 2]) in text for i in range(len(words) - 1))


@dataclass
class TaskIdInverter:
    """A miner that inverts the request's task id over the public catalog and recommends the gold."""

    base: SearchIndex
    knew: list[bool] = field(default_factory=list)
    _catalog: list[Product] = field(default_factory=list)

    def __post_init__(self) -> None:
        ids = [self.base.product_id_at(ordinal) for ordinal in range(len(self.base))]
        self._catalog = list(self.base.products(ids).values())

    def invert(self, task_id: str, query: str) -> str | None:
        """The gold product of a one-item request whose id is ``task_id`` (None: not found)."""
        text = query.casefold()
        named = [product for product in self._catalog if _named(product, text)]
        candidates = ((product, item) for product in named for item in candidate_items(product, query))
        for product, item in itertools.islice(candidates, MAX_CANDIDATES):
            if Task(intent="product", query=query, gold=(item,)).task_id == task_id:
                return product.product_id
        return None

    async def __call__(self, request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        found = await asyncio.to_thread(self.invert, request.task_id, request.query)
        self.knew.append(found is not None)
        return await _answer(request, call_tool, [found] if found else [])
