"""`arena curate`: run the curation funnel over a database and export SFT, KTO, DPO and GRPO data sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict, SettingsError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session

from arena.errors import SearchIndexError
from curation.config import CurationConfig, comma_list
from curation.conversion.convert import Converter, ConverterSpec
from curation.conversion.pool import Workers
from curation.errors import CurationError, SplitLeakError
from curation.export import curate_and_export
from curation.formats import Format, format_names, formats_named
from neurons.batch import batch_collector
from neurons.cli.console import fail, progress, warn
from neurons.cli.flags import Flag, flag_errors, overrides, with_flags
from neurons.cli.validator_files import ConversionSettings, conversion_files
from neurons.metrics import CURATION_ROWS
from storage.db import check_schema, make_engine, make_sessionmaker
from storage.errors import StorageError
from storage.paths import read_paths
from storage.traces import count_judged


class CurateSettings(ConversionSettings):
    """``arena curate``'s settings: flags, else ``ARENA_CURATE_*`` variables (and ``.env``), else defaults.

    The funnel's own knobs are the ``funnel`` section (``curation.config.CurationConfig``, whose
    fields hold their defaults and descriptions), read from ``ARENA_CURATE_FUNNEL__*``.
    """

    model_config = SettingsConfigDict(env_prefix="ARENA_CURATE_")

    db: SecretStr = Field(description="Database URL: sqlite:///arena.db or postgresql://... (a secret).")
    out: Path = Field(description="Export directory (created; our files in it are replaced).")
    formats: Annotated[tuple[str, ...], NoDecode] = Field(
        default_factory=format_names,
        description="Comma-separated export formats to write (curation.formats).",
    )
    convert: bool = Field(
        default=True,
        description="Convert the traces of --convert-axes (off: B traces go aside to axis_b.jsonl).",
    )
    funnel: CurationConfig = Field(default_factory=CurationConfig)

    _comma_list = field_validator("formats", mode="before")(comma_list)


# The settings with a flag: all of them (every one is also an ARENA_CURATE_* variable).
CURATE_FLAGS = (
    Flag("db"),
    Flag("out"),
    Flag("formats", "--format"),
    Flag("funnel.min_reasoning"),
    Flag("funnel.unscored"),
    Flag("funnel.axes", "--axis"),
    Flag("funnel.split_by"),
    Flag("funnel.eval_share"),
    Flag("funnel.cap_per_task_miner", "--cap-task-miner"),
    Flag("funnel.cap_per_task", "--cap-task"),
    Flag("funnel.miner_axis_sample"),
    Flag("index"),
    Flag("worlds"),
    Flag("funnel.convert_axes"),
    Flag("convert"),
    Flag("workers"),
)


def curate(
    as_json: Annotated[bool, typer.Option("--json", help="Print the funnel summary as JSON.")] = False,
    **given: Any,
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
    settings = _settings(given)
    out, worlds = settings.out, settings.worlds
    try:
        formats = formats_named(settings.formats)
    except CurationError as exc:
        fail(f"--format: {exc}")
    if not formats:
        fail("--format takes a comma-separated list of formats, got none")
    config = settings.funnel if settings.convert else settings.funnel.model_copy(update={"convert_axes": ()})
    if worlds is not None and not worlds.is_dir():
        fail(f"--worlds: no directory {worlds}")
    with batch_collector():
        funnel = _run(settings, config, formats)
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


def _settings(given: dict[str, Any]) -> CurateSettings:
    """The settings from the flags given, the environment and the defaults (exit 2 when invalid)."""
    try:
        return CurateSettings(**overrides(given, CURATE_FLAGS))
    except ValidationError as exc:
        fail("; ".join(flag_errors(exc, CurateSettings, CURATE_FLAGS)))
    except (CurationError, SettingsError) as exc:
        fail(str(exc))


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


def _run(settings: CurateSettings, config: CurationConfig, formats: tuple[Format, ...]) -> dict[str, Any]:
    db, out = settings.db.get_secret_value(), settings.out
    try:
        url = make_url(db)
        engine = make_engine(db)
    except (ArgumentError, StorageError, ValueError) as exc:
        fail(f"--db is not a usable database URL ({exc})")
    source = url.render_as_string(hide_password=True)
    # SQLite would create a missing file; a typo in the path should say so instead.
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        if not Path(url.database).is_file():
            engine.dispose()
            fail(f"--db: no database file at {url.database}")
    try:
        check_schema(engine)
        with make_sessionmaker(engine)() as session:
            given = (settings.index, settings.worlds)
            converter, off = _converter(session, given) if config.convert_axes else (None, "")
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
                    workers=Workers.given(settings.workers),
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


with_flags(curate, CurateSettings, CURATE_FLAGS)
