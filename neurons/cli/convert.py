"""`arena convert`: rewrite judged harness traces (axis B) as agentic trajectories, verified by the judge."""

from __future__ import annotations

import asyncio
import gc
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict, SettingsError

from curation.config import comma_list
from curation.conversion.convert import Converter, ConverterSpec, convert_judged
from curation.conversion.lines import UNREADABLE, conversion_line, converted_line, read_traces
from curation.conversion.pool import ConversionPool, Workers
from curation.conversion.results import ConversionConfig
from curation.conversion.step import RationaleWriter
from curation.conversion.template import TemplateWriter
from curation.stages.convert import FIXES
from judging.types import AXES
from neurons.batch import batch_collector
from neurons.cli.console import fail, progress, warn
from neurons.cli.flags import Flag, flag_errors, overrides, with_flags
from neurons.cli.validator_files import ConversionSettings, conversion_files
from storage.paths import ValidatorPaths, read_paths
from storage.records import JudgedTrace

UNKNOWN_WORLD = "unknown_world"


class ConvertSettings(ConversionSettings):
    """``arena convert``'s settings: flags, else ``ARENA_CONVERT_*`` variables (and ``.env``), else defaults.

    The teacher's endpoint, model and API key keep their own variables (``ARENA_TEACHER_*``).
    """

    model_config = SettingsConfigDict(env_prefix="ARENA_CONVERT_")

    out: Path = Field(description="Output JSONL: one conversion or drop per trace.")
    db: SecretStr | None = Field(default=None, description="Read judged traces from this database URL.")
    traces: Path | None = Field(default=None, description="Read judged traces from this JSONL file instead.")
    axes: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(), description="Only traces of these axis labels (comma-separated; none: all)."
    )
    limit: int | None = Field(default=None, ge=1, description="Convert at most this many traces.")
    prune: bool = Field(
        default=ConversionConfig.prune,
        description="Compile harness noise out where a replay proves it harmless.",
    )
    concurrency: int = Field(default=4, ge=1, description="Traces converted at once (a teacher).")
    teacher_base_url: str | None = Field(
        default=None,
        validation_alias="ARENA_TEACHER_BASE_URL",
        description="OpenAI-compatible endpoint of a teacher model (its key: ARENA_TEACHER_API_KEY); "
        "none: the deterministic template writer.",
    )
    teacher_model: str | None = Field(
        default=None, validation_alias="ARENA_TEACHER_MODEL", description="The teacher's model."
    )
    teacher_api_key: SecretStr = Field(
        default=SecretStr("none"),
        validation_alias="ARENA_TEACHER_API_KEY",
        description="The teacher's API key.",
    )

    _comma_list = field_validator("axes", mode="before")(comma_list)

    @field_validator("axes")
    @classmethod
    def _known_axes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - set(AXES))
        if unknown:
            raise ValueError(f"unknown label(s) {', '.join(unknown)} (known: {', '.join(AXES)})")
        return value

    @model_validator(mode="after")
    def _one_source_and_a_whole_teacher(self) -> ConvertSettings:
        if (self.db is None) == (self.traces is None):
            raise ValueError("pass exactly one of --db and --traces")
        if self.teacher_base_url and not self.teacher_model:
            raise ValueError("--teacher-base-url needs --teacher-model")
        return self


# The settings with a flag: all but the teacher's API key (a secret: its variable only).
CONVERT_FLAGS = (
    Flag("out"),
    Flag("db"),
    Flag("traces"),
    Flag("axes"),
    Flag("index"),
    Flag("worlds"),
    Flag("limit"),
    Flag("prune"),
    Flag("teacher_base_url"),
    Flag("teacher_model"),
    Flag("concurrency"),
    Flag("workers"),
)


