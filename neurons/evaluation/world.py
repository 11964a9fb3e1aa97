"""`arena eval --world`: a world pack's tasks (``judging.world.WorldJudging`` applies the pack)."""

from __future__ import annotations

from pathlib import Path

from arena.types import Task
from arena.world.pack import load_pack
from arena.world.types import WorldPack


def read_world_tasks(pack_dir: Path) -> tuple[WorldPack, list[Task]]:
    """A pack (verified) and its tasks, in pack order.

    Raises:
        WorldError: the pack is refused (``arena.world.pack.load_pack``).
    """
    pack = load_pack(pack_dir)
    return pack, [world_task.task for world_task in pack.tasks]
