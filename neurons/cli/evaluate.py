"""The `arena eval` command group: evaluate a policy model on held-out tasks, re-judge a run, compare runs."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from neurons.cli.console import fail, note, warn
from neurons.cli.eval_runs import JUDGE_FORMATS, Judge, compare, counting, print_summary, rejudge, with_judge
from neurons.cli.flags import Flag, overrides, with_flags
from neurons.cli.options import EvalJudgeFormat, EvalJudgeModel, EvalJudgeUrl
from neurons.evaluation.settings import EvalSettings

if TYPE_CHECKING:  # the command imports only what it runs (neurons/cli/lazy.py)
    from arena.index_types import ProductIndex
    from arena.tasks import TaskLoadReport
    from arena.types import Task
    from arena.world.types import WorldPack
    from judging.world import WorldJudging

# The callback's docstring is the group's help (with its example), so no help= here.
app = typer.Typer(no_args_is_help=True, add_completion=False)
app.command("rejudge")(rejudge)
app.command("compare")(compare)

API_KEY_ENV = "ARENA_LLM_API_KEY"
DEFAULT_OUT = Path("eval-runs")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "run"


def _agent_options(pairs: list[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` options; a value is read as JSON when it parses, else kept as a string."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            fail(f"--agent-option {pair!r} is not KEY=VALUE")
        try:
            options[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            options[key.strip()] = raw
    return options


# The settings with a flag; the others are built by the command (api_key from ARENA_LLM_API_KEY,
# agent_options from --agent-option, judge_model from --judge-url and --judge-model).
EVAL_FLAGS = (
    Flag("agent"),
    Flag("model_url"),
    Flag("model"),
    Flag("k", "--k"),
    Flag("temperature"),
    Flag("concurrency"),
    Flag("seed"),
    Flag("max_steps"),
    Flag("max_tool_calls"),
    Flag("task_timeout_s", "--task-timeout"),
    Flag("toolset"),
    Flag("retry_errors", "--retry-errors"),
)


def evaluate(
    ctx: typer.Context,
    index: Annotated[Path | None, typer.Option("--index", help="Search index directory.")] = None,
    tasks: Annotated[
        list[Path] | None, typer.Option("--tasks", help="Task file (ours or ShoppingBench's); repeatable.")
    ] = None,
    pool: Annotated[
        str, typer.Option("--pool", help="auto (never_touch when present, else all), all, or a pool name.")
    ] = "auto",
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Run directory (default eval-runs/<model>); reruns resume it."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    agent_option: Annotated[
        list[str] | None,
        typer.Option("--agent-option", help="KEY=VALUE option for the agent (JSON values); repeatable."),
    ] = None,
    judge_url: EvalJudgeUrl = None,
    judge_model: EvalJudgeModel = None,
    judge_format: EvalJudgeFormat = "none",
    train_manifest: Annotated[
        Path | None,
        typer.Option("--train-manifest", help="Training export's manifest.json (or its directory)."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Evaluate at most N tasks (seeded subset).")
    ] = None,
    resamples: Annotated[int, typer.Option("--resamples", min=100, help="Bootstrap resamples.")] = 10_000,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Also store each judged sample in this database (validator schema), for arena curate.",
        ),
    ] = None,
    upgrade_db: Annotated[
        bool, typer.Option("--upgrade-db", help="Create or migrate --db's schema (always for SQLite).")
    ] = False,
    world: Annotated[
        Path | None,
        typer.Option(
            "--world",
            help="World pack directory (arena world compile over --index): tools over the world, its tasks.",
        ),
    ] = None,
    **given: Any,
) -> None:
    """Evaluate a model: k samples per held-out task, judged as the validator judges, with intervals.

    Runs the reference tool-calling agent (or --agent) against the tools in-process, judges every
    trajectory, and writes samples.jsonl, judgments.jsonl, results.json and results.md to --out.
    Rerunning the same command resumes: finished samples are not run again. With --db, every
    judged sample is also stored as a validator stores an episode (idempotent), ready for
    `arena curate --db`: collecting training traces of any agent needs no network.

    Example: arena eval --index idx --tasks tasks.jsonl --model-url http://127.0.0.1:8000/v1 --model m --k 8
    Example: arena eval --index idx --tasks train.jsonl --pool all --agent scripted --db sqlite:///traces.db
    Example: arena eval --index idx --world worlds/round-42 --agent scripted
    """
    if ctx.invoked_subcommand is not None:
        return
    from neurons.evaluation.selection import (
        SelectionError,
        load_task_files,
        read_train_manifest,
        select_tasks,
    )

    if index is None or not (tasks or world):
        fail("--index and --tasks are required, or --index and --world (see arena eval --help)")
    if tasks and world is not None:
        fail("--world brings its own tasks: give --tasks or --world, not both")
    settings = _settings(
        overrides(given, EVAL_FLAGS)
        | {
            "api_key": os.environ.get(API_KEY_ENV, "none"),
            "agent_options": _agent_options(agent_option or []),
            "judge_model": (judge_model or "judge") if judge_url else None,
        }
    )
    if settings.agent == "llm" and not (settings.model_url and settings.model):
        fail("the llm agent needs --model-url and --model")
    if judge_format not in JUDGE_FORMATS:
        fail(f"unknown --judge-format {judge_format!r}: expected one of {', '.join(JUDGE_FORMATS)}")
    pack = None
    try:
        if world is not None:
            pack, loaded, report = _world_tasks(world)
        else:
            loaded, report = load_task_files(tasks or [])
        manifest = read_train_manifest(train_manifest) if train_manifest is not None else None
        selection = select_tasks(loaded, pool=pool, manifest=manifest, limit=limit, seed=settings.seed)
    except SelectionError as exc:
        fail(str(exc))
    selection.bad_rows = report.bad
    for warning in selection.warnings:
        warn(warning)
    if manifest is not None:
        note(f"refused {selection.dropped_leak} tasks whose leak cluster is in {manifest.path}")
    _run(
        index,
        selection,
        out or DEFAULT_OUT / _slug(settings.model or settings.agent),
        settings=settings,
        judge=(judge_url, judge_model, judge_format),
        resamples=resamples,
        as_json=as_json,
        db=(db, upgrade_db),
        pack=(pack, world) if pack is not None and world is not None else None,
    )


def _settings(values: dict[str, Any]) -> EvalSettings:
    """The run's settings from the flags given (exit 2 with pydantic's list of what is wrong)."""
    try:
        return EvalSettings(**values)
    except ValidationError as exc:
        fail(f"invalid eval settings:\n{exc}")


with_flags(evaluate, EvalSettings, EVAL_FLAGS)
app.callback(invoke_without_command=True)(evaluate)


def _world_tasks(pack_dir: Path) -> tuple[WorldPack, list[Task], TaskLoadReport]:
    """A world pack's tasks for ``--world`` (the pack verified; refused with a one-line error)."""
    from arena.errors import WorldError
    from arena.tasks import TaskLoadReport
    from neurons.evaluation.world import read_world_tasks

    try:
        pack, loaded = read_world_tasks(pack_dir)
    except WorldError as exc:
        fail(str(exc))
    return pack, loaded, TaskLoadReport()


