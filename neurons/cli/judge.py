"""`arena judge`: judge one trajectory offline against a search index and print the verdict as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from arena.errors import ArenaError
from arena.index import SearchIndex, open_index
from arena.oro_steps import load_trajectory
from arena.shoppingbench import task_from_row
from arena.tools import DEFAULT_TOOLSET, ToolContext
from arena.types import Intent, Task, ToolLogEntry, Trajectory
from arena.world.pack import load_pack
from arena.world.types import WorldPack
from judging.judge import JudgeConfig, judge, judgment_summary
from judging.reasoning import OpenAICompleter
from judging.replay import replay_log
from judging.types import Judgment
from judging.world import AtAnswer, WorldJudging
from neurons.cli.console import fail, warn
from neurons.errors import NeuronError


class UnusableInput(NeuronError):
    """An input file cannot be used; the command exits 2 with this message."""


def _read_values(path: Path) -> list[Any]:
    """Read a JSON file (one value) or a JSONL file (one value per non-empty line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UnusableInput(f"cannot read {path}: {exc}") from exc
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise UnusableInput(f"{path} is neither JSON nor JSONL: {exc}") from exc


def row_intent(row: dict[str, Any]) -> Intent:
    """Tell a ShoppingBench row's intent from its shape (the file name is not at hand here)."""
    if "Knowledge_Attribute" in row:
        return "knowledge"
    if row.get("voucher"):
        return "voucher"
    return "shop" if isinstance(row.get("reward"), list) else "product"


def _task(value: Any, intent: Intent | None) -> Task:
    if not isinstance(value, dict):
        raise UnusableInput("a task is a JSON object")
    if "reward" in value:
        return task_from_row(value, intent=intent or row_intent(value))
    return Task.model_validate(value)


def load_task(path: Path, *, intent: Intent | None, wanted_id: str | None) -> Task:
    """Load the task: our task JSON or a ShoppingBench row; from JSONL, the one the trajectory names."""
    values = _read_values(path)
    if not values:
        raise UnusableInput(f"{path} holds no task")
    if len(values) == 1:
        return _task(values[0], intent)
    tasks = [_task(v, intent) for v in values]
    chosen = [t for t in tasks if t.task_id == wanted_id]
    if not chosen:
        raise UnusableInput(
            f"{path} holds {len(tasks)} tasks and none is the trajectory's task {wanted_id!r}"
        )
    return chosen[0]


def load_log(path: Path) -> list[ToolLogEntry]:
    """Load a tool log: a JSON list of entries, or JSONL with one entry per line."""
    values = _read_values(path)
    rows = values[0] if len(values) == 1 and isinstance(values[0], list) else values
    return [ToolLogEntry.model_validate(row) for row in rows]


def pack_task(pack: WorldPack, task_id: str | None) -> Task:
    """The pack's task the trajectory names (the pack's only task where it names none)."""
    tasks = {world_task.task.task_id: world_task.task for world_task in pack.tasks}
    if task_id in tasks:
        return tasks[task_id]
    if task_id is None and len(tasks) == 1:
        return next(iter(tasks.values()))
    raise UnusableInput(f"world {pack.manifest.world_id} holds no task {task_id!r} (pass --task)")


def _context(index: SearchIndex, world: WorldJudging | None, task: Task, toolset: str) -> ToolContext:
    """Where a replay runs: the index, or the world over it with the task's shopper where it can ask."""
    if world is None:
        return ToolContext(index=index, toolset=toolset)
    return ToolContext(index=world.overlay, toolset=toolset, shopper=world.shopper(task.task_id, toolset))


def judge_command(
    index: Annotated[Path, typer.Option("--index", help="Search index directory (arena catalog build).")],
    trajectory: Annotated[
        Path, typer.Option("--trajectory", help="arena.trajectory/1 JSON or an ORO step list.")
    ],
    task: Annotated[
        Path | None,
        typer.Option(
            "--task", help="Our task JSON, a ShoppingBench row, or JSONL of either (default: the pack's)."
        ),
    ] = None,
    world: Annotated[
        Path | None,
        typer.Option(
            "--world",
            help="The world pack the episode ran on: tools over its overlay, the answer judged at its "
            "world version, ask_user answered by the task's shopper (arena-3), as the validator judged it.",
        ),
    ] = None,
    tool_log: Annotated[
        Path | None, typer.Option("--tool-log", help="Tool-server log (JSON list or JSONL).")
    ] = None,
    judge_url: Annotated[
        str | None, typer.Option("--judge-url", help="OpenAI-compatible reasoning judge.")
    ] = None,
    judge_model: Annotated[str, typer.Option("--judge-model", help="Pinned judge model name.")] = "judge",
    judge_format: Annotated[
        str,
        typer.Option("--judge-format", help="Constrained decoding: none, json_object or json_schema (vLLM)."),
    ] = "none",
    intent: Annotated[str | None, typer.Option("--intent", help="Intent of a ShoppingBench row.")] = None,
    toolset: Annotated[
        str, typer.Option("--toolset", help="Toolset the episode ran with.")
    ] = DEFAULT_TOOLSET,
    full: Annotated[bool, typer.Option("--full", help="Print the whole Judgment, not the summary.")] = False,
) -> None:
    """Judge one trajectory offline and print the verdict as one JSON object.

    Without --tool-log every tool call is replayed against the index (the world, with --world)
    and the replay is the log. Exit 0 when judged (whatever the verdict), 2 on unusable input.

    Example: arena judge --index data/index --task task.json --trajectory traj.json
    """
    if intent is not None and intent not in ("product", "shop", "voucher", "knowledge"):
        fail(f"unknown intent {intent!r}")
    if judge_format not in ("none", "json_object", "json_schema"):
        fail(f"unknown judge format {judge_format!r}")
    try:
        raw_trajectory = _read_values(trajectory)
        if len(raw_trajectory) != 1:
            raise UnusableInput(f"{trajectory} must hold one trajectory")
        wanted = raw_trajectory[0].get("task_id") if isinstance(raw_trajectory[0], dict) else None
        pack = load_pack(world) if world is not None else None
        if task is not None:
            the_task = load_task(task, intent=intent, wanted_id=wanted)  # type: ignore[arg-type]
        elif pack is not None:
            the_task = pack_task(pack, wanted)
        else:
            raise UnusableInput("pass --task, or --world to judge one of the pack's tasks")
        the_trajectory: Trajectory = load_trajectory(
            raw_trajectory[0], task_id=the_task.task_id, query=the_task.query
        )
        log = load_log(tool_log) if tool_log is not None else None
        search_index = open_index(index, warm=log is None)  # a given log: no search, no stemmer
    except (UnusableInput, ValueError, ValidationError, ArenaError) as exc:
        fail(str(exc))
    try:
        on = WorldJudging.over(pack, search_index) if pack is not None else None
    except ArenaError as exc:
        search_index.close()
        fail(str(exc))
    warnings: list[str] = []
    if the_trajectory.task_id and the_trajectory.task_id != the_task.task_id:
        warnings.append(f"trajectory names task {the_trajectory.task_id}; judged against {the_task.task_id}")
        warn(warnings[-1])
    try:
        if log is None:
            log = replay_log(the_trajectory, _context(search_index, on, the_task, toolset))
        config = JudgeConfig(toolset=toolset, catalog_version=search_index.catalog_version)
        completer = (
            OpenAICompleter(judge_url, judge_model, response_format=judge_format)  # type: ignore[arg-type]
            if judge_url
            else None
        )
        at = on.against(the_task, log, toolset) if on is not None else AtAnswer(search_index.products)
        judgment = asyncio.run(_judge(the_task, the_trajectory, log, at, config, completer))
    finally:
        search_index.close()
    output = judgment.model_dump(mode="json") if full else judgment_summary(judgment, warnings=warnings)
    typer.echo(json.dumps(output, ensure_ascii=False, allow_nan=False))


async def _judge(
    task: Task,
    trajectory: Trajectory,
    log: list[ToolLogEntry],
    at: AtAnswer,
    config: JudgeConfig,
    completer: OpenAICompleter | None,
) -> Judgment:
    try:
        return await judge(
            task,
            trajectory,
            log=log,
            against=at,
            completer=completer,
            config=config,
        )
    finally:
        if completer is not None:
            await completer.aclose()
