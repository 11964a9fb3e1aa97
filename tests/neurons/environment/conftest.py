"""A compiled world for the environment's tests: a pack over the world base whose changes reach some tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.index import SearchIndex
from arena.world.compile import compile_world
from arena.world.pack import save_pack
from arena.world.types import WorldTask
from neurons.environment.session import Environment
from neurons.environment.tasks import EnvTasks, pack_tasks

# A seed whose world reprices or sells out the cheapest listing of some tasks mid-episode.
WORLD_SEED = "changes-both"


@pytest.fixture(scope="session")
def world_pack_dir(world_base: SearchIndex, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world pack compiled over the world base (read-only for tests)."""
    directory = tmp_path_factory.mktemp("env-world") / "pack"
    save_pack(compile_world(WORLD_SEED, world_base), directory)
    return directory


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
