"""The `arena tasks` command group: import, generate, cluster, assign pools, audit, draw, retire, export."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, cast, get_args

import typer

from arena.audit import AuditReport, audit
from arena.clusters import AUDIT_NEAR_DUP_THRESHOLD, NEAR_DUP_THRESHOLD, NEAR_MISS_THRESHOLD, cluster_tasks
from arena.errors import ArenaError
from arena.generate import INTENTS, GenerateConfig, generate_tasks, make_finder
from arena.interchange import FORMATS, export_tasks, import_tasks
from arena.pools import assign_pools, move_clusters, reconcile_pools
from arena.rotation import draw_round, retire
from arena.tasks import TaskLoadReport, iter_tasks, save_tasks
from arena.types import POOLS, Intent, Pool, Task
from neurons.cli.console import fail, note, progress

app = typer.Typer(
    help="Shopping tasks: import, generate, leak clusters, pools, rotation, audit.",
    no_args_is_help=True,
    add_completion=False,
)

SECRET_ENV = "ARENA_ROUND_SECRET"
PARAPHRASE_KEY_ENV = "ARENA_PARAPHRASE_API_KEY"


def _emit(data: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        for line in lines:
            typer.echo(line)


def _load_all(paths: list[Path]) -> tuple[list[Task], TaskLoadReport]:
    report = TaskLoadReport()
    try:
        return list(iter_tasks(paths, report)), report
    except ArenaError as exc:
        fail(str(exc))


def _bad_rows(report: TaskLoadReport) -> list[str]:
    return [f"bad row {row}" for row in report.bad_rows[:20]]


@app.command("import")
def import_command(
    files: Annotated[list[Path], typer.Argument(help="ShoppingBench .jsonl files or ORO suite .json files.")],
    out: Annotated[Path, typer.Option("--out", help="Task file to write (our JSONL).")],
    fmt: Annotated[str, typer.Option("--format", help="shoppingbench or oro.")] = "shoppingbench",
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Import tasks from ShoppingBench rows or an ORO suite into our task file, clustered.

    Example: arena tasks import --format shoppingbench data/synthesize_*_test.jsonl --out tasks.jsonl
    """
    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    report = TaskLoadReport()
    try:
        tasks = import_tasks(fmt, files, report)
        clustered, clusters = cluster_tasks(tasks)
        save_tasks(clustered, out)
    except ArenaError as exc:
        fail(str(exc))
    summary = {
        "tasks": len(clustered),
        "rows": report.rows,
        "bad": report.bad,
        "duplicates": report.duplicates,
    }
    summary["clusters"] = clusters.clusters
    lines = [f"imported {len(clustered)} tasks ({report.bad} bad rows) into {out}", *_bad_rows(report)]
    _emit({**summary, "bad_rows": [str(r) for r in report.bad_rows]}, as_json, lines)


def _intents(value: str) -> tuple[Intent, ...]:
    chosen = tuple(part.strip() for part in value.split(",") if part.strip())
    unknown = [c for c in chosen if c not in INTENTS]
    if unknown or not chosen:
        fail(f"--intents takes a comma-separated subset of {','.join(INTENTS)}, got {value!r}")
    return cast(tuple[Intent, ...], chosen)


