"""`arena eval --world`: the tasks of a world pack, and the pack applied over the base index."""

from __future__ import annotations

from pathlib import Path

from arena.index import SearchIndex
from arena.types import Task
from arena.world.pack import load_pack
from arena.world.types import WorldPack
from judging.world import WorldJudging


def read_world_tasks(pack_dir: Path) -> tuple[WorldPack, list[Task]]:
    """A pack (verified) and its tasks, in pack order.

    Raises:
        WorldError: the pack is refused (``arena.world.pack.load_pack``).
    """
    pack = load_pack(pack_dir)
    return pack, [world_task.task for world_task in pack.tasks]


def eval_world(pack: WorldPack, base: SearchIndex) -> WorldJudging:
    """The pack applied over ``base`` (the tools' world, and what each sample is judged against).

    Raises:
        WorldError: the pack was compiled over another base index.
    """
    return WorldJudging.over(pack, base)
