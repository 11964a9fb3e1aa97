"""The `arena eval` command group: evaluate a policy model on held-out tasks, re-judge a run, compare runs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

err = Console(stderr=True)
# The callback's docstring is the group's help (with its example), so no help= here.
app = typer.Typer(no_args_is_help=True)

API_KEY_ENV = "ARENA_LLM_API_KEY"
JUDGE_API_KEY_ENV = "ARENA_JUDGE_API_KEY"
DEFAULT_OUT = Path("eval-runs")


def _fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def _progress(total: int, done: int, label: str) -> Iterator[Callable[[], None]]:
    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task(label, total=total, completed=done)
        yield lambda: progress.advance(task)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80] or "run"


def _agent_options(pairs: list[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` options; a value is read as JSON when it parses, else kept as a string."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            _fail(f"--agent-option {pair!r} is not KEY=VALUE")
        try:
            options[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            options[key.strip()] = raw
    return options


JUDGE_FORMATS = ("none", "json_object", "json_schema")
Judge = tuple[str | None, str | None, str]  # url, model, response format


async def _with_judge(judge: Judge, work: Callable[[Any], Any]) -> Any:
    """Run ``await work(completer)`` with the reasoning judge's client open (None without --judge-url)."""
    judge_url, judge_model, judge_format = judge
    if not judge_url:
        return await work(None)
    from judging.reasoning import OpenAICompleter

    completer = OpenAICompleter(
        judge_url,
        judge_model or "judge",
        api_key=os.environ.get(JUDGE_API_KEY_ENV, "none"),
        response_format=judge_format,  # type: ignore[arg-type]
    )
    try:
        return await work(completer)
    finally:
        await completer.aclose()


def _print_summary(results: dict[str, Any], as_json: bool, run_dir: Path) -> None:
    if as_json:
        summary = {key: value for key, value in results.items() if key != "per_task"}
        typer.echo(json.dumps(summary | {"out": str(run_dir)}, ensure_ascii=False, indent=2))
        return
    from neurons.evaluation.table import results_markdown

    typer.echo(results_markdown(results))
    typer.echo(f"Written to {run_dir}/ (results.json, results.md, samples.jsonl, judgments.jsonl)")


@app.callback(invoke_without_command=True)
def evaluate(
    ctx: typer.Context,
    index: Annotated[Path | None, typer.Option("--index", help="Search index directory.")] = None,
    tasks: Annotated[
        list[Path] | None, typer.Option("--tasks", help="Task file (ours or ShoppingBench's); repeatable.")
    ] = None,
    pool: Annotated[
        str, typer.Option("--pool", help="auto (never_touch when present, else all), all, or a pool name.")
    ] = "auto",
    model_url: Annotated[
        str | None, typer.Option("--model-url", help="OpenAI-compatible endpoint, e.g. http://host:8000/v1.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name the server expects.")] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=1000, help="Samples per task.")] = 8,
    temperature: Annotated[
        float | None,
        typer.Option("--temperature", min=0.0, help="Sampling temperature (default 0 for k=1, else 0.7)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=1024, help="Samples run at once.")
    ] = 4,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Run directory (default eval-runs/<model>); reruns resume it."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    agent: Annotated[
        str, typer.Option("--agent", help="llm (default), scripted, or package.module:function.")
    ] = "llm",
    agent_option: Annotated[
        list[str] | None,
        typer.Option("--agent-option", help="KEY=VALUE option for the agent (JSON values); repeatable."),
    ] = None,
    judge_url: Annotated[
        str | None, typer.Option("--judge-url", help="OpenAI-compatible reasoning judge.")
    ] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Pinned judge model name.")] = None,
    judge_format: Annotated[
        str,
        typer.Option("--judge-format", help="Judge's constrained decoding: none, json_object, json_schema."),
    ] = "none",
    train_manifest: Annotated[
        Path | None,
        typer.Option("--train-manifest", help="Training export's manifest.json (or its directory)."),
    ] = None,
    max_steps: Annotated[
        int, typer.Option("--max-steps", min=1, max=200, help="Model turns per sample.")
    ] = 20,
    max_tool_calls: Annotated[
        int, typer.Option("--max-tool-calls", min=1, max=1000, help="Tool calls per sample.")
    ] = 30,
    task_timeout: Annotated[
        float, typer.Option("--task-timeout", min=1.0, max=3600.0, help="Seconds per sample.")
    ] = 180.0,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Evaluate at most N tasks (seeded subset).")
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Base seed: sampling seeds, task subset, bootstrap.")
    ] = 0,
    resamples: Annotated[int, typer.Option("--resamples", min=100, help="Bootstrap resamples.")] = 10_000,
    toolset: Annotated[str, typer.Option("--toolset", help="Tool set (sb-1 or arena-2).")] = "sb-1",
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors", help="Re-run samples that ended in a model error.")
    ] = False,
) -> None:
    """Evaluate a model: k samples per held-out task, judged as the validator judges, with intervals.

    Runs the reference tool-calling agent (or --agent) against the tools in-process, judges every
    trajectory, and writes samples.jsonl, judgments.jsonl, results.json and results.md to --out.
    Rerunning the same command resumes: finished samples are not run again.

    Example: arena eval --index idx --tasks tasks.jsonl --model-url http://127.0.0.1:8000/v1 --model m --k 8
    """
    if ctx.invoked_subcommand is not None:
        return
    from neurons.evaluation.selection import (
        SelectionError,
        load_task_files,
        read_train_manifest,
        select_tasks,
    )

    if index is None or not tasks:
        _fail("--index and --tasks are required (see arena eval --help)")
    if agent == "llm" and not (model_url and model):
        _fail("the llm agent needs --model-url and --model")
    if judge_format not in JUDGE_FORMATS:
        _fail(f"unknown --judge-format {judge_format!r}: expected one of {', '.join(JUDGE_FORMATS)}")
    try:
        loaded, report = load_task_files(tasks)
        manifest = read_train_manifest(train_manifest) if train_manifest is not None else None
        selection = select_tasks(loaded, pool=pool, manifest=manifest, limit=limit, seed=seed)
    except SelectionError as exc:
        _fail(str(exc))
    selection.bad_rows = report.bad
    for warning in selection.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    if manifest is not None:
        err.print(
            f"refused {selection.dropped_leak} tasks whose leak cluster is in {manifest.path}",
            highlight=False,
        )
    chosen_temperature = temperature if temperature is not None else (0.0 if k == 1 else 0.7)
    _run(
        index,
        selection,
        out or DEFAULT_OUT / _slug(model or agent),
        settings_args={
            "agent": agent,
            "model": model,
            "model_url": model_url,
            "api_key": os.environ.get(API_KEY_ENV, "none"),
            "agent_options": _agent_options(agent_option or []),
            "k": k,
            "temperature": chosen_temperature,
            "seed": seed,
            "concurrency": concurrency,
            "max_steps": max_steps,
            "max_tool_calls": max_tool_calls,
            "task_timeout_s": task_timeout,
            "toolset": toolset,
            "judge_model": (judge_model or "judge") if judge_url else None,
            "retry_errors": retry_errors,
        },
        judge=(judge_url, judge_model, judge_format),
        resamples=resamples,
        as_json=as_json,
    )


