"""`arena eval rejudge` and `arena eval compare` (on finished runs), and plumbing the eval commands share."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from neurons.cli.console import fail, note, progress
from neurons.cli.options import EvalJudgeFormat, EvalJudgeModel, EvalJudgeUrl

if TYPE_CHECKING:  # the command imports only what it runs (neurons/cli/lazy.py)
    from arena.index import SearchIndex
    from judging.world import WorldJudging

JUDGE_API_KEY_ENV = "ARENA_JUDGE_API_KEY"


@contextmanager
def counting(label: str, total: int, done: int) -> Iterator[Callable[[], None]]:
    """A progress bar (``console.progress``) that yields the function advancing it by one sample."""
    with progress(label, total, done) as update:
        count = itertools.count(done + 1)
        yield lambda: update(next(count))


JUDGE_FORMATS = ("none", "json_object", "json_schema")
Judge = tuple[str | None, str | None, str]  # url, model, response format


async def with_judge(judge: Judge, work: Callable[[Any], Any]) -> Any:
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


def print_summary(results: dict[str, Any], as_json: bool, run_dir: Path) -> None:
    """Print a run's results: the summary as JSON (no per-task rows), or the Markdown table."""
    if as_json:
        summary = {key: value for key, value in results.items() if key != "per_task"}
        typer.echo(json.dumps(summary | {"out": str(run_dir)}, ensure_ascii=False, indent=2))
        return
    from neurons.evaluation.table import results_markdown

    typer.echo(results_markdown(results))
    typer.echo(f"Written to {run_dir}/ (results.json, results.md, samples.jsonl, judgments.jsonl)")


def _run_world(pack_dir: Path | None, fingerprint: dict[str, Any], index: SearchIndex) -> WorldJudging | None:
    """The world a run was judged on (None for a static run); a missing or other pack fails."""
    from arena.errors import ArenaError
    from arena.world.pack import load_pack
    from judging.world import WorldJudging

    wanted = fingerprint.get("pack_hash")
    if wanted is None:
        if pack_dir is not None:
            index.close()
            fail("--world: this run was not on a world")
        return None
    if pack_dir is None:
        index.close()
        fail(f"the run was on world pack {wanted[:16]}; pass its directory with --world")
    try:
        pack = load_pack(pack_dir)
        if pack.manifest.pack_hash != wanted:
            raise ArenaError(f"{pack_dir} is world {pack.manifest.world_id}, not the run's ({wanted[:16]})")
        return WorldJudging.over(pack, index)
    except ArenaError as exc:
        index.close()
        fail(f"--world: {exc}")


def rejudge(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by arena eval.")],
    judge_url: EvalJudgeUrl = None,
    judge_model: EvalJudgeModel = None,
    judge_format: EvalJudgeFormat = "none",
    index: Annotated[
        Path | None, typer.Option("--index", help="Search index (default: the one the run used).")
    ] = None,
    world: Annotated[
        Path | None,
        typer.Option("--world", help="World pack of a run on a world (default: the one the run used)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=1024, help="Judgments at once.")
    ] = 4,
    resamples: Annotated[int, typer.Option("--resamples", min=100, help="Bootstrap resamples.")] = 10_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Judge every stored trajectory of a run again (e.g. with an LLM judge) and rewrite its results.

    The stored tool logs are the evidence; nothing is re-run. judgments.jsonl is replaced atomically.
    A run on a world is judged on its pack (verified against the run's pack hash), as it was judged.

    Example: arena eval rejudge eval-runs/Qwen3-4B --judge-url http://127.0.0.1:8001/v1 --judge-model judge
    """
    from arena.errors import ArenaError
    from arena.index import open_index
    from arena.tools import DEFAULT_TOOLSET
    from judging.judge import JudgeConfig
    from neurons.evaluation.outputs import load_run, rejudge_run, write_results
    from neurons.evaluation.records import RUN_FILE, write_json

    if judge_format not in JUDGE_FORMATS:
        fail(f"unknown --judge-format {judge_format!r}: expected one of {', '.join(JUDGE_FORMATS)}")
    try:
        run, tasks, previous = load_run(run_dir)
        search_index = open_index(index or Path(run["index"]))
    except (FileNotFoundError, ArenaError, KeyError, ValueError) as exc:
        fail(str(exc))
    fingerprint = dict(run.get("fingerprint", {}))
    if search_index.catalog_version != fingerprint.get("catalog_version"):
        search_index.close()
        fail("the index is of another catalog than the run's; pass the run's --index")
    config = JudgeConfig(
        toolset=fingerprint.get("toolset", DEFAULT_TOOLSET), catalog_version=search_index.catalog_version
    )
    on = _run_world(world or (Path(run["pack"]) if "pack" in run else None), fingerprint, search_index)
    k = int(run.get("k", 1))
    try:
        with counting("judging", len(tasks) * k, 0) as advance:
            judged = asyncio.run(
                with_judge(
                    (judge_url, judge_model, judge_format),
                    lambda completer: rejudge_run(
                        run_dir,
                        tasks,
                        index=search_index,
                        completer=completer,
                        config=config,
                        world=on,
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
    note(f"re-judged {judged} samples")
    print_summary(results, as_json, run_dir)


def _read_results(path: Path) -> dict[str, Any]:
    file = path / "results.json" if path.is_dir() else path
    try:
        body = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        fail(f"cannot read {file}: {exc}")
    if not isinstance(body, dict) or "per_task" not in body:
        fail(f"{file} is not an arena eval results.json")
    return body


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
    labels = (_run_label(first, a), _run_label(second, b))
    comparison = compare_results(first, second, labels=labels, resamples=resamples, seed=seed)
    if plot is not None:
        plot_intent_asr(first, second, plot, labels=labels)
    if as_json:
        typer.echo(json.dumps(comparison, ensure_ascii=False, indent=2))
    else:
        typer.echo(compare_markdown(comparison))
        if plot is not None:
            typer.echo(f"Plot written to {plot}")


def _run_label(results: dict[str, Any], path: Path) -> str:
    run = results.get("run", {})
    name = run.get("model") or run.get("agent")
    return str(name) if name else path.parent.name
