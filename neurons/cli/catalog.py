"""`arena catalog`: catalogs and the search index built from them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from arena.errors import CatalogError, SearchIndexError
from arena.index import build_index

app = typer.Typer(help="Catalogs and the search index.", no_args_is_help=True)


@app.command("build")
def build(
    catalog: Annotated[
        list[Path], typer.Option("--catalog", help="Catalog file (.jsonl or .jsonl.gz); repeatable.")
    ],
    index: Annotated[Path, typer.Option("--index", help="Index directory (an existing index is replaced).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the build report as JSON.")] = False,
) -> None:
    """Build the search index (BM25 over titles, SKU and attribute values; product store) from catalogs.

    Duplicate product ids keep their first occurrence; they and unparsable rows are counted as bad rows.

    Example: arena catalog build --catalog documents.jsonl.gz --index data/index --json
    """
    err = Console(stderr=True)
    missing = [str(path) for path in catalog if not path.is_file()]
    if missing:
        err.print(f"[red]error:[/red] catalog file not found: {', '.join(missing)}")
        raise typer.Exit(2)
    columns = (SpinnerColumn(), TextColumn("indexing"), BarColumn(), TextColumn("{task.completed:,} rows"))
    try:
        with Progress(*columns, TimeElapsedColumn(), console=err, transient=as_json) as bar:
            task = bar.add_task("indexing", total=None)
            report = build_index(catalog, index, progress=lambda rows: bar.update(task, completed=rows))
    except (CatalogError, SearchIndexError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(json.dumps({"index": str(index), **dataclasses.asdict(report)}, indent=2))
        return
    typer.echo(
        f"indexed {report.products:,} products into {index} in {report.seconds:.1f}s "
        f"({report.bytes_on_disk / 2**20:.1f} MiB, catalog {report.catalog_version})"
    )
    if report.bad_rows:
        typer.echo(f"{report.bad_rows:,} bad rows skipped ({report.duplicates:,} duplicate ids), first ones:")
        for line in report.bad_row_samples:
            typer.echo(f"  {line}")
