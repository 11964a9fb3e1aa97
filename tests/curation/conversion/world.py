"""Judged traces of the scripted harness (the axis-B baseline) on generated tasks, as a validator stores them.

The tasks come from ``arena.generate`` over the session's synthetic index; each episode runs the
scripted agent through a caller that logs every call as the tool server does, and is judged by
the rule checks (no reasoning judge). Failures are kept: they are what KTO and DPO negatives
come from.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from arena.generate import generate_tasks
from arena.index import SearchIndex
from arena.index_types import ProductIndex
from arena.tools import DEFAULT_TOOLSET, ToolContext, tool_schemas
from arena.types import Task, ToolLogEntry
from arena.world.shopper import ShopperSession
from judging.judge import JudgeConfig, judge
from judging.types import Judgment
from judging.world import AtAnswer, WorldJudging
from neurons.miner.agents.contract import AgentRequest
from neurons.miner.agents.scripted import scripted_agent
from storage.records import EpisodeRecord, JudgedTrace
from tests.arena.logging_caller import logging_caller

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOTKEY = "hk-scripted"
ASKING_TOOLSET = "arena-3"  # the tool set with ask_user


async def _episode(
    task: Task,
    index: ProductIndex,
    number: int,
    world: WorldJudging | None = None,
    toolset: str = DEFAULT_TOOLSET,
) -> JudgedTrace:
    """One judged scripted episode; on a world, judged as the validator judges it (its shopper on arena-3)."""
    profile = world.profile(task.task_id, toolset) if world is not None else None
    shopper = ShopperSession(profile) if profile is not None else None
    ctx = ToolContext(index=index, toolset=toolset, shopper=shopper)
    episode_id = f"ep-{number:05d}"
    log: list[ToolLogEntry] = []

    call_tool = logging_caller(ctx, episode_id, log, now=lambda: T0)

    request = AgentRequest(
        task_id=task.task_id, episode_id=episode_id, query=task.query, tools=tuple(tool_schemas(toolset))
    )
    output = await scripted_agent(request, call_tool)
    trajectory = output.trajectory(request, HOTKEY)
    config = JudgeConfig(catalog_version=index.catalog_version, toolset=toolset)
    at = world.against(task, log, toolset) if world is not None else AtAnswer(index.products)
    judgment = await judge(
        task,
        trajectory,
        log=log,
        against=at,
        completer=None,
        config=config,
    )
    episode = EpisodeRecord(
        episode_id=episode_id,
        task_id=task.task_id,
        miner_hotkey=HOTKEY,
        validator_hotkey="hk-validator",
        started_at=T0 + timedelta(seconds=number),
        finished_at=T0 + timedelta(seconds=number + 1),
        end="completed",
        **({"world_id": world.world_id, "pack_hash": world.pack_hash} if world is not None else {}),
    )
    return JudgedTrace(
        seq=number + 1,
        stored_at=T0,
        episode=episode,
        task=task,
        trajectory=trajectory,
        tool_log=tuple(log),
        judgment=judgment,
    )


def scripted_traces(index: SearchIndex, n: int, seed: int) -> list[JudgedTrace]:
    """``n`` tasks generated with ``seed``, one judged scripted episode each."""
    tasks, _ = generate_tasks(index, n=n, seed=seed)

    async def run() -> list[JudgedTrace]:
        return [await _episode(task, index, i) for i, task in enumerate(tasks)]

    return asyncio.run(run())


def world_traces(world: WorldJudging, toolset: str = DEFAULT_TOOLSET) -> list[JudgedTrace]:
    """One judged scripted episode per task of ``world``, its tools on the world's overlay."""

    async def run() -> list[JudgedTrace]:
        return [
            await _episode(wt.task, world.overlay, i, world, toolset) for i, wt in enumerate(world.pack.tasks)
        ]

    return asyncio.run(run())


def asking_traces(world: WorldJudging) -> list[JudgedTrace]:
    """One judged scripted episode per world task on arena-3: the agent may ask the task's shopper."""
    return world_traces(world, ASKING_TOOLSET)


def readdressed(trace: JudgedTrace, episode_id: str) -> JudgedTrace:
    """The trace under another episode id: its episode, trajectory, log and Judgment (hash recomputed)."""
    assert trace.trajectory is not None
    return trace.model_copy(
        update={
            "episode": trace.episode.model_copy(update={"episode_id": episode_id}),
            "trajectory": trace.trajectory.model_copy(update={"episode_id": episode_id}),
            "tool_log": tuple(e.model_copy(update={"episode_id": episode_id}) for e in trace.tool_log),
            "judgment": Judgment.model_validate(
                {**trace.judgment.model_dump(), "episode_id": episode_id, "content_hash": ""}
            ),
        }
    )