def convert_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    **given: Any,
) -> None:
    """Convert judged traces into agentic trajectories: a rationale per call, re-judged.

    Each trace's calls get an assistant turn whose reasoning cites only the task and earlier
    logged results; tool messages are the logged bytes; harness noise is pruned where a replay
    against the index proves it changes nothing; the result is re-judged (outcome unchanged,
    format and grounding pass, >= 75% of steps driven) or dropped with the failing check.
    See docs/curation.md. Exits 2 on bad input.

    Without --index and --worlds, the index and world packs the validator recorded in the database
    are used (docs/curation.md); no index found is an error, and world traces whose packs are not
    found are counted with the flag that fixes it (a warning on stderr).

    Example: arena convert --db sqlite:///validator.db --out converted.jsonl
    """
    settings = _settings(given)
    db = settings.db.get_secret_value() if settings.db is not None else None
    out, worlds, wanted = settings.out, settings.worlds, set(settings.axes)
    from arena.errors import SearchIndexError

    _check_worlds(worlds)
    files = conversion_files(settings.index, worlds, _recorded(db) if db is not None else ValidatorPaths())
    if files.index is None:
        fail(f"{files.missing}; pass --index DIR (the search index the traces were judged on)")
    config = ConversionConfig(prune=settings.prune)
    try:
        converter = ConverterSpec(index_dir=files.index, worlds_dir=files.worlds, config=config).open()
    except SearchIndexError as exc:
        fail(f"--index: {exc}")
    search_index = converter.index
    writer = _writer(settings)
    if not isinstance(writer, TemplateWriter):  # a teacher's client stays in this process
        converter = replace(converter, writer=writer, spec=None)
    counts: Counter[str] = Counter()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with (
            out.open("w", encoding="utf-8") as sink,
            progress("converting", None) as update,
            batch_collector(),
        ):
            sources = _sources(db, settings.traces, settings.limit)
            lines = (
                _pooled(sources, converter, wanted, Workers.given(settings.workers), counts)
                if converter.spec is not None
                else _convert_all(sources, converter, wanted, settings.concurrency, counts)
            )
            for line in lines:
                sink.write(json.dumps(line, ensure_ascii=False) + "\n")
                update(sum(counts.values()))
    except OSError as exc:
        fail(f"cannot write {out}: {exc}")
    finally:
        search_index.close()
    lost = counts[f"dropped:{UNKNOWN_WORLD}"]
    if lost:
        where = f"no pack in {files.worlds}"
        warn(f"{lost} traces not converted ({UNKNOWN_WORLD}: {where}); fix: {FIXES[UNKNOWN_WORLD]}")
    summary = {"out": str(out), "writer": writer.provenance, "counts": dict(sorted(counts.items()))}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    for key, n in sorted(counts.items()):
        typer.echo(f"{key:>32}: {n:>7}")
    typer.echo(f"wrote {out}")


def _recorded(db: str) -> ValidatorPaths:
    """The index and world pack directories the validator recorded in the database (``storage.paths``)."""
    from storage.db import check_schema, make_engine, make_sessionmaker
    from storage.errors import StorageError

    try:
        engine = make_engine(db)
        check_schema(engine)
    except (StorageError, ValueError) as exc:
        fail(f"--db: {exc}")
    try:
        with make_sessionmaker(engine)() as session:
            return read_paths(session)
    finally:
        engine.dispose()


def _check_worlds(root: Path | None) -> None:
    """Fail when ``root`` is given and holds no world pack."""
    if root is None:
        return
    from judging.world import pack_directories

    if not root.is_dir() or not pack_directories(root):
        fail(f"--worlds: no world pack at or under {root}")


def _settings(given: dict[str, Any]) -> ConvertSettings:
    """The settings from the flags given, the environment and the defaults (exit 2 when invalid)."""
    try:
        return ConvertSettings(**overrides(given, CONVERT_FLAGS))
    except ValidationError as exc:
        fail("; ".join(flag_errors(exc, ConvertSettings, CONVERT_FLAGS)))
    except SettingsError as exc:
        fail(str(exc))


