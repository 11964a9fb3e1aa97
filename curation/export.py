"""Export a curated run: TRL-ready JSONL and Parquet per format and split, the funnel, card and manifest.

Files (``DIR`` is ``out_dir``; the train split at the top, the eval split under ``eval/``):

- ``<format>.jsonl`` and ``.parquet`` for each format asked for (``curation.formats``: sft, kto,
  dpo, grpo; a format with no rows still writes an empty JSONL and a zero-row Parquet carrying
  the schema);
- ``axis_b.jsonl`` (axis B traces, set aside for later conversion) and, under
  ``unscored="separate"``, ``unscored.jsonl``;
- ``funnel.json``, ``manifest.json`` (``curation.manifest``), ``README.md`` (``curation.card``).

Every row is built by its format (``Format.build``) and checked by
``curation.formats.validate_row`` before it is written. Files are
written into a staging directory beside ``DIR`` and moved in only when all are complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from datasets import Dataset
from sqlalchemy.orm import Session

from curation import formats as registry
from curation.card import dataset_card
from curation.config import CurationConfig
from curation.conversion.convert import Converter
from curation.conversion.pool import IN_PROCESS, Workers
from curation.curate import Curation, curate
from curation.formats import FORMATS, ORIGINS, Format, validate_row
from curation.manifest import build_manifest
from curation.stages.convert import NO_INDEX
from curation.stages.split import SPLITS, Split
from curation.stages.stage import AXIS_B, UNSCORED, Stream
from curation.workspace import Row, Workspace

PARQUET_CHUNK = 500  # rows per Parquet batch, or fewer where they reach PARQUET_CHUNK_CHARS
PARQUET_CHUNK_CHARS = 4 * 2**20
ASIDE_STREAMS: tuple[Stream, ...] = (AXIS_B, UNSCORED)


class _Sink:
    """One output of one format and split: JSONL always, and a Parquet twin for a format (not aside)."""

    def __init__(self, root: Path, name: str, split: Split, fmt: Format | None) -> None:
        self.relative = f"{name}.jsonl" if split == "train" else f"eval/{name}.jsonl"
        self.fmt, self.split, self.rows = fmt, split, 0
        self.provenance: list[Any] = []
        self.origins: Counter[str] = Counter()
        self._path = root / self.relative
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._jsonl = self._path.open("w", encoding="utf-8")
        self._hash = hashlib.sha256()
        parquet = self._path.with_suffix(".parquet")
        self._parquet = pq.ParquetWriter(parquet, fmt.features.arrow_schema) if fmt else None
        self._buffer: list[dict[str, Any]] = []
        self._buffered = 0  # characters of the buffered rows

    def write(self, row: dict[str, Any], provenance: Any) -> None:
        if self.fmt:
            validate_row(self.fmt, row)
        line = json.dumps(row, ensure_ascii=False) + "\n"
        self._jsonl.write(line)
        self._hash.update(line.encode("utf-8"))
        self.rows += 1
        self.provenance.append(provenance)
        if self.fmt and self.fmt.provenance:
            self.origins[row["origin"]] += 1
        if self._parquet is not None:
            self._buffer.append(row)
            self._buffered += len(line)
            if len(self._buffer) >= PARQUET_CHUNK or self._buffered >= PARQUET_CHUNK_CHARS:
                self._flush()

    def _flush(self) -> None:
        if self._parquet is not None and self._buffer and self.fmt:
            table = Dataset.from_list(self._buffer, features=self.fmt.features).data.table
            self._parquet.write_table(table)
        self._buffer, self._buffered = [], 0

    def close(self) -> dict[str, dict[str, Any]]:
        """Finish both files; return their manifest entries."""
        self._flush()
        self._jsonl.close()
        entry: dict[str, Any] = {
            "format": self.fmt.name if self.fmt else self._path.stem,
            "split": self.split,
            "rows": self.rows,
        }
        if self.fmt and self.fmt.provenance:
            entry["origins"] = {origin: self.origins[origin] for origin in origins_of(self.origins)}
        files = {self.relative: {**entry, "sha256": self._hash.hexdigest(), "provenance": self.provenance}}
        if self._parquet is not None:
            self._parquet.close()
            parquet = self._path.with_suffix(".parquet")
            files[self.relative.removesuffix(".jsonl") + ".parquet"] = {
                **entry,
                "sha256": _file_hash(parquet),
            }
        return files


def origins_of(counted: Counter[str]) -> tuple[str, ...]:
    """The origins a count reports: native and converted always, then any other seen (rollout)."""
    return tuple(dict.fromkeys((*ORIGINS, *counted)))


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def curate_and_export(
    session: Session,
    out_dir: Path,
    *,
    config: CurationConfig | None = None,
    formats: Sequence[Format] = FORMATS,
    source: str = "",
    progress: Callable[[int], None] | None = None,
    converter: Converter | None = None,
    conversion_off_because: str = NO_INDEX,
    workers: Workers = IN_PROCESS,
) -> dict[str, Any]:
    """Run the funnel over the database and write the export to ``out_dir``; return ``funnel.json``'s content.

    Args:
        session: the database to curate (read in pages, never written).
        out_dir: the export directory (created; our own files in it are replaced).
        config: curation settings (``CurationConfig`` defaults when None).
        formats: the formats to write (``curation.formats.FORMATS``: sft, kto, dpo, grpo;
            ``formats_named`` reads names).
        source: where the traces came from (a database URL without its password), for the card.
        progress: called with the number of traces read so far.
        converter: what the conversion stage needs (``curation.conversion.convert.Converter``:
            the search index, the writer, the settings); None: no conversion.
        conversion_off_because: why there is no converter (``funnel.json``'s convert notes).
        workers: conversion worker processes, for a converter opened from a spec (``curate``).

    Raises:
        CurationError: an output that cannot be written.
        SplitLeakError: the task audit found a leak across the split; nothing is written.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with Workspace(out_dir.parent) as workspace:
        curation = curate(
            session,
            workspace,
            config=config,
            audit_all_tasks=any(fmt.every_task for fmt in formats),
            progress=progress,
            converter=converter,
            conversion_off_because=conversion_off_because,
            workers=workers,
        )
        return export(curation, out_dir, formats=formats, source=source)


def export(
    curation: Curation, out_dir: Path, *, formats: Sequence[Format] = FORMATS, source: str = ""
) -> dict[str, Any]:
    """Write a finished curation to ``out_dir`` (module docstring); return ``funnel.json``'s content."""
    staging = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        content = _write_all(curation, staging, formats, source)
        _move_into(staging, out_dir, formats)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return content


def _write_all(curation: Curation, root: Path, formats: Sequence[Format], source: str) -> dict[str, Any]:
    run = _Run(curation, root, formats)
    for fmt in formats:
        run.write(fmt)
    run.aside()
    return run.finish(source)


class _Run:
    """One export in progress: its open files and what the manifest and card collect along the way."""

    def __init__(self, curation: Curation, root: Path, formats: Sequence[Format]) -> None:
        self.curation, self.root, self.formats = curation, root, formats
        self.workspace = curation.workspace
        self.streams = [AXIS_B, *([UNSCORED] if curation.config.unscored == "separate" else [])]
        self.sinks = {
            (fmt.name, side): _Sink(root, fmt.name, side, fmt) for fmt in formats for side in SPLITS
        }
        self.sinks |= {(s, side): _Sink(root, s, side, None) for s in self.streams for side in SPLITS}
        self.splits: dict[str, dict[str, set[str]]] = {
            side: {"tasks": set(), "clusters": set(), "episodes": set()} for side in SPLITS
        }
        self.hashes: dict[str, str] = {}
        self.versions: dict[str, Counter[str]] = {}

    def _note(self, row: Row) -> Split:
        side = self.curation.split(row.cluster)
        for key, value in (("tasks", row.task_id), ("clusters", row.cluster), ("episodes", row.episode_id)):
            self.splits[side][key].add(value)
        if row.episode_id not in self.hashes:  # count each exported trace's versions once
            self.hashes[row.episode_id] = row.judgment_hash
            for kind, version in row.versions.items():
                self.versions.setdefault(kind, Counter())[str(version)] += 1
            # The world pack each trace ran on (the card's table; "static": an sb-1 task).
            self.versions.setdefault("world", Counter())[row.world_id or "static"] += 1
        return side

    def write(self, fmt: Format) -> None:
        """Every row of one format, on the side of the split of its task's cluster."""
        for made in fmt.build(self.curation):
            for trace in made.traces:
                self._note(trace)
            side = self.curation.split(made.cluster)
            self.splits[side]["tasks"].add(made.task_id)
            self.splits[side]["clusters"].add(made.cluster)
            self.sinks[(fmt.name, side)].write(made.row, made.provenance)

    def aside(self) -> None:
        """The traces set aside (axis B; unscored under ``separate``)."""
        for stream in self.streams:
            for row in self.workspace.kept(stream):
                self.sinks[(stream, self._note(row))].write(aside_row(row, row.document), row.episode_id)

    def finish(self, source: str) -> dict[str, Any]:
        """Close the files; write funnel.json, manifest.json and README.md; return the funnel."""
        files: dict[str, dict[str, Any]] = {}
        for sink in self.sinks.values():
            files |= sink.close()
        funnel = self.curation.funnel
        funnel.exports = {
            name: {side: self.sinks[(name, side)].rows for side in SPLITS}
            for name in [*(fmt.name for fmt in self.formats), *self.streams]
        }
        funnel.origins = {}
        for fmt in (f for f in self.formats if f.provenance):
            counts = sum((self.sinks[(fmt.name, side)].origins for side in SPLITS), Counter[str]())
            funnel.origins[fmt.name] = {o: counts[o] for o in origins_of(counts)}
        content = funnel.to_json()
        (self.root / "funnel.json").write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
        created_at = datetime.now(UTC).isoformat(timespec="seconds")
        manifest = build_manifest(
            created_at=created_at,
            splits=self.splits,
            files=files,
            judgment_hashes=self.hashes,
            audit=funnel.audit,
            config=funnel.config,
        )
        (self.root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        exported = set().union(*(s["tasks"] for s in self.splits.values()))
        card = dataset_card(
            funnel=content,
            files=files,
            versions=self.versions,
            sources=Counter(self.curation.tasks[task_id].source for task_id in exported),
            created_at=created_at,
            formats=registry.FORMATS,
        )
        footer = f"\nSource database: `{source}`.\n" if source else ""
        (self.root / "README.md").write_text(card + footer, encoding="utf-8")
        return content


def aside_row(row: Row, record: dict[str, Any]) -> dict[str, Any]:
    """A trace set aside (axis B, unscored): the conversation plus what a later conversion needs."""
    return {
        "episode_id": row.episode_id,
        "task_id": row.task_id,
        "miner_hotkey": row.miner,
        "success": row.success,
        "score": row.score,
        "toolset": record["toolset"],  # its schemas: arena.tools.tool_schemas(toolset)
        "messages": record["messages"],
        **row.world,  # a world trace converts against its world's pack, not the base catalog
    }


def _move_into(staging: Path, out_dir: Path, formats: Sequence[Format]) -> None:
    """Replace our own files in ``out_dir`` with the staged ones (stale ones from an earlier export go)."""
    names = dict.fromkeys(fmt.name for fmt in (*registry.FORMATS, *formats))
    own = [f"{name}.{ext}" for name in names for ext in ("jsonl", "parquet")]
    own += [f"{stream}.jsonl" for stream in ASIDE_STREAMS]
    for folder in (out_dir, out_dir / "eval"):
        for name in own:
            (folder / name).unlink(missing_ok=True)
    for path in sorted(staging.rglob("*")):
        if path.is_file():
            target = out_dir / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
