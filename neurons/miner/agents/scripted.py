"""The scripted reference agent: a deterministic search loop with no model (the axis-B baseline).

Python chooses every call: read the query with rules (:mod:`neurons.miner.agents.query`), ask the
customer about the usual unsaid needs where the tool set offers ``ask_user`` and the request gives
reason to (a single request with no budget: a basket with a budget and a voucher is fully stated),
search each item with the filters the rules found, look at the top candidates, pick the best match
per item (the cheapest in stock among the best matches when the customer wants the cheapest),
recommend, terminate. Its messages are still OpenAI chat format (assistant messages carrying
``tool_calls`` with templated content), so the judge's axis labelling meets a real harness.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field, replace
from typing import Any

from arena.types import FunctionCall, Message, ToolCall, ToolResult
from neurons.miner.agents.contract import (
    ASK_TOOL,
    AgentOutput,
    AgentRequest,
    AgentStop,
    ToolCaller,
    prompt_text,
    system_prompt,
)
from neurons.miner.agents.query import ItemSpec, ParsedQuery, parse_query, read_item

logger = logging.getLogger(__name__)

SHOP_TRIES = 2  # how many candidate shops a same-shop request tries before giving up on one shop
# How the scripted agent words each service it asks about (the shopper matches these words).
SERVICE_QUESTIONS = {
    "freeShipping": "free shipping",
    "COD": "cash on delivery",
    "official": "an official LazMall store",
    "flashsale": "a flash sale",
}
_WANTS_CHEAPEST = ("cheapest", "lowest price")


class _OutOfBudget(Exception):
    """The step or time budget ran out; the run ends with what it has."""

    def __init__(self, stop: AgentStop) -> None:
        super().__init__(stop)
        self.stop = stop


@dataclass
class _Run:
    """One episode's state: the conversation, the budgets, and the tool caller."""

    request: AgentRequest
    call_tool: ToolCaller
    deadline: float
    narrate: bool
    messages: list[Message] = field(default_factory=list)
    calls: int = 0

    def has_budget(self, reserve: int = 2) -> bool:
        """Return whether one more call fits while keeping ``reserve`` calls (recommend, terminate) back."""
        return self.calls + 1 + reserve <= self.request.max_steps

    async def call(self, name: str, arguments: dict[str, Any], note: str, *, reserve: int = 2) -> ToolResult:
        """Emit an assistant message with one tool call, run it, append the result verbatim."""
        if not self.has_budget(reserve):
            raise _OutOfBudget("max_steps")
        remaining = self.deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise _OutOfBudget("deadline")
        self.calls += 1
        digest = hashlib.sha256(self.request.episode_id.encode()).hexdigest()[:12]
        call = ToolCall(
            id=f"call_{digest}_{self.calls}",
            function=FunctionCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False)),
        )
        self.messages.append(
            Message(role="assistant", content=note if self.narrate else None, tool_calls=(call,))
        )
        try:
            async with asyncio.timeout(remaining):
                result = await self.call_tool(name, arguments, call.id)
        except TimeoutError:
            raise _OutOfBudget("deadline") from None
        self.messages.append(Message(role="tool", tool_call_id=call.id, content=result.content))
        return result


