"""Changes during an episode: world versions, the changes a compiler emits, and the truth at a version.

A pack's delta may declare changes (``WorldChange``: a product's price or stock from the
``after_calls``-th tool call of an episode on). World version ``v`` is the delta with the first
``v`` changes applied; the call with log ``seq`` ``s`` sees version ``WorldDelta.version_at(s)``,
the number of changes with ``after_calls <= s``. Every episode starts at version 0, so two
agents see the same world at the same step whatever the other does.

The compiler (:func:`compile_changes`) reprices the cheapest listing of some product tasks
above their runner-up and sells out that of others, so an agent that recommends on what it saw
first is wrong by the time it answers (a sold-out pick fails at the answer, ``judging.world``);
each task the changes reach records its ground truth per version
(``WorldTask.revisions``), and :func:`truth_at` is the task as it is judged at a version.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from arena.constraints import unmet_constraints
from arena.types import PriceConstraint, Product, Task
from arena.world.overlay import WorldOverlay
from arena.world.types import GoldRevision, WorldChange, WorldSpec, WorldTask


def cheapest_fits(world: WorldOverlay, task: WorldTask) -> list[Product]:
    """A cheapest-in-stock task's candidates that fit every constraint and are in stock, cheapest first."""
    item = task.task.gold[0]
    listings = world.products(task.candidates)
    stock = world.stock_levels(list(listings))
    return sorted(
        (p for p in listings.values() if stock.get(p.product_id, 1) > 0 and not unmet_constraints(p, item)),
        key=lambda p: (p.price, p.product_id),
    )


def revisions(world: WorldOverlay, task: WorldTask) -> tuple[GoldRevision, ...] | None:
    """The task's ground truth at every version of ``world`` where it moves (None: no fit at a version)."""
    found: list[GoldRevision] = []
    for version in range(len(world.delta.changes) + 1):
        fits = cheapest_fits(world.at_version(version), task)
        if not fits:
            return None
        best = GoldRevision(version=version, product_id=fits[0].product_id, price=fits[0].price)
        if not found or (found[-1].product_id, found[-1].price) != (best.product_id, best.price):
            found.append(best)
    return tuple(found)


def compile_changes(
    world: WorldOverlay, tasks: Sequence[WorldTask], rng: random.Random, spec: WorldSpec
) -> tuple[WorldOverlay, list[WorldTask]]:
    """Reprice or sell out the cheapest fit of some product tasks mid-episode; revise what they reach.

    Up to ``spec.changes`` chosen tasks see their cheapest fit become dearer than its runner-up,
    and up to ``spec.stock_changes`` others see it sell out (stock 0), each after a drawn number
    of calls (``spec.change_after``); either way an agent that answers on what it saw first is
    wrong by the time it answers. Voucher baskets are left alone (their budgets hold). Returns
    the world with the changes declared and every task, those the changes reach with their
    revisions.
    """
    reserved = {g.product_id for t in tasks if t.basis == "world_voucher" for g in t.task.gold}
    eligible: list[tuple[Product, Product]] = []
    for task in tasks:
        fits = cheapest_fits(world, task) if task.basis == "cheapest_in_stock" else []
        if len(fits) >= 2 and fits[0].product_id not in reserved:
            eligible.append((fits[0], fits[1]))
    wanted = spec.changes + spec.stock_changes
    drawn = rng.sample(range(len(eligible)), min(wanted, len(eligible)))
    # The first draws sell out, the rest reprice: a world with few eligible tasks gets both kinds.
    selling_out = set(drawn[: spec.stock_changes])
    changes: list[WorldChange] = []
    revised: dict[int, tuple[GoldRevision, ...]] = {}
    for number in sorted(drawn):
        gold, runner_up = eligible[number]
        if number in selling_out:
            change = WorldChange(
                after_calls=rng.randint(*spec.change_after), product_id=gold.product_id, stock=0
            )
        else:
            price = max(round(runner_up.price * rng.uniform(1.05, 1.3), 2), round(runner_up.price + 0.01, 2))
            after = rng.randint(*spec.change_after)
            change = WorldChange(after_calls=after, product_id=gold.product_id, price=price)
        if any(c.product_id == change.product_id for c in changes):
            continue  # two tasks may share a cheapest fit: one change each
        changes, revised = _tried(world, tasks, changes, change, revised)
    revised_tasks = [
        task.model_copy(update={"revisions": revised[i]}) if i in revised else task
        for i, task in enumerate(tasks)
    ]
    return world.with_changes(changes), revised_tasks


def _tried(
    world: WorldOverlay,
    tasks: Sequence[WorldTask],
    changes: list[WorldChange],
    change: WorldChange,
    revised: dict[int, tuple[GoldRevision, ...]],
) -> tuple[list[WorldChange], dict[int, tuple[GoldRevision, ...]]]:
    """The changes with ``change`` and the revisions they give; as they were where a task loses every fit."""
    trial = sorted([*changes, change], key=lambda c: (c.after_calls, c.product_id))
    reached = _reached(world.with_changes(trial), tasks)
    return (trial, reached) if reached is not None else (changes, revised)


def _reached(world: WorldOverlay, tasks: Sequence[WorldTask]) -> dict[int, tuple[GoldRevision, ...]] | None:
    """The revisions of every product task the changes reach (None: one has no fit at some version)."""
    changed = {c.product_id for c in world.delta.changes}
    reached: dict[int, tuple[GoldRevision, ...]] = {}
    for i, task in enumerate(tasks):
        if task.basis != "cheapest_in_stock" or not changed & set(task.candidates):
            continue
        found = revisions(world, task)
        if found is None:
            return None
        if len(found) > 1:
            reached[i] = found
    return reached


def truth_at(task: WorldTask, version: int) -> Task | None:
    """The task as judged at ``version`` (None where it has no revisions: its own gold holds).

    Its gold moves to that version's cheapest fit and is priced at most that fit's price, so a
    pick that was the cheapest before a change fails after it.
    """
    if not task.revisions:
        return None
    revision = [r for r in task.revisions if r.version <= version][-1]
    item = task.task.gold[0]
    ceiling = PriceConstraint(mode="less than", high=revision.price)
    gold = item.model_copy(update={"product_id": revision.product_id, "price": (*item.price, ceiling)})
    data = task.task.model_dump(exclude={"task_id"})
    data["gold"] = (gold,)
    return Task.model_validate(data)