def _run(
    index_dir: Path,
    selection: Any,
    run_dir: Path,
    *,
    settings: EvalSettings,
    judge: Judge,
    resamples: int,
    as_json: bool,
    db: tuple[str | None, bool] = (None, False),
    pack: tuple[WorldPack, Path] | None = None,
) -> None:
    from arena.errors import ArenaError
    from arena.index import open_index
    from arena.tools import TOOLSETS
    from neurons.evaluation.outputs import write_results
    from neurons.evaluation.records import SAMPLES_FILE, SampleSummary, read_records
    from neurons.evaluation.runner import ModelUnavailable, run_evaluation
    from neurons.evaluation.settings import RunMismatch, prepare_run_dir, settings_summary
    from neurons.miner.agents.contract import AgentError

    if settings.toolset not in TOOLSETS:
        fail(f"unknown toolset {settings.toolset!r}: expected one of {', '.join(TOOLSETS)}")
    try:
        search_index = open_index(index_dir)
    except ArenaError as exc:
        fail(str(exc))
    world: WorldJudging | None = None
    index: ProductIndex = search_index
    if pack is not None:
        from judging.world import WorldJudging

        try:
            world = WorldJudging.over(pack[0], search_index)
        except ArenaError as exc:
            search_index.close()
            fail(str(exc))
        index = world.overlay
        note(f"on world {world.world_id} ({len(world.pack.delta.changes)} changes during an episode)")
    try:
        prepare_run_dir(
            run_dir,
            settings,
            index_dir=index_dir,
            catalog_version=search_index.catalog_version,
            tasks=selection.tasks,
            pack=(world.pack_hash, pack[1]) if world is not None and pack is not None else None,
        )
        ids = {task.task_id for task in selection.tasks}
        done = sum(
            1
            for (task_id, sample), record in read_records(run_dir / SAMPLES_FILE, SampleSummary).items()
            if task_id in ids
            and sample < settings.k
            and not (settings.retry_errors and record.stop == "model_error")
        )
        total = len(selection.tasks) * settings.k
        note(f"evaluating {len(selection.tasks)} tasks x {settings.k} samples ({done} done) in {run_dir}")
        with counting("samples", total, done) as advance:
            counts = asyncio.run(
                with_judge(
                    judge,
                    lambda completer: run_evaluation(
                        selection.tasks,
                        run_dir=run_dir,
                        index=index,
                        settings=settings,
                        completer=completer,
                        on_sample=advance,
                        world=world,
                    ),
                )
            )
        results = write_results(
            run_dir,
            selection.tasks,
            k=settings.k,
            seed=settings.seed,
            resamples=resamples,
            run=settings_summary(settings)
            | {"catalog_version": search_index.catalog_version, "index": str(index_dir)}
            | ({"world_id": world.world_id, "pack_hash": world.pack_hash} if world else {}),
            selection=selection.summary(),
        )
    except RunMismatch as exc:
        fail(str(exc))
    except AgentError as exc:
        fail(f"cannot build the agent: {exc}")
    except ModelUnavailable as exc:
        fail(str(exc), code=1)
    finally:
        search_index.close()
    note(f"ran {counts.ran} samples, judged {counts.judged} stored ones, {counts.skipped} were already done")
    if db[0] is not None:
        _store(run_dir, selection.tasks, url=db[0], upgrade_schema=db[1], samples=total)
    print_summary(results, as_json, run_dir)


def _store(run_dir: Path, tasks: Any, *, url: str, upgrade_schema: bool, samples: int) -> None:
    """Store the run's judged samples in the database at ``url`` (``arena eval --db``)."""
    from neurons.evaluation.collect import store_run
    from storage.db import check_schema, describe, make_engine, make_sessionmaker, upgrade
    from storage.errors import StorageError

    try:
        engine = make_engine(url)
    except (StorageError, ValueError) as exc:
        fail(f"cannot open --db {url}: {exc}")
    try:
        if upgrade_schema or engine.dialect.name == "sqlite":
            upgrade(engine)
        else:
            check_schema(engine)
        with counting("stored", samples, 0) as advance:
            report = store_run(run_dir, tasks, make_sessionmaker(engine), on_sample=advance)
    except StorageError as exc:
        fail(f"--db {url}: {describe(exc)}", code=1)
    finally:
        engine.dispose()
    skipped = ", ".join(f"{reason} {n}" for reason, n in sorted(report.skipped.items())) or "none"
    note(f"stored {report.stored} episodes in {url} ({report.already} already there; skipped: {skipped})")
