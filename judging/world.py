"""Judging a world episode: the task and the world as they were at the moment of the answer.

A world may change during an episode (``arena.world.changes``); each logged result records the
world version it came from. The outcome is judged against the world at the answer's version:
the task's ground truth there (``arena.world.changes.truth_at``) and the products as they were
then. Grounding reconciles each cited price against the version of the result that showed it
(``judging.grounding``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from arena.types import Product, Task, ToolLogEntry
from arena.world.changes import truth_at
from arena.world.overlay import WorldOverlay
from arena.world.types import WorldTask

ANSWER_TOOL = "recommend_product"


def answer_version(log: Sequence[ToolLogEntry]) -> int:
    """The world version at the answer: the last successful ``recommend_product`` call's.

    Else the last call's; 0 with no call or no version.
    """
    ordered = sorted(log, key=lambda e: e.seq)
    answers = [e for e in ordered if e.tool == ANSWER_TOOL and e.status == "ok"]
    last = answers[-1] if answers else (ordered[-1] if ordered else None)
    return (last.world_version or 0) if last is not None else 0


def judged_at_answer(
    task: WorldTask, world: WorldOverlay, log: Sequence[ToolLogEntry]
) -> tuple[Task | None, Callable[[Sequence[str]], Mapping[str, Product]]]:
    """What a world episode's answer is judged against: the truth and the product lookup at its version.

    Pass them to ``judging.judge.judge`` as ``truth`` and ``products``.
    """
    version = answer_version(log)
    return truth_at(task, version), world.at_version(version).products