@app.command("generate")
def generate_command(
    index_dir: Annotated[Path, typer.Option("--index", help="Search index directory (arena catalog build).")],
    n: Annotated[int, typer.Option("--n", min=1, help="How many tasks to generate.")],
    out: Annotated[Path, typer.Option("--out", help="Task file to write.")],
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same tasks).")] = 0,
    intents: Annotated[str, typer.Option("--intents", help="Comma-separated intents.")] = ",".join(INTENTS),
    avoid: Annotated[
        list[Path], typer.Option("--avoid", help="Task files whose gold products to avoid.")
    ] = [],  # noqa: B006
    findable: Annotated[
        bool, typer.Option(help="Require each gold item on page 1 of a search for its name.")
    ] = True,
    paraphrase_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL for paraphrases.")
    ] = None,
    paraphrase_model: Annotated[str | None, typer.Option(help="Model name for paraphrases.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Generate fresh tasks from a search index (ShoppingBench's method), mention-checked and solvable.

    Example: arena tasks generate --index var/index --n 1000 --seed 7 --intents product,shop --out new.jsonl
    """
    config = GenerateConfig(intents=_intents(intents))
    if (paraphrase_url is None) != (paraphrase_model is None):
        fail("--paraphrase-url and --paraphrase-model go together")
    avoided = {item.product_id for task in _load_all(avoid)[0] for item in task.gold}
    try:
        from arena.index import open_index

        index = open_index(index_dir)
    except ArenaError as exc:
        fail(str(exc))
    paraphraser = None
    if paraphrase_url and paraphrase_model:
        from arena.paraphrase import make_paraphraser

        key = os.environ.get(PARAPHRASE_KEY_ENV, "none")
        paraphraser = make_paraphraser(paraphrase_url, paraphrase_model, api_key=key, seed=seed)
    try:
        with progress("generating", n) as advance:
            tasks, report = generate_tasks(
                index,
                n=n,
                seed=seed,
                config=config,
                finder=make_finder(index) if findable else None,
                paraphraser=paraphraser,
                avoid_product_ids=avoided,
                progress=advance,
            )
        clustered, clusters = cluster_tasks(tasks)
        save_tasks(clustered, out)
    except ArenaError as exc:
        fail(str(exc))
    finally:
        index.close()
    data = {
        **asdict(report),
        "rejected": dict(report.rejected),
        "clusters": clusters.clusters,
        "out": str(out),
    }
    lines = [f"generated {report.tasks} tasks in {report.seconds:.1f}s ({report.draws} draws) into {out}"]
    _emit(data, as_json, lines)
    if report.tasks < n:
        fail(f"only {report.tasks} of {n} tasks could be generated (catalog exhausted?)", code=1)


@app.command("cluster")
def cluster_command(
    files: Annotated[list[Path], typer.Argument(help="Task files, clustered together.")],
    out: Annotated[Path, typer.Option("--out", help="Task file to write.")],
    near_dup: Annotated[
        float, typer.Option(help="Jaccard of content shingles that links.")
    ] = NEAR_DUP_THRESHOLD,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Assign leak clusters over all the tasks given, then put each mixed-pool group in its safest pool.

    Example: arena tasks cluster old.jsonl new.jsonl --out all.jsonl
    """
    tasks, _ = _load_all(files)
    clustered, report = cluster_tasks(tasks, near_dup_threshold=near_dup)
    reconciled, moved = reconcile_pools(clustered)
    save_tasks(reconciled, out)
    lines = [
        f"{report.tasks} tasks in {report.clusters} clusters (largest {report.largest}); links {report.links}"
    ]
    lines += [f"cluster {c} moved wholly to {p}" for c, p in moved.items()]
    _emit({**asdict(report), "reconciled": moved}, as_json, lines)


@app.command("assign-pools")
def assign_pools_command(
    file: Annotated[Path, typer.Argument(help="Task file (clustered).")],
    out: Annotated[Path, typer.Option("--out", help="Task file to write.")],
    practice: Annotated[float, typer.Option(help="Share of all tasks to hold in practice.")] = 0.0,
    never_touch: Annotated[float, typer.Option(help="Share of all tasks to hold in never_touch.")] = 0.0,
    move: Annotated[list[str], typer.Option(help="Move one cluster: CLUSTER=POOL (repeatable).")] = [],  # noqa: B006
    seed: Annotated[str, typer.Option(help="Seed of the cluster order.")] = "0",
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Move whole leak clusters between pools: shares for practice/never_touch, or explicit moves.

    Example: arena tasks assign-pools tasks.jsonl --practice 0.1 --never-touch 0.1 --out tasks.jsonl
    """
    tasks = _load_all([file])[0]
    try:
        tasks = assign_pools(tasks, practice=practice, never_touch=never_touch, seed=seed)
        for spec in move:
            cluster, _, pool = spec.partition("=")
            if pool not in POOLS:
                fail(f"--move takes CLUSTER=POOL with POOL one of {', '.join(POOLS)}, got {spec!r}")
            tasks = move_clusters(tasks, [cluster], pool)
        save_tasks(tasks, out)
    except ArenaError as exc:
        fail(str(exc))
    counts = {pool: sum(1 for t in tasks if t.pool == pool) for pool in get_args(Pool)}
    _emit({"pools": counts}, as_json, [f"{pool}: {count}" for pool, count in counts.items()])


def _audit_lines(report: AuditReport) -> list[str]:
    lines = [f"audit {'ok' if report.ok else 'FAILED'}: {report.tasks} tasks, pools {report.pools}"]
    lines += [
        f"violation {f.rule}: {f.detail} {list(f.task_ids)} {list(f.pools)}" for f in report.violations[:50]
    ]
    lines += [f"near miss: {f.detail} {list(f.task_ids)} {list(f.pools)}" for f in report.near_misses[:20]]
    lines.append(f"{report.violation_count} violations, {report.near_miss_count} near misses")
    return lines


@app.command("audit")
def audit_command(
    files: Annotated[list[Path], typer.Argument(help="Task files (every pool, together).")],
    near_dup: Annotated[
        float, typer.Option(help="Cross-pool Jaccard that fails.")
    ] = AUDIT_NEAR_DUP_THRESHOLD,
    near_miss: Annotated[
        float, typer.Option(help="Cross-pool Jaccard reported as a near miss.")
    ] = NEAR_MISS_THRESHOLD,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check that no pool leaks into another; exit 1 on any violation.

    Example: arena tasks audit tasks.jsonl --json
    """
    tasks, _ = _load_all(files)
    report = audit(tasks, near_dup_threshold=near_dup, near_miss_threshold=near_miss)
    _emit(report.to_json(), as_json, _audit_lines(report))
    if not report.ok:
        raise typer.Exit(1)


def _secret() -> bytes:
    secret = os.environ.get(SECRET_ENV, "")
    if not secret:
        fail(f"set {SECRET_ENV} to the validator's round secret")
    return secret.encode("utf-8")


@app.command("draw")
def draw_command(
    file: Annotated[Path, typer.Argument(help="Task file.")],
    round_number: Annotated[int, typer.Option("--round", min=0, help="Round number.")],
    n: Annotated[int, typer.Option("--n", min=1, help="Tasks to draw.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show which held_out tasks a round draws (secret from ARENA_ROUND_SECRET); reproducible.

    Example: ARENA_ROUND_SECRET=... arena tasks draw tasks.jsonl --round 12 --n 8
    """
    drawn = draw_round(_load_all([file])[0], secret=_secret(), round_number=round_number, n=n)
    _emit(
        {"round": round_number, "task_ids": [t.task_id for t in drawn]}, as_json, [t.task_id for t in drawn]
    )


@app.command("retire")
def retire_command(
    file: Annotated[Path, typer.Argument(help="Task file.")],
    served: Annotated[list[str], typer.Option("--served", help="A served task id (repeatable).")],
    out: Annotated[Path, typer.Option("--out", help="Task file to write.")],
) -> None:
    """Retire served tasks with their whole pool groups (leak clusters and their near-duplicates).

    Example: arena tasks retire tasks.jsonl --served t-abc --served t-def --out tasks.jsonl
    """
    tasks = retire(_load_all([file])[0], served)
    save_tasks(tasks, out)
    typer.echo(f"retired: {sum(1 for t in tasks if t.pool == 'retired')} tasks in total")


@app.command("export")
def export_command(
    file: Annotated[Path, typer.Argument(help="Task file (every pool: the audit needs them all).")],
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    fmt: Annotated[str, typer.Option("--format", help="shoppingbench or oro.")] = "shoppingbench",
    pool: Annotated[list[str], typer.Option("--pool", help="Pool(s) to export.")] = ["practice"],  # noqa: B006
) -> None:
    """Audit all tasks, then export one pool (practice by default) as ShoppingBench rows or an ORO suite.

    Example: arena tasks export tasks.jsonl --format oro --out practice_suite.json
    """
    if fmt not in FORMATS or any(p not in POOLS for p in pool):
        fail(f"--format must be one of {', '.join(FORMATS)} and --pool one of {', '.join(POOLS)}")
    try:
        count, report = export_tasks(_load_all([file])[0], fmt, out, pools=cast(list[Pool], pool))
    except ArenaError as exc:
        fail(str(exc))
    if not report.ok:
        for line in _audit_lines(report):
            note(line)
        fail("audit failed: nothing exported", code=1)
    typer.echo(f"exported {count} tasks to {out}")