def _writer(settings: ConvertSettings) -> RationaleWriter:
    if not settings.teacher_base_url or not settings.teacher_model:
        return TemplateWriter()
    from curation.conversion.teacher import TeacherWriter
    from judging.reasoning import OpenAICompleter

    key = settings.teacher_api_key.get_secret_value()
    return TeacherWriter(OpenAICompleter(settings.teacher_base_url, settings.teacher_model, api_key=key))


def _sources(db: str | None, traces: Path | None, limit: int | None) -> Iterator[JudgedTrace | str]:
    """The source traces (or why a line is unreadable), at most ``limit`` of them."""
    taken = 0
    for item in _read(db, traces):
        if limit is not None and taken >= limit:
            return
        taken += 1
        yield item


def _read(db: str | None, traces: Path | None) -> Iterator[JudgedTrace | str]:
    if traces is not None:
        try:
            with traces.open(encoding="utf-8") as handle:
                yield from read_traces(handle)
        except OSError as exc:
            fail(f"--traces: cannot read {traces}: {exc}")
        return
    from storage.db import check_schema, make_engine, make_sessionmaker
    from storage.errors import StorageError
    from storage.traces import iter_judged

    try:
        engine = make_engine(str(db))
        check_schema(engine)
    except (StorageError, ValueError) as exc:
        fail(f"--db: {exc}")
    try:
        with make_sessionmaker(engine)() as session:
            yield from iter_judged(session)
    finally:
        engine.dispose()


def _wanted(
    sources: Iterator[JudgedTrace | str], wanted: set[str], counts: Counter[str]
) -> Iterator[JudgedTrace | dict[str, Any]]:
    """The traces to convert, in order, and for an unreadable source its drop line; counts the skipped."""
    for item in sources:
        if isinstance(item, str):
            yield {"status": "dropped", "reason": UNREADABLE, "detail": item}
        elif wanted and item.judgment.axis not in wanted:
            counts["skipped_axis"] += 1
        else:
            yield item


def _convert_all(
    sources: Iterator[JudgedTrace | str],
    converter: Converter,
    wanted: set[str],
    concurrency: int,
    counts: Counter[str],
) -> Iterator[dict[str, Any]]:
    """Convert the sources a batch of ``concurrency`` at a time, in order; count every outcome."""

    def lines() -> Iterator[dict[str, Any]]:
        batch: list[JudgedTrace] = []
        for item in _wanted(sources, wanted, counts):
            if isinstance(item, dict):  # a drop line: the traces batched before it go first
                yield from _batch(batch, converter)
                batch = []
                yield item
                continue
            batch.append(item)
            if len(batch) >= concurrency:
                yield from _batch(batch, converter)
                batch = []
        yield from _batch(batch, converter)

    return _counted(lines(), counts)


def _pooled(
    sources: Iterator[JudgedTrace | str],
    converter: Converter,
    wanted: set[str],
    workers: Workers,
    counts: Counter[str],
) -> Iterator[dict[str, Any]]:
    """Convert the sources on ``workers`` processes (the template writer), in order; count every outcome."""
    # The workers start with this process's collector thresholds (the batch command's, raised).
    threshold = gc.get_threshold()
    with ConversionPool(converted_line, converter=converter, workers=workers, gc_threshold=threshold) as pool:
        for item in _wanted(sources, wanted, counts):
            if isinstance(item, dict):
                pool.add(item)
            else:
                pool.submit(item)
            yield from _counted(pool.ready(), counts)
        yield from _counted(pool.rest(), counts)


def _counted(lines: Iterator[dict[str, Any]], counts: Counter[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        counts["converted" if line["status"] == "converted" else f"dropped:{line['reason']}"] += 1
        yield line


def _batch(batch: list[JudgedTrace], converter: Converter) -> Iterator[dict[str, Any]]:
    async def run() -> list[Any]:
        return list(await asyncio.gather(*(convert_judged(trace, converter) for trace in batch)))

    for trace, conversion in zip(batch, asyncio.run(run()) if batch else [], strict=True):
        yield conversion_line(trace, conversion)


with_flags(convert_command, ConvertSettings, CONVERT_FLAGS)