async def scripted_agent(
    request: AgentRequest, call_tool: ToolCaller, *, view_top: int = 5, narrate: bool = True
) -> AgentOutput:
    """Solve a task with rules: search, view the top candidates, pick per item, recommend, terminate.

    Args:
        request: the task.
        call_tool: how tools are called.
        view_top: how many search hits per item are viewed in detail.
        narrate: give assistant messages templated content (else their content is None).

    Returns:
        The conversation; ``usage`` is None (no model ran).
    """
    loop = asyncio.get_running_loop()
    run = _Run(request, call_tool, loop.time() + request.deadline_s, narrate)
    run.messages += [
        Message(role="system", content=system_prompt(prompt_text("shopping_agent.md"), request.tool_names())),
        Message(role="user", content=request.query),
    ]
    parsed = parse_query(request.query)
    chosen: list[str] = []
    stop: AgentStop = "terminated"
    try:
        if ASK_TOOL in request.tool_names() and parsed.budget is None and len(parsed.items) == 1:
            parsed = await _ask(run, parsed)
        cheapest = any(phrase in request.query.lower() for phrase in _WANTS_CHEAPEST)
        chosen = await _choose(run, parsed, view_top, cheapest=cheapest)
        if chosen:
            await run.call(
                "recommend_product", {"product_ids": ",".join(chosen)}, _say_recommend(chosen), reserve=1
            )
        status = "success" if chosen and len(chosen) == len(parsed.items) else "failure"
        await run.call("terminate", {"status": status}, f"Finished with status {status}.", reserve=0)
    except _OutOfBudget as exhausted:
        stop = exhausted.stop
    logger.debug(
        "agent=scripted episode=%s task=%s stop=%s items=%d chosen=%d calls=%d",
        request.episode_id,
        request.task_id,
        stop,
        len(parsed.items),
        len(chosen),
        run.calls,
    )
    return AgentOutput(messages=run.messages, usage=None, stop=stop)


def question_for(item: ItemSpec) -> str:
    """One question about the usual unsaid needs: the services the item does not name, brand, colour, size."""
    unsaid = [words for service, words in SERVICE_QUESTIONS.items() if service not in item.services]
    services = f"a particular service ({', '.join(unsaid)}), or " if unsaid else ""
    return f"Before I search: do you need {services}a particular brand, colour or size?"


async def _ask(run: _Run, parsed: ParsedQuery) -> ParsedQuery:
    """Ask the customer once; what the answer states joins the item (services, attribute words)."""
    item = parsed.items[0]
    question = question_for(item)
    result = await run.call(ASK_TOOL, {"question": question}, f"Asking the customer: {question}")
    answer = _answer_text(result)
    if not answer:
        return parsed
    services = tuple(dict.fromkeys((*item.services, *read_item(answer).services)))
    # An attribute the answer states ("the number of pieces has to be 1000+") adds its value's
    # words to the keywords, so the ranking prefers products that have it.
    values = [m.group(1) for m in _ATTRIBUTE_ANSWER.finditer(answer)]
    extra = [w for value in values for w in read_item(value).keywords or (value,) if w not in item.keywords]
    keywords = tuple(dict.fromkeys((*item.keywords, *extra)))
    return replace(parsed, items=(replace(item, services=services, keywords=keywords), *parsed.items[1:]))


_ATTRIBUTE_ANSWER = re.compile(r"\bthe [\w ]+? has to be ([^;]+?)(?=;|\.?$)")


def _answer_text(result: ToolResult) -> str:
    if result.error:
        return ""
    try:
        value = json.loads(result.content)
    except json.JSONDecodeError:
        return ""
    answer = value.get("answer") if isinstance(value, dict) else None
    return answer if isinstance(answer, str) else ""


async def _choose(run: _Run, parsed: ParsedQuery, view_top: int, *, cheapest: bool = False) -> list[str]:
    hits = [await _search(run, item) for item in parsed.items]
    if parsed.same_shop:
        hits = await _same_shop(run, parsed.items, hits)
    wanted = list(dict.fromkeys(h["product_id"] for item_hits in hits for h in item_hits[:view_top]))
    details: dict[str, dict[str, Any]] = {}
    if wanted and run.has_budget():
        result = await run.call(
            "view_product_information",
            {"product_ids": ",".join(wanted)},
            f"Checking the details of {len(wanted)} candidate products.",
        )
        details = _products_by_id(result)
    chosen: list[str] = []
    for item, item_hits in zip(parsed.items, hits, strict=True):
        merged = [{**hit, **details.get(hit["product_id"], {})} for hit in item_hits[:view_top]]
        if cheapest:
            # The best matches first, then the cheapest of them; a listing out of stock never.
            in_stock = [p for p in merged if p.get("stock") != 0] or merged
            ranked = sorted(in_stock, key=lambda p: (-match_score(item, p, 0), _price(p)))
        else:
            order = sorted(enumerate(merged), key=lambda pair: -match_score(item, pair[1], pair[0]))
            ranked = [product for _, product in order]
        if ranked:
            chosen.append(ranked[0]["product_id"])
    return chosen


