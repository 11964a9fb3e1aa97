"""`arena eval --world`: evaluate on a world pack (tools over its overlay, tasks from the pack)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from arena.errors import WorldError
from arena.index import SearchIndex
from arena.types import Task, ToolLogEntry
from arena.world.overlay import WorldOverlay
from arena.world.pack import load_pack
from arena.world.seed import base_hash
from arena.world.types import WorldPack, WorldTask
from judging.context import ProductLookup
from judging.world import judged_at_answer


@dataclass(frozen=True)
class EvalWorld:
    """A loaded world pack to evaluate on: its overlay over the base index and its tasks by id."""

    pack: WorldPack
    overlay: WorldOverlay
    tasks: Mapping[str, WorldTask]

    @property
    def world_id(self) -> str:
        """The pack's world id."""
        return self.pack.manifest.world_id

    def judged_against(self, task: Task, log: tuple[ToolLogEntry, ...]) -> tuple[Task | None, ProductLookup]:
        """The truth and the product lookup a sample of ``task`` is judged with (at its answer's version)."""
        world_task = self.tasks.get(task.task_id)
        if world_task is None:
            return None, self.overlay.products
        return judged_at_answer(world_task, self.overlay, log)


def read_world_tasks(pack_dir: Path) -> tuple[WorldPack, list[Task]]:
    """A pack (verified) and its tasks, in pack order.

    Raises:
        WorldError: the pack is refused (``arena.world.pack.load_pack``).
    """
    pack = load_pack(pack_dir)
    return pack, [world_task.task for world_task in pack.tasks]


def eval_world(pack: WorldPack, base: SearchIndex) -> EvalWorld:
    """The pack applied over ``base``.

    Raises:
        WorldError: the pack was compiled over another base index.
    """
    if base_hash(base) != pack.manifest.base_hash:
        raise WorldError(
            f"world {pack.manifest.world_id} was compiled over base {pack.manifest.base_hash[:16]}, "
            f"not this index ({base_hash(base)[:16]})"
        )
    return EvalWorld(
        pack=pack,
        overlay=WorldOverlay(base, pack.delta),
        tasks={world_task.task.task_id: world_task for world_task in pack.tasks},
    )
