"""The judge on real agent output: the scripted reference agent (the axis-B baseline) over real tools.

Sixty ShoppingBench tasks, their from-tasks catalog indexed, the scripted agent calling the real
tools through a logging caller (as the tool server logs): every trajectory must be well formed
and honest (no rejects, nothing fabricated or hallucinated), most must succeed, and the set must
be labelled a harness.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from arena.catalog import write_products
from arena.from_tasks import build_from_tasks
from arena.index import SearchIndex, build_index, open_index
from arena.shoppingbench import load_shoppingbench
from arena.tools import ToolContext, tool_schemas
from arena.types import Task, ToolLogEntry, Trajectory
from judging.axis import axis_for_miner
from judging.judge import JudgeConfig, judge
from judging.types import Judgment
from judging.world import AtAnswer
from neurons.miner.agents.contract import AgentRequest
from neurons.miner.agents.scripted import scripted_agent
from tests.arena.logging_caller import logging_caller


@pytest.fixture(scope="module")
def world(
    shoppingbench_files: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[Task], Path]:
    tasks = load_shoppingbench(shoppingbench_files)[::15]
    catalog = build_from_tasks(tasks, seed=1)
    directory = tmp_path_factory.mktemp("agents")
    write_products(catalog.products, directory / "catalog.jsonl")
    build_index([directory / "catalog.jsonl"], directory / "index")
    return tasks, directory / "index"


async def episode(task: Task, index: SearchIndex, number: int, narrate: bool) -> tuple[Trajectory, Judgment]:
    ctx = ToolContext(index=index, toolset="sb-1")
    log: list[ToolLogEntry] = []

    call_tool = logging_caller(ctx, f"e{number}", log)

    request = AgentRequest(
        task_id=task.task_id, episode_id=f"e{number}", query=task.query, tools=tuple(tool_schemas())
    )
    output = await scripted_agent(request, call_tool, narrate=narrate)
    trajectory = output.trajectory(request, "hk-scripted")
    judgment = await judge(
        task, trajectory, log=log, against=AtAnswer(index.products), completer=None, config=JudgeConfig()
    )
    return trajectory, judgment


@pytest.mark.parametrize("narrate", [True, False])
async def test_scripted_agent_is_honest_and_labelled_a_harness(
    world: tuple[list[Task], Path], narrate: bool
) -> None:
    tasks, index_dir = world
    index = open_index(index_dir)
    try:
        results = [await episode(task, index, n, narrate) for n, task in enumerate(tasks)]
    finally:
        index.close()
    judgments = [j for _, j in results]
    assert all(j.rejects == () for j in judgments), Counter(j.rejects for j in judgments)
    assert not any(j.fabricated_call_ids or j.hallucinated_product_ids for j in judgments)
    assert sum(j.success for j in judgments) >= len(judgments) // 2
    assert all(j.score >= 0.4 for j in judgments if j.success)  # outcome dominates
    verdict = axis_for_miner([t for t, _ in results])
    assert verdict.label == "B", verdict