def _run(
    index_dir: Path,
    selection: Any,
    run_dir: Path,
    *,
    settings_args: dict[str, Any],
    judge: Judge,
    resamples: int,
    as_json: bool,
) -> None:
    from arena.errors import ArenaError
    from arena.index import open_index
    from arena.tools import TOOLSETS
    from neurons.agents import AgentError
    from neurons.evaluation.outputs import write_results
    from neurons.evaluation.records import SAMPLES_FILE, SampleSummary, read_records
    from neurons.evaluation.runner import (
        EvalSettings,
        ModelUnavailable,
        RunMismatch,
        prepare_run_dir,
        run_evaluation,
        settings_summary,
    )

    settings = EvalSettings(**settings_args)
    if settings.toolset not in TOOLSETS:
        _fail(f"unknown toolset {settings.toolset!r}: expected one of {', '.join(TOOLSETS)}")
    try:
        search_index = open_index(index_dir)
    except ArenaError as exc:
        _fail(str(exc))
    try:
        prepare_run_dir(
            run_dir,
            settings,
            index_dir=index_dir,
            catalog_version=search_index.catalog_version,
            tasks=selection.tasks,
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
        err.print(
            f"evaluating {len(selection.tasks)} tasks x {settings.k} samples ({done} done) in {run_dir}"
        )
        with _progress(total, done, "samples") as advance:
            counts = asyncio.run(
                _with_judge(
                    judge,
                    lambda completer: run_evaluation(
                        selection.tasks,
                        run_dir=run_dir,
                        index=search_index,
                        settings=settings,
                        completer=completer,
                        on_sample=advance,
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
            | {"catalog_version": search_index.catalog_version, "index": str(index_dir)},
            selection=selection.summary(),
        )
    except RunMismatch as exc:
        _fail(str(exc))
    except AgentError as exc:
        _fail(f"cannot build the agent: {exc}")
    except ModelUnavailable as exc:
        _fail(str(exc), code=1)
    finally:
        search_index.close()
    err.print(
        f"ran {counts.ran} samples, judged {counts.judged} stored ones, {counts.skipped} were already done"
    )
    _print_summary(results, as_json, run_dir)


@app.command("rejudge")
def rejudge(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by arena eval.")],
    judge_url: Annotated[
        str | None, typer.Option("--judge-url", help="OpenAI-compatible reasoning judge.")
    ] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Pinned judge model name.")] = None,
    judge_format: Annotated[
        str,
        typer.Option("--judge-format", help="Judge's constrained decoding: none, json_object, json_schema."),
    ] = "none",
    index: Annotated[
        Path | None, typer.Option("--index", help="Search index (default: the one the run used).")
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=1024, help="Judgments at once.")
    ] = 4,
    resamples: Annotated[int, typer.Option("--resamples", min=100, help="Bootstrap resamples.")] = 10_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Judge every stored trajectory of a run again (e.g. with an LLM judge) and rewrite its results.

    The stored tool logs are the evidence; nothing is re-run. judgments.jsonl is replaced atomically.

    Example: arena eval rejudge eval-runs/Qwen3-4B --judge-url http://127.0.0.1:8001/v1 --judge-model judge
    """
    from arena.errors import ArenaError
    from arena.index import open_index
    from judging.judge import JudgeConfig
    from neurons.evaluation.outputs import load_run, rejudge_run, write_results
    from neurons.evaluation.records import RUN_FILE, write_json

    if judge_format not in JUDGE_FORMATS:
        _fail(f"unknown --judge-format {judge_format!r}: expected one of {', '.join(JUDGE_FORMATS)}")
    try:
        run, tasks, previous = load_run(run_dir)
        search_index = open_index(index or Path(run["index"]))
    except (FileNotFoundError, ArenaError, KeyError, ValueError) as exc:
        _fail(str(exc))
    fingerprint = dict(run.get("fingerprint", {}))
    if search_index.catalog_version != fingerprint.get("catalog_version"):
        search_index.close()
        _fail("the index is of another catalog than the run's; pass the run's --index")
    config = JudgeConfig(
        toolset=fingerprint.get("toolset", "sb-1"), catalog_version=search_index.catalog_version
    )
    k = int(run.get("k", 1))
    try:
        with _progress(len(tasks) * k, 0, "judging") as advance:
            judged = asyncio.run(
                _with_judge(
                    (judge_url, judge_model, judge_format),
                    lambda completer: rejudge_run(
                        run_dir,
                        tasks,
                        index=search_index,
                        completer=completer,
                        config=config,
                        concurrency=concurrency,
                        on_sample=advance,
                    ),
                )
            )
        fingerprint["judge_model"] = (judge_model or "judge") if judge_url else None
        write_json(run_dir / RUN_FILE, run | {"fingerprint": fingerprint})
        old_run = previous.get("run", {}) if previous else {}
        results = write_results(
            run_dir,
            tasks,
            k=int(previous.get("k", k)) if previous else k,
            seed=int(fingerprint.get("seed", 0)),
            resamples=resamples,
            run=old_run | {"judge_model": fingerprint["judge_model"]},
            selection=previous.get("selection", {}) if previous else {},
        )
    finally:
        search_index.close()
    err.print(f"re-judged {judged} samples")
    _print_summary(results, as_json, run_dir)


def _read_results(path: Path) -> dict[str, Any]:
    file = path / "results.json" if path.is_dir() else path
    try:
        body = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        _fail(f"cannot read {file}: {exc}")
    if not isinstance(body, dict) or "per_task" not in body:
        _fail(f"{file} is not an arena eval results.json")
    return body


@app.command("compare")
def compare(
    a: Annotated[Path, typer.Argument(help="Baseline: results.json (or its run directory).")],
    b: Annotated[Path, typer.Argument(help="Candidate: results.json (or its run directory).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a PNG of per-intent ASR of both runs.")
    ] = None,
    resamples: Annotated[int, typer.Option("--resamples", min=100, help="Bootstrap resamples.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
) -> None:
    """Compare two runs over their shared tasks: B - A per metric with a paired bootstrap interval.

    A verdict (B better / B worse) is printed only where the 95% interval excludes zero.

    Example: arena eval compare eval-runs/base/results.json eval-runs/sft/results.json --plot asr.png
    """
    from neurons.evaluation.compare import compare_results, plot_intent_asr
    from neurons.evaluation.table import compare_markdown

    first, second = _read_results(a), _read_results(b)
    labels = (_label(first, a), _label(second, b))
    comparison = compare_results(first, second, labels=labels, resamples=resamples, seed=seed)
    if plot is not None:
        plot_intent_asr(first, second, plot, labels=labels)
    if as_json:
        typer.echo(json.dumps(comparison, ensure_ascii=False, indent=2))
    else:
        typer.echo(compare_markdown(comparison))
        if plot is not None:
            typer.echo(f"Plot written to {plot}")


def _label(results: dict[str, Any], path: Path) -> str:
    run = results.get("run", {})
    name = run.get("model") or run.get("agent")
    return str(name) if name else path.parent.name
