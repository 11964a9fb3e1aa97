"""What an environment's sessions run on: tasks, the tools' index (a world's overlay), the shopper, the judge.

:class:`EnvTasks` is built once per environment from a world pack over its base index
(:func:`pack_tasks`: the tools answer from the pack's overlay, at the world version each call
sees, a task with a hidden profile gets the pack's shopper, and an answer is judged at its own
version, exactly as the validator's world rounds do: ``neurons.validator.worlds.RoundWorld``) or
from a task file over an index (:func:`file_tasks`: a static catalog, no shopper).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.index import SearchIndex
from arena.tasks import load_tasks
from arena.tools import DEFAULT_TOOLSET, TOOLSETS, ToolContext
from arena.types import Task, ToolLogEntry
from arena.world.pack import load_pack
from arena.world.shopper import ShopperSession
from judging.config import JudgeConfig
from judging.world import AtAnswer, WorldJudging
from neurons.environment.errors import EnvError, UnknownTask

# A pack's tasks are asked with the shopper on hand (ask_user), as the validator's world rounds can.
PACK_TOOLSET = "arena-3"


@dataclass(frozen=True)
class EnvTasks:
    """The tasks sessions are reset to, the tools' context, and what an episode is judged against.

    Attributes:
        tasks: the tasks, in file or pack order (a reset by seed indexes into them).
        context: the index the tools answer from (a world's overlay) and the tool set offered.
        judge_config: the judge's configuration (its tool set is the one offered).
        world: the world pack applied over its base (None: a static catalog).
    """

    tasks: tuple[Task, ...]
    context: ToolContext
    judge_config: JudgeConfig
    world: WorldJudging | None = None
    by_id: dict[str, Task] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.tasks:
            raise EnvError("an environment needs at least one task")
        object.__setattr__(self, "by_id", {task.task_id: task for task in self.tasks})

    @property
    def toolset(self) -> str:
        """The tool set sessions are offered (and judged with)."""
        return self.context.toolset

    @property
    def world_id(self) -> str | None:
        """The world pack's id (None: a static catalog)."""
        return self.world.world_id if self.world is not None else None

    @property
    def pack_hash(self) -> str | None:
        """The world pack's hash (None: a static catalog)."""
        return self.world.pack_hash if self.world is not None else None

    def pick(self, *, task_id: str | None = None, seed: int | None = None) -> Task:
        """The task a reset asks for: by id, else the ``seed``-th (modulo), else one drawn at random.

        Raises:
            UnknownTask: ``task_id`` is not one of the tasks.
        """
        if task_id is not None:
            task = self.by_id.get(task_id)
            if task is None:
                raise UnknownTask(f"no task {task_id[:80]!r} here ({len(self.tasks)} tasks)")
            return task
        if seed is not None:
            return self.tasks[seed % len(self.tasks)]
        return random.choice(self.tasks)

    def shopper(self, task_id: str) -> ShopperSession | None:
        """A fresh simulated shopper for one episode of the task, where the tool set lets agents ask."""
        return self.world.shopper(task_id, self.toolset) if self.world is not None else None

    def against(self, task: Task, log: Sequence[ToolLogEntry]) -> AtAnswer:
        """What an episode's answer is judged against: the world at the answer's version, or the catalog."""
        if self.world is not None:
            return self.world.against(task, log, self.toolset)
        return AtAnswer(self.context.index.products)


def _check_toolset(toolset: str) -> None:
    if toolset not in TOOLSETS:
        raise EnvError(f"unknown tool set {toolset!r} (known: {', '.join(TOOLSETS)})")


def pack_tasks(pack_dir: Path, base: SearchIndex, *, toolset: str = PACK_TOOLSET) -> EnvTasks:
    """A world pack's tasks over its base index: the tools over the pack's overlay, as a world round runs.

    Raises:
        WorldError: the pack is refused, or was compiled over another base.
        EnvError: an unknown tool set.
    """
    _check_toolset(toolset)
    world = WorldJudging.over(load_pack(pack_dir), base)
    return EnvTasks(
        tasks=tuple(world_task.task for world_task in world.pack.tasks),
        context=ToolContext(world.overlay, toolset),
        judge_config=JudgeConfig(toolset=toolset, catalog_version=base.catalog_version),
        world=world,
    )


def file_tasks(path: Path, index: SearchIndex, *, toolset: str = DEFAULT_TOOLSET) -> EnvTasks:
    """A task file's tasks over a static index (no world, no shopper).

    Raises:
        InvalidTask: the file is missing or unreadable.
        EnvError: an unknown tool set, or a file without a valid task.
    """
    _check_toolset(toolset)
    return EnvTasks(
        tasks=tuple(load_tasks(path)),
        context=ToolContext(index, toolset),
        judge_config=JudgeConfig(toolset=toolset, catalog_version=index.catalog_version),
    )
