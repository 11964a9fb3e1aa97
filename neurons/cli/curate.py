"""`arena curate`: run the curation funnel over a database and export SFT, KTO, DPO and GRPO data sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session

from arena.errors import SearchIndexError
from curation.config import CurationConfig, SplitBy, UnscoredPolicy
from curation.conversion.convert import Converter, ConverterSpec
from curation.conversion.pool import Workers
from curation.errors import CurationError, SplitLeakError
from curation.export import curate_and_export
from curation.formats import FORMATS, Format, formats_named
from neurons.batch import batch_collector
from neurons.cli.console import fail, progress, warn
from neurons.cli.validator_files import conversion_files
from neurons.metrics import CURATION_ROWS
from storage.db import check_schema, make_engine, make_sessionmaker
from storage.errors import StorageError
from storage.paths import read_paths
from storage.traces import count_judged

ALL_FORMATS = ",".join(fmt.name for fmt in FORMATS)


def _formats(value: str) -> tuple[Format, ...]:
    names = [part.strip() for part in value.split(",") if part.strip()]
    try:
        chosen = formats_named(names)
    except CurationError as exc:
        fail(f"--format: {exc}")
    if not chosen:
        fail(f"--format takes a comma-separated list of formats, got {value!r}")
    return chosen


def curate(
    db: Annotated[str, typer.Option("--db", help="Database URL: sqlite:///arena.db or postgresql://...")],
    out: Annotated[
        Path, typer.Option("--out", help="Export directory (created; our files in it are replaced).")
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="Comma-separated formats to write: sft, kto, dpo, grpo.")
    ] = ALL_FORMATS,
    min_reasoning: Annotated[
        float,
        typer.Option("--min-reasoning", min=0.0, max=1.0, help="Drop traces whose reasoning value is below."),
    ] = 0.5,
    unscored: Annotated[
        str,
        typer.Option("--unscored", help="Traces the reasoning judge did not score: keep, drop or separate."),
    ] = "keep",
    axis: Annotated[
        str,
        typer.Option(
            "--axis", help="Comma-separated axis labels for the imitation sets (A, B, mixed, unknown)."
        ),
    ] = "A",
    split_by: Annotated[
        str, typer.Option("--split-by", help="cluster (train/eval by leak cluster) or none.")
    ] = ("cluster"),
    eval_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of leak clusters in eval.")
    ] = 0.1,
    cap_task_miner: Annotated[int, typer.Option(min=1, help="Traces kept per (task, miner, outcome).")] = 2,
    cap_task: Annotated[int, typer.Option(min=1, help="Traces kept per (task, outcome).")] = 8,
    miner_axis_sample: Annotated[
        int,
        typer.Option(
            min=0,
            help="Recent trajectories per miner judging its miner-level axis (0: off).",
        ),
    ] = 64,
    index: Annotated[
        Path | None,
        typer.Option(
            "--index",
            help="Search index the traces were judged on (arena catalog build); conversion replays "
            "against it. Default: the one the validator recorded in the database, else "
            "~/.arena/validator/index, where it exists.",
        ),
    ] = None,
    worlds: Annotated[
        Path | None,
        typer.Option(
            "--worlds",
            help="World packs the traces ran on (one pack or a directory of packs); conversion replays "
            "world traces on them. Default: the validator's world cache as recorded in the database, "
            "else ~/.arena/validator/worlds.",
        ),
    ] = None,
    convert_axes: Annotated[
        str,
        typer.Option(
            "--convert-axes",
            help="Comma-separated axis labels whose traces are converted into agentic trajectories.",
        ),
    ] = "B,mixed",
    no_convert: Annotated[
        bool, typer.Option("--no-convert", help="No conversion: B traces go aside to axis_b.jsonl.")
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=0,
            help="Conversion worker processes (0: one per core, started once the run needs them); "
            "the export is the same with any number.",
        ),
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the funnel summary as JSON.")] = False,
) -> None:
    """Curate judged traces into TRL training data: funnel, dedup, leak-safe train/eval split.

    Writes sft, kto, dpo and grpo rows (JSONL and Parquet): train in DIR, eval in DIR/eval.

    Converts the traces of --convert-axes (default B, mixed) into agentic trajectories verified by
    the judge (docs/curation.md); that needs the search index the traces were judged on and the
    world packs they ran on: by default those the validator recorded in its database. Where
    conversion cannot run, a warning says how many traces it left and the flag that fixes it
    (funnel.json's convert notes too); with --no-convert, B traces are set aside.

    Also writes axis_b.jsonl, funnel.json, manifest.json and a dataset card (README.md).

    Exits 1 when the task audit finds a leak across the split (nothing is written), 2 on bad input.

    Example: arena curate --db sqlite:///arena.db --out export --format sft,kto --min-reasoning 0.6
    """
    formats = _formats(fmt)
    if unscored not in ("keep", "drop", "separate"):
        fail(f"--unscored must be keep, drop or separate, got {unscored!r}")
    if split_by not in ("cluster", "none"):
        fail(f"--split-by must be cluster or none, got {split_by!r}")
    try:
        config = CurationConfig(
            min_reasoning=min_reasoning,
            unscored=cast(UnscoredPolicy, unscored),
            axes=_labels(axis),
            split_by=cast(SplitBy, split_by),
            eval_share=eval_share,
            cap_per_task_miner=cap_task_miner,
            cap_per_task=cap_task,
            miner_axis_sample=miner_axis_sample,
            convert_axes=() if no_convert else _labels(convert_axes),
        )
    except CurationError as exc:
        fail(str(exc))
    if worlds is not None and not worlds.is_dir():
        fail(f"--worlds: no directory {worlds}")
    with batch_collector():
        funnel = _run(db, out, config, formats, (index, worlds), workers)
    for line in conversion_warnings(funnel):
        warn(line)
    for stage, (n_in, n_out) in _stage_rows(funnel).items():
        CURATION_ROWS.labels(stage=stage, direction="in").set(n_in)
        CURATION_ROWS.labels(stage=stage, direction="out").set(n_out)
    if as_json:
        typer.echo(json.dumps(_summary(funnel, out), indent=2))
        return
    for name, stage in funnel["stages"].items():
        typer.echo(f"{name:>15}: {stage['in']:>7} in {stage['out']:>7} out  {_reasons(stage)}")
    for name, sides in funnel["exports"].items():
        typer.echo(f"{name:>15}: train {sides['train']:>7}  eval {sides['eval']:>7}")
    typer.echo(f"wrote {out}")


def _labels(value: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in value.split(",") if a.strip())


def _converter(session: Session, given: tuple[Path | None, Path | None]) -> tuple[Converter | None, str]:
    """The converter on the given index and worlds (a bad one fails), else the validator's; or why none.

    Without ``--index``, the index the validator recorded in the database, then its default
    (``neurons.cli.validator_files``); one found but unreadable turns conversion off, saying why.
    """
    files = conversion_files(*given, read_paths(session))
    if files.index is None:
        return None, files.missing
    try:
        return ConverterSpec(index_dir=files.index, worlds_dir=files.worlds).open(), ""
    except SearchIndexError as exc:
        if given[0] is not None:
            fail(f"--index: {exc}")
        return None, f"the search index at {files.index} cannot be opened ({exc})"


def conversion_warnings(funnel: dict[str, Any]) -> list[str]:
    """What the funnel's ``convert`` notes say could not be converted, and the flag that fixes it."""
    stage = funnel["stages"]["convert"]
    notes, lines = stage.get("notes", {}), []
    off = notes.get("off")
    if off:
        aside, dropped = sum(off["set_aside"].values()), sum(off["dropped"].values())
        lines.append(
            f"conversion did not run ({off['reason']}): {aside} traces set aside to axis_b.jsonl and "
            f"{dropped} dropped instead of converted; fix: {off['fix']}"
        )
    for cause, fix in notes.get("fix", {}).items():
        lines.append(f"{stage['dropped'][cause]} traces not converted ({cause}); fix: {fix}")
    return lines


def _run(
    db: str,
    out: Path,
    config: CurationConfig,
    formats: tuple[Format, ...],
    conversion: tuple[Path | None, Path | None],
    workers: int,
) -> dict[str, Any]:
    try:
        url = make_url(db)
        engine = make_engine(db)
    except (ArgumentError, StorageError, ValueError) as exc:
        fail(f"--db {db!r} is not a usable database URL ({exc})")
    source = url.render_as_string(hide_password=True)
    # SQLite would create a missing file; a typo in the path should say so instead.
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        if not Path(url.database).is_file():
            engine.dispose()
            fail(f"--db: no database file at {url.database}")
    try:
        check_schema(engine)
        with make_sessionmaker(engine)() as session:
            converter, off = _converter(session, conversion) if config.convert_axes else (None, "")
            total = count_judged(session)
            with progress("curating", total) as update:
                return curate_and_export(
                    session,
                    out,
                    config=config,
                    formats=formats,
                    source=source,
                    progress=update,
                    converter=converter,
                    conversion_off_because=off,
                    workers=Workers.given(workers),
                )
    except SplitLeakError as exc:
        fail(str(exc), code=1)
    except (CurationError, StorageError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {out}: {exc}")
    finally:
        engine.dispose()


def _stage_rows(funnel: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {name: (stage["in"], stage["out"]) for name, stage in funnel["stages"].items()}


def _reasons(stage: dict[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in stage["dropped"].items()] + [
        f"aside {k} {v}" for k, v in stage["aside"].items()
    ]
    return ", ".join(parts)


def _summary(funnel: dict[str, Any], out: Path) -> dict[str, Any]:
    return {
        "out": str(out),
        "source": funnel["source"],
        "stages": {
            name: {k: s[k] for k in ("in", "out", "dropped", "aside")} for name, s in funnel["stages"].items()
        },
        "splits": funnel["splits"],
        "exports": funnel["exports"],
        "origins": funnel["origins"],
        "audit": funnel["audit"],
    }
