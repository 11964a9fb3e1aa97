"""The ``grpo`` format: each observed task as an RL prompt, its ground truth and rewards (``GRPOTrainer``).

The extra columns reach GRPO's reward functions by name: ``task_id``, ``intent``,
``ground_truth`` (the task's definition), ``observed_rewards``, ``observed_success`` and
``observed_turn_rewards`` (every stored episode of the task, in ingest order).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from datasets import Features, Json, List, Value

from arena.tools import DEFAULT_TOOLSET
from arena.types import Task
from curation.chat import message, schemas
from curation.curate import Curation
from curation.formats.checks import prompt
from curation.formats.format import CONVERSATION, STATIC_WORLD, TOOLS, WORLD, ExportRow, Format, World
from curation.stages.split import cluster_of
from curation.workspace import Observed


def grpo_row(
    task: Task,
    *,
    best: dict[str, Any] | None,
    observed: Sequence[Observed],
    world: World = STATIC_WORLD,
) -> dict[str, Any]:
    """A task as an RL prompt with its ground truth and the rewards its served episodes got.

    The system message (and tool set) come from the task's best-ranked kept trace; a task
    with none gets the user message alone and the default tool set. ``observed`` is
    ``Workspace.observed(task_id)``: every judged episode of the task, in ingest order.
    """
    head = []
    if best is not None and best["prompt_length"] == 2:
        head.append(best["messages"][0])
    head.append(message("user", task.query))
    return {
        "prompt": head,
        "tools": schemas(best["toolset"] if best is not None else DEFAULT_TOOLSET),
        "task_id": task.task_id,
        "intent": task.intent,
        "ground_truth": {"task_id": task.task_id, **task.definition()},
        "observed_rewards": [o.score for o in observed],
        "observed_success": [o.success for o in observed],
        "observed_turn_rewards": [list(o.turn_rewards) for o in observed],
        **world,
    }


def rows(curation: Curation) -> Iterator[ExportRow]:
    """One RL prompt per observed task, by task id."""
    workspace = curation.workspace
    for task_id, task in sorted(curation.tasks.items()):
        best = workspace.best(task_id)
        made = grpo_row(
            task,
            best=best.document if best else None,
            observed=workspace.observed(task_id),
            world=curation.worlds.get(task_id, STATIC_WORLD),
        )
        yield ExportRow(made, task_id, task_id, cluster_of(task))


def check(row: dict[str, Any], tools: set[str], problems: list[str]) -> None:
    """The prompt alone, the task's gold, one observed entry per episode, rewards in [0, 1]."""
    prompt(row["prompt"], problems)
    truth = row["ground_truth"]
    if not isinstance(truth, dict) or not isinstance(truth.get("gold"), list) or not truth["gold"]:
        problems.append("ground_truth must be the task's definition with its gold items")
    lengths = {len(row[k]) for k in ("observed_rewards", "observed_success", "observed_turn_rewards")}
    if len(lengths) != 1:
        problems.append("observed_* columns must have one entry per observed episode")
    rewards: Sequence[Any] = row["observed_rewards"]
    if any(not isinstance(r, float | int) or not 0 <= r <= 1 for r in rewards):
        problems.append("observed_rewards must be scores in [0, 1]")
    if not isinstance(row["task_id"], str) or not row["task_id"]:
        problems.append("task_id must be a non-empty string")


FORMAT = Format(
    name="grpo",
    features=Features(
        {
            "prompt": CONVERSATION,
            "tools": TOOLS,
            "task_id": Value("string"),
            "intent": Value("string"),
            "ground_truth": Json(),
            "observed_rewards": List(Value("float64")),
            "observed_success": List(Value("bool")),
            "observed_turn_rewards": List(List(Value("float64"))),
            **WORLD,
        }
    ),
    build=rows,
    check=check,
    card_columns=(
        "prompt",
        "tools",
        "task_id",
        "intent",
        "ground_truth",
        "observed_rewards",
        "observed_success",
        "observed_turn_rewards",
    ),
    dataset_type="conversational prompt-only; the extra columns reach the reward functions",
    trainer="GRPOTrainer",
    every_task=True,
)
