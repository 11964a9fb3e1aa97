"""A compiled world for the environment's tests: a pack over the world base whose changes reach some tasks."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from arena.index import SearchIndex
from arena.world.tasks import cheapest_in_stock
from arena.world.types import HeldService, WorldTask
from neurons.environment.session import Environment
from neurons.environment.tasks import EnvTasks, pack_tasks


@pytest.fixture(scope="session")
def env_tasks(world_pack_dir: Path, world_base: SearchIndex) -> EnvTasks:
    """The pack's tasks over its base, with the shopper (tool set arena-3)."""
    return pack_tasks(world_pack_dir, world_base)


@pytest.fixture
def env(env_tasks: EnvTasks) -> Environment:
    """A fresh environment with the default budgets and turn rewards."""
    return Environment(env_tasks)


def world_task(tasks: EnvTasks, *, revised: bool = False, held_back: bool = True) -> WorldTask:
    """A product task of the pack: one the world's changes reach (``revised``), with a held-back need."""
    assert tasks.world is not None
    for task in tasks.world.pack.tasks:
        if task.basis != "cheapest_in_stock" or bool(task.revisions) != revised:
            continue
        if bool(task.profile.held_back) == held_back:
            return task
    raise AssertionError(f"no product task with revised={revised} held_back={held_back}")


def deciding_task(tasks: EnvTasks) -> tuple[WorldTask, str]:
    """A product task whose held-back service decides the answer, and the answer to the request as stated."""
    assert tasks.world is not None
    for task in tasks.world.pack.tasks:
        held = task.profile.held_back
        if task.basis != "cheapest_in_stock" or len(held) != 1 or not isinstance(held[0], HeldService):
            continue
        item = task.task.gold[0]
        stated_item = item.model_copy(
            update={"service": tuple(s for s in item.service if s != held[0].service)}
        )
        stated = cheapest_in_stock(
            task.task.model_copy(update={"gold": (stated_item,)}),
            tasks.world.overlay,
            random.Random(0),
            held_back=0,
        )
        if stated is not None and stated.task.gold[0].product_id != item.product_id:
            return task, stated.task.gold[0].product_id
    raise AssertionError("no product task whose held-back service decides the answer")
