"""Difficulty buckets of a task, as ORO (Bittensor subnet 15) buckets ShoppingBench's tasks.

- product (and knowledge): the number of reward fields counted ORO's way: product id and title
  (2), plus one per requested sku variant, per attribute, per price constraint, per service.
  2..4 is easy, 5..6 medium, 7 or more hard. So 0..2 constraints beyond the title are easy,
  3..4 medium, 5 or more hard.
- shop: the number of items: 2 easy, 3 medium, 4 (or more) hard.
- voucher: a composite score, items + 1 for a shop-only voucher + 1 for a percentage discount:
  up to 2 easy, 3..4 medium, 5 or more hard.
"""

from __future__ import annotations

from arena.types import Difficulty, GoldItem, Task


def oro_field_count(item: GoldItem) -> int:
    """Count a gold item's reward fields as ORO does (id and title included; a variant counts once)."""
    return 2 + len(item.sku_options) + len(item.attributes) + len(item.price) + len(item.service)


def _bucket(score: int, easy_max: int, medium_max: int) -> Difficulty:
    if score <= easy_max:
        return "easy"
    if score <= medium_max:
        return "medium"
    return "hard"


def difficulty(task: Task) -> Difficulty:
    """Return the task's difficulty bucket (see the module docstring for the rules per intent)."""
    if task.intent == "shop":
        return _bucket(len(task.gold), 2, 3)
    if task.intent == "voucher" and task.voucher is not None:
        score = len(task.gold)
        score += task.voucher.voucher_type == "shop"
        score += task.voucher.discount_type == "percentage"
        return _bucket(score, 2, 4)
    return _bucket(oro_field_count(task.gold[0]), 4, 6)


def with_difficulty(task: Task) -> Task:
    """Return the task with its ``difficulty`` recomputed (the task id does not change)."""
    return task.model_copy(update={"difficulty": difficulty(task)})
