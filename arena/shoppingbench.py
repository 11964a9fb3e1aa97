"""Lossless conversion between ShoppingBench task rows and `arena.types.Task`.

ShoppingBench ships four task files; the intent comes from the file name:

- ``synthesize_product_*``: ``{"query", "reward": {item}}`` (one gold item, a dict);
- ``synthesize_shop_*``: ``{"query", "reward": [items]}`` (all items from one shop);
- ``synthesize_voucher_*``: ``{"query", "reward": [items], "voucher": {..., "budget"}}``;
- ``synthesize_web_simpleqa_*``: ``{"query", "Knowledge_Attribute", "reward": {product record}}``.

A reward item is ``{"product_id", "title": [titles], "sku_options": [{option: value}],
"attributes": [{key: [values]}], "service": [services], "price": [{mode: [low, high]}]}``
with every key but the first two optional. Price modes are ``less than`` (``[null, high]``),
``greater than`` (``[low, null]``) and ``between`` (``[low, high]``), bounds inclusive.

`task_to_row(task_from_row(row))` reproduces the row (as parsed JSON; integral numbers come
back as ints). Two things are normalised because they cannot change a score: an empty
constraint list is the same as an absent one, and a price dict with several modes becomes
one dict per mode (no public row has either).

Difficulty is a documented bucketing (the tasks helper may refine it): a task's *load* is
its constraint count (prices, services, sku pairs, attribute values over all gold items)
plus 2 per gold item beyond the first, plus 2 for a voucher, plus 4 for a knowledge hop (the web question).
Load <= 3 is easy, <= 9 medium, above that hard.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arena.catalog import open_text
from arena.errors import InvalidTask
from arena.types import Difficulty, GoldItem, Intent, PriceConstraint, Product, Task, Voucher

SOURCE = "shoppingbench"
PRICE_MODES = ("less than", "greater than", "between")
# File-name stems (after ``synthesize_``) and the intent they hold.
FILE_INTENTS: tuple[tuple[str, Intent], ...] = (
    ("web_simpleqa", "knowledge"),
    ("product", "product"),
    ("shop", "shop"),
    ("voucher", "voucher"),
)
VOUCHER_NUMBERS = ("threshold", "face_value", "cap")
EASY_MAX_LOAD = 3
MEDIUM_MAX_LOAD = 9


def intent_from_path(path: Path | str) -> Intent:
    """Return the intent a ShoppingBench task file holds, from its name.

    Raises:
        InvalidTask: the name is not one of ``synthesize_{product,shop,voucher,web_simpleqa}*``.
    """
    name = Path(path).name
    for stem, intent in FILE_INTENTS:
        if name.startswith(f"synthesize_{stem}"):
            return intent
    raise InvalidTask(
        f"cannot tell the intent of {name}: expected synthesize_<product|shop|voucher|web_simpleqa>"
    )


def task_from_row(row: Mapping[str, Any], *, intent: Intent, source: str = SOURCE) -> Task:
    """Convert one ShoppingBench task row into a Task.

    Args:
        row: the decoded JSON row.
        intent: what the row's file holds (see `intent_from_path`).
        source: recorded as ``Task.source``.

    Raises:
        InvalidTask: the row does not have ShoppingBench's shape for that intent.
    """
    try:
        return _task_from_row(row, intent, source)
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        raise InvalidTask(f"bad {intent} row: {_short(exc)}") from exc


def _task_from_row(row: Mapping[str, Any], intent: Intent, source: str) -> Task:
    reward = row["reward"]
    voucher: Voucher | None = None
    budget: float | None = None
    knowledge: str | None = None
    raw_knowledge: int | float | None = None
    if intent == "knowledge":
        gold: tuple[GoldItem, ...] = (_knowledge_gold(reward),)
        value = row["Knowledge_Attribute"]
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"Knowledge_Attribute must be a string or number, got {value!r}")
        knowledge = value if isinstance(value, str) else str(value)
        raw_knowledge = None if isinstance(value, str) else value
    elif intent == "product":
        if not isinstance(reward, dict):
            raise ValueError("a product row's reward is one item (a JSON object)")
        gold = (_gold_item(reward),)
    else:
        if not isinstance(reward, list) or not reward:
            raise ValueError(f"a {intent} row's reward is a non-empty list of items")
        gold = tuple(_gold_item(item) for item in reward)
    if intent == "voucher":
        fields = dict(row["voucher"])
        budget = float(fields.pop("budget"))
        voucher = Voucher.model_validate(fields)
    task = Task(
        intent=intent,
        query=row["query"],
        gold=gold,
        voucher=voucher,
        budget=budget,
        knowledge_attribute=knowledge,
        knowledge_attribute_raw=raw_knowledge,
        source=source,
    )
    return task.model_copy(update={"difficulty": difficulty(task)})


def _gold_item(item: Mapping[str, Any]) -> GoldItem:
    unknown = set(item) - {"product_id", "title", "price", "service", "sku_options", "attributes"}
    if unknown:
        raise ValueError(f"unknown reward keys {sorted(unknown)}")
    prices: list[PriceConstraint] = []
    for entry in item.get("price") or ():
        for mode, bounds in entry.items():
            low, high = bounds
            prices.append(PriceConstraint(mode=mode, low=low, high=high))
    return GoldItem(
        product_id=item["product_id"],
        titles=tuple(item["title"]),
        price=tuple(prices),
        service=tuple(item.get("service") or ()),
        sku_options=tuple(item.get("sku_options") or ()),
        attributes=tuple(item.get("attributes") or ()),
    )


def _knowledge_gold(record: Any) -> GoldItem:
    if not isinstance(record, dict):
        raise ValueError("a knowledge row's reward is a product record (a JSON object)")
    product = Product.model_validate(record)
    return GoldItem(product_id=product.product_id, titles=(product.title,), product=product)


def task_to_row(task: Task) -> dict[str, Any]:
    """Convert a Task back into a ShoppingBench task row (the inverse of `task_from_row`)."""
    row: dict[str, Any] = {"query": task.query}
    if task.intent == "knowledge":
        kw: Any = task.knowledge_attribute_raw
        row["Knowledge_Attribute"] = task.knowledge_attribute if kw is None else kw
        row["reward"] = _knowledge_reward(task.gold[0])
    elif task.intent == "product":
        row["reward"] = _reward_item(task.gold[0])
    else:
        row["reward"] = [_reward_item(item) for item in task.gold]
    if task.voucher is not None:
        voucher = task.voucher.model_dump(mode="json")
        voucher.update({name: _number(voucher[name]) for name in VOUCHER_NUMBERS})
        voucher["budget"] = _number(task.budget)
        row["voucher"] = voucher
    return row


def _reward_item(item: GoldItem) -> dict[str, Any]:
    out: dict[str, Any] = {"product_id": item.product_id, "title": list(item.titles)}
    if item.sku_options:
        out["sku_options"] = [dict(option) for option in item.sku_options]
    if item.attributes:
        out["attributes"] = [{k: list(v) for k, v in attr.items()} for attr in item.attributes]
    if item.service:
        out["service"] = list(item.service)
    if item.price:
        out["price"] = [{p.mode: [_number(p.low), _number(p.high)]} for p in item.price]
    return out


def _knowledge_reward(item: GoldItem) -> dict[str, Any]:
    if item.product is None:
        return {"product_id": item.product_id, "title": item.titles[0]}
    return item.product.model_dump(mode="json")


def _number(value: float | None) -> int | float | None:
    # ShoppingBench writes integral bounds, thresholds and budgets as ints.
    if value is not None and float(value).is_integer():
        return int(value)
    return value


def load_shoppingbench(paths: Iterable[Path | str], *, source: str = SOURCE) -> list[Task]:
    """Load ShoppingBench task files (``.jsonl`` or ``.jsonl.gz``), intent from each file name.

    Raises:
        InvalidTask: a file name has no known intent, or a row is bad (file and line given).
        FileNotFoundError: a file is missing.
    """
    tasks: list[Task] = []
    for raw in paths:
        path = Path(raw)
        intent = intent_from_path(path)
        with open_text(path) as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    tasks.append(task_from_row(json.loads(line), intent=intent, source=source))
                except (InvalidTask, ValueError) as exc:
                    raise InvalidTask(f"{path}:{line_no}: {exc}") from exc
    return tasks


def task_load(task: Task) -> int:
    """Return the difficulty load of a task (see the module docstring)."""
    load = sum(item.constraint_count() for item in task.gold) + 2 * (len(task.gold) - 1)
    if task.voucher is not None:
        load += 2
    if task.intent == "knowledge":
        load += 4
    return load


def difficulty(task: Task) -> Difficulty:
    """Bucket a task into easy, medium or hard by its load."""
    load = task_load(task)
    if load <= EASY_MAX_LOAD:
        return "easy"
    return "medium" if load <= MEDIUM_MAX_LOAD else "hard"


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "row"
        return f"{where}: {first['msg']}"
    if isinstance(exc, KeyError):
        return f"missing key {exc}"
    return str(exc)