def _price(product: dict[str, Any]) -> float:
    price = product.get("price")
    return float(price) if isinstance(price, int | float) else float("inf")


async def _search(run: _Run, item: ItemSpec, shop_id: str | None = None) -> list[dict[str, Any]]:
    """Search for an item, dropping filters one at a time until something comes back."""
    attempts = [(item.price_arg(), item.service_arg()), (item.price_arg(), None), (None, None)]
    for price, service in dict.fromkeys(attempts):
        if not run.has_budget():
            break
        arguments: dict[str, Any] = {"q": item.query(), "page": 1}
        if shop_id:
            arguments["shop_id"] = shop_id
        if price:
            arguments["price"] = price
        if service:
            arguments["service"] = service
        note = f'Searching for "{item.query()}"' + (f" in shop {shop_id}" if shop_id else "")
        note += "".join(f", {key} {arguments[key]}" for key in ("price", "service") if key in arguments) + "."
        hits = _hits(await run.call("find_product", arguments, note))
        if hits:
            return hits
    return []


async def _same_shop(
    run: _Run, items: tuple[ItemSpec, ...], hits: list[list[dict[str, Any]]]
) -> list[list[dict[str, Any]]]:
    """Look for one shop selling every item, starting from the shops of the first item's best hits."""
    shops = list(dict.fromkeys(str(h.get("shop_id")) for h in hits[0] if h.get("shop_id")))
    for shop_id in shops[:SHOP_TRIES]:
        in_shop = [[h for h in hits[0] if str(h.get("shop_id")) == shop_id]]
        for item in items[1:]:
            found = await _search(run, item, shop_id)
            if not found:
                break
            in_shop.append(found)
        if len(in_shop) == len(items):
            return in_shop
    return hits


def match_score(item: ItemSpec, product: dict[str, Any], rank: int) -> float:
    """Score how well a product (search hit merged with its details) fits an item; higher is better."""
    text = _product_text(product)
    keywords = [word for word in item.keywords if len(word) > 1]
    coverage = sum(word in text for word in keywords) / len(keywords) if keywords else 0.0
    score = 10.0 * coverage - 0.1 * rank
    price = product.get("price")
    low, high = item.price
    if isinstance(price, int | float) and (low is not None or high is not None):
        fits = (low is None or price >= low) and (high is None or price <= high)
        score += 3.0 if fits else -5.0
    services = product.get("service") or ()
    for service in item.services:
        score += 2.0 if service in services else -3.0
    return score


def _product_text(product: dict[str, Any]) -> str:
    parts: list[str] = [str(product.get(key, "")) for key in ("title", "brand")]
    sku = product.get("sku_options")
    if isinstance(sku, dict):
        parts += [
            str(value) for variant in sku.values() if isinstance(variant, dict) for value in variant.values()
        ]
    attributes = product.get("attributes")
    if isinstance(attributes, dict):
        for values in attributes.values():
            parts += [str(v) for v in values] if isinstance(values, list) else [str(values)]
    return " ".join(parts).lower()


def _hits(result: ToolResult) -> list[dict[str, Any]]:
    if result.error:
        return []
    try:
        value = json.loads(result.content)
    except json.JSONDecodeError:
        return []
    if not isinstance(value, list):
        return []
    return [
        {**hit, "product_id": str(hit["product_id"])}
        for hit in value
        if isinstance(hit, dict) and hit.get("product_id")
    ]


def _products_by_id(result: ToolResult) -> dict[str, dict[str, Any]]:
    if result.error:
        return {}
    try:
        value = json.loads(result.content)
    except json.JSONDecodeError:
        return {}
    products = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return {str(p["product_id"]): p for p in products if isinstance(p, dict) and p.get("product_id")}


def _say_recommend(ids: list[str]) -> str:
    return f"Recommending {', '.join(ids)}."
