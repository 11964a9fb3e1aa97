"""The `arena catalog` commands: make a synthetic catalog, rebuild one from ShoppingBench tasks, index one."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from arena.catalog import write_products
from arena.errors import CatalogError, InvalidTask, SearchIndexError
from arena.from_tasks import build_from_tasks
from arena.index import build_index
from arena.shoppingbench import intent_from_path, load_shoppingbench
from arena.synth import iter_synth_products
from arena.types import Task
from neurons.cli.console import fail, note, progress

app = typer.Typer(
    help="Make product catalogs (synthetic, or rebuilt from tasks) and index them.",
    no_args_is_help=True,
    add_completion=False,
)

PROGRESS_EVERY = 5000
JsonFlag = Annotated[bool, typer.Option("--json", help="Print a machine-readable summary on stdout.")]


@contextmanager
def _progress(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    # A bar update per product would cost more than writing it: redraw every PROGRESS_EVERY.
    with progress(label, total) as update:

        def advance(count: int) -> None:
            if count % PROGRESS_EVERY == 0 or count == total:
                update(count)

        yield advance


def _summary(products: int, seconds: float, path: Path, **extra: Any) -> dict[str, Any]:
    return {
        "products": products,
        "bad_rows": 0,
        "seconds": round(seconds, 3),
        "path": str(path),
        "bytes": path.stat().st_size,
        **extra,
    }


@app.command()
def synth(
    products: Annotated[int, typer.Option("--products", help="How many products to generate.")],
    out: Annotated[Path, typer.Option("--out", help="Output file (.jsonl, or .jsonl.gz to compress).")],
    seed: Annotated[int, typer.Option("--seed", help="Random seed: same seed, same bytes.")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """Generate a deterministic synthetic catalog in ShoppingBench's product schema.

    Example: arena catalog synth --products 100000 --seed 7 --out catalog.jsonl.gz
    """
    if products < 1:
        fail("--products must be at least 1")
    started = time.perf_counter()
    with _progress("synth", products) as advance:
        written = write_products(iter_synth_products(products, seed), out, on_product=advance)
    summary = _summary(written, time.perf_counter() - started, out, seed=seed)
    _report(summary, as_json, f"wrote {written} synthetic products to {out}")


@app.command("from-tasks")
def from_tasks(
    tasks: Annotated[
        list[Path],
        typer.Option("--tasks", help="A task file or a folder of them; repeat for several."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Output file (.jsonl, or .jsonl.gz to compress).")],
    seed: Annotated[int, typer.Option("--seed", help="Random seed of prices, ids and decoys.")] = 0,
    decoys: Annotated[int, typer.Option("--decoys", min=0, help="Near-miss decoys per gold product.")] = 3,
    siblings: Annotated[
        int, typer.Option("--siblings", min=0, help="Extra products per shop-task shop.")
    ] = 3,
    background: Annotated[
        int, typer.Option("--background", min=0, help="Synthetic products around them.")
    ] = 0,
    manifest: Annotated[
        Path | None, typer.Option("--manifest", help="Also write gold ids, decoys and conflicts as JSON.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Rebuild a catalog from ShoppingBench task files: every gold product, plus near-miss decoys.

    Task files are ShoppingBench's ``synthesize_<intent>_*.jsonl`` (intent from the name) or
    Arena task JSONL (one Task per line). Conflicting constraints on one product are reported,
    not fatal. See docs/catalog.md for the method.

    Example: arena catalog from-tasks --tasks ../shared/data/shoppingbench --out catalog.jsonl --json
    """
    started = time.perf_counter()
    loaded = load_task_files(tasks)
    catalog = build_from_tasks(loaded, seed=seed, decoys=decoys, siblings=siblings, background=background)
    with _progress("from-tasks", len(catalog.products)) as advance:
        written = write_products(catalog.products, out, on_product=advance)
    conflicts = [asdict(c) for c in catalog.conflicts]
    for conflict in catalog.conflicts:
        note(f"conflict: product {conflict.product_id}: {conflict.reason}")
    if manifest is not None:
        body = {
            "gold_ids": catalog.gold_ids,
            "decoys": [asdict(d) for d in catalog.decoys],
            "conflicts": conflicts,
        }
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    summary = _summary(
        written,
        time.perf_counter() - started,
        out,
        tasks=len(loaded),
        gold=len(catalog.gold_ids),
        decoys=len(catalog.decoys),
        siblings=catalog.siblings,
        background=catalog.background,
        conflicts=conflicts,
    )
    _report(summary, as_json, f"wrote {written} products ({len(catalog.gold_ids)} gold) to {out}")


@app.command("build")
def build(
    catalog: Annotated[
        list[Path], typer.Option("--catalog", help="Catalog file (.jsonl or .jsonl.gz); repeat for several.")
    ],
    index: Annotated[Path, typer.Option("--index", help="Index directory (an existing index is replaced).")],
    as_json: JsonFlag = False,
) -> None:
    """Build the search index (BM25 over titles, SKU and attribute values, and the product store).

    Duplicate product ids keep their first occurrence; they and unparsable rows are counted as
    bad rows. See docs/search.md.

    Example: arena catalog build --catalog catalog.jsonl.gz --index data/index --json
    """
    missing = [str(path) for path in catalog if not path.is_file()]
    if missing:
        fail(f"catalog file not found: {', '.join(missing)}")
    try:
        with _progress("index", None) as advance:
            report = build_index(catalog, index, progress=advance)
    except (CatalogError, SearchIndexError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps({"index": str(index), **asdict(report)}, ensure_ascii=False))
        return
    typer.echo(
        f"indexed {report.products} products into {index} in {report.seconds:.1f} s "
        f"({report.bytes_on_disk} bytes, catalog {report.catalog_version})"
    )
    if report.bad_rows:
        typer.echo(f"{report.bad_rows} bad rows skipped ({report.duplicates} duplicate ids), first ones:")
        for line in report.bad_row_samples:
            typer.echo(f"  {line}")


def load_task_files(paths: list[Path]) -> list[Task]:
    """Load tasks from files or folders (ShoppingBench files by name, else Arena task JSONL).

    Raises:
        typer.Exit: code 2 with a message on a missing file or a bad row.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("synthesize_*.jsonl*"))
            if not found:
                fail(f"no synthesize_*.jsonl task files in {path}")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            fail(f"task file not found: {path}")
    tasks: list[Task] = []
    try:
        for path in files:
            try:
                intent_from_path(path)
            except InvalidTask:
                tasks += _arena_tasks(path)
            else:
                tasks += load_shoppingbench([path])
    except (InvalidTask, OSError, ValueError) as exc:  # ValueError: undecodable text
        fail(str(exc))
    if not tasks:
        fail("the task files hold no tasks")
    return tasks


def _arena_tasks(path: Path) -> list[Task]:
    tasks: list[Task] = []
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    tasks.append(Task.model_validate_json(line))
                except ValueError as exc:
                    raise InvalidTask(f"{path}:{line_no}: not a task row ({exc.__class__.__name__})") from exc
    return tasks


def _report(summary: dict[str, Any], as_json: bool, line: str) -> None:
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
    else:
        typer.echo(f"{line} in {summary['seconds']} s ({summary['bytes']} bytes)")
