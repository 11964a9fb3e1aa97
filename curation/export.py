"""Export a curated run: TRL-ready JSONL and Parquet per format and split, the funnel, card and manifest.

Files (``DIR`` is ``out_dir``; the train split at the top, the eval split under ``eval/``):

- ``{sft,kto,dpo,grpo}.jsonl`` and ``.parquet`` for each format asked for (a format with no
  rows still writes an empty JSONL and a zero-row Parquet carrying the schema);
- ``axis_b.jsonl`` (axis B traces, set aside for later conversion) and, under
  ``unscored="separate"``, ``unscored.jsonl``;
- ``funnel.json``, ``manifest.json`` (``curation.manifest``), ``README.md`` (``curation.card``).

Every row is checked by ``curation.formats.validate_row`` before it is written. Files are
written into a staging directory beside ``DIR`` and moved in only when all are complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from datasets import Dataset
from sqlalchemy.orm import Session

from curation.card import dataset_card
from curation.config import CurationConfig
from curation.conversion.convert import Converter
from curation.conversion.pool import IN_PROCESS, Workers
from curation.curate import Curation, curate
from curation.errors import CurationError
from curation.formats import FEATURES, FORMATS, ORIGINS, validate_row
from curation.manifest import build_manifest
from curation.rows import (
    STATIC_WORLD,
    aside_row,
    dpo_pairs,
    dpo_row,
    grpo_row,
    kto_row,
    pair_provenance,
    sft_row,
)
from curation.stages.split import SPLITS, Split, cluster_of
from curation.stages.stage import AXIS_B, MAIN, UNSCORED
from curation.workspace import RANK_ORDER, Row, Workspace

PARQUET_CHUNK = 500  # rows per Parquet batch, or fewer where they reach PARQUET_CHUNK_CHARS
PARQUET_CHUNK_CHARS = 4 * 2**20
OWN_FILES = tuple(f"{name}.{ext}" for name in FORMATS for ext in ("jsonl", "parquet")) + (
    f"{AXIS_B}.jsonl",
    f"{UNSCORED}.jsonl",
)


class _Sink:
    """One output of one format and split: JSONL always, a Parquet twin when ``fmt`` is a TRL format."""

    def __init__(self, root: Path, name: str, split: Split, fmt: str | None) -> None:
        self.relative = f"{name}.jsonl" if split == "train" else f"eval/{name}.jsonl"
        self.fmt, self.split, self.rows = fmt, split, 0
        self.provenance: list[Any] = []
        self.origins: Counter[str] = Counter()
        self._path = root / self.relative
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._jsonl = self._path.open("w", encoding="utf-8")
        self._hash = hashlib.sha256()
        parquet = self._path.with_suffix(".parquet")
        self._parquet = pq.ParquetWriter(parquet, FEATURES[fmt].arrow_schema) if fmt else None
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
        if self.fmt and "origin" in row:
            self.origins[row["origin"]] += 1
        if self._parquet is not None:
            self._buffer.append(row)
            self._buffered += len(line)
            if len(self._buffer) >= PARQUET_CHUNK or self._buffered >= PARQUET_CHUNK_CHARS:
                self._flush()

    def _flush(self) -> None:
        if self._parquet is not None and self._buffer and self.fmt:
            self._parquet.write_table(Dataset.from_list(self._buffer, features=FEATURES[self.fmt]).data.table)
        self._buffer, self._buffered = [], 0

    def close(self) -> dict[str, dict[str, Any]]:
        """Finish both files; return their manifest entries."""
        self._flush()
        self._jsonl.close()
        entry: dict[str, Any] = {
            "format": self.fmt or self._path.stem,
            "split": self.split,
            "rows": self.rows,
        }
        if self.fmt and self.fmt != "grpo":
            entry["origins"] = {origin: self.origins[origin] for origin in ORIGINS}
        files = {self.relative: {**entry, "sha256": self._hash.hexdigest(), "provenance": self.provenance}}
        if self._parquet is not None:
            self._parquet.close()
            parquet = self._path.with_suffix(".parquet")
            files[self.relative.removesuffix(".jsonl") + ".parquet"] = {
                **entry,
                "sha256": _file_hash(parquet),
            }
        return files


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
    formats: Sequence[str] = FORMATS,
    source: str = "",
    progress: Callable[[int], None] | None = None,
    converter: Converter | None = None,
    workers: Workers = IN_PROCESS,
) -> dict[str, Any]:
    """Run the funnel over the database and write the export to ``out_dir``; return ``funnel.json``'s content.

    Args:
        session: the database to curate (read in pages, never written).
        out_dir: the export directory (created; our own files in it are replaced).
        config: curation settings (``CurationConfig`` defaults when None).
        formats: which of ``sft``, ``kto``, ``dpo``, ``grpo`` to write.
        source: where the traces came from (a database URL without its password), for the card.
        progress: called with the number of traces read so far.
        converter: what the conversion stage needs (``curation.conversion.convert.Converter``:
            the search index, the writer, the settings); None: no conversion.
        workers: conversion worker processes, for a converter opened from a spec (``curate``).

    Raises:
        CurationError: an unknown format, or an output that cannot be written.
        SplitLeakError: the task audit found a leak across the split; nothing is written.
    """
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise CurationError(f"unknown export format(s) {', '.join(unknown)} (known: {', '.join(FORMATS)})")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with Workspace(out_dir.parent) as workspace:
        curation = curate(
            session,
            workspace,
            config=config,
            audit_all_tasks="grpo" in formats,
            progress=progress,
            converter=converter,
            workers=workers,
        )
        return export(curation, out_dir, formats=formats, source=source)


def export(
    curation: Curation, out_dir: Path, *, formats: Sequence[str] = FORMATS, source: str = ""
) -> dict[str, Any]:
    """Write a finished curation to ``out_dir`` (module docstring); return ``funnel.json``'s content."""
    staging = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        content = _write_all(curation, staging, formats, source)
        _move_into(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return content


def _write_all(curation: Curation, root: Path, formats: Sequence[str], source: str) -> dict[str, Any]:
    run = _Run(curation, root, formats)
    run.imitation()
    if "dpo" in formats:
        run.dpo()
    run.aside()
    if "grpo" in formats:
        run.grpo()
    return run.finish(source)


class _Run:
    """One export in progress: its open files and what the manifest and card collect along the way."""

    def __init__(self, curation: Curation, root: Path, formats: Sequence[str]) -> None:
        self.curation, self.root, self.formats = curation, root, formats
        self.workspace = curation.workspace
        self.streams = [AXIS_B, *([UNSCORED] if curation.config.unscored == "separate" else [])]
        self.sinks = {(fmt, side): _Sink(root, fmt, side, fmt) for fmt in formats for side in SPLITS}
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

    def imitation(self) -> None:
        """SFT (positives) and KTO (all, with their label) from the kept traces, in ingest order."""
        for row in self.workspace.kept(MAIN):
            record = row.document
            if "sft" in self.formats and row.label:
                sft = sft_row(record, row.provenance, row.world)
                self.sinks[("sft", self._note(row))].write(sft, row.episode_id)
            if "kto" in self.formats:
                kto = kto_row(record, label=row.label, provenance=row.provenance, world=row.world)
                self.sinks[("kto", self._note(row))].write(kto, row.episode_id)

    def dpo(self) -> None:
        """DPO pairs, task by task."""
        for chosen, rejected in _pairs(self.workspace):
            self._note(rejected)
            pair = dpo_row(
                chosen.document, rejected.document, pair_provenance(chosen, rejected), chosen.world
            )
            self.sinks[("dpo", self._note(chosen))].write(pair, [chosen.episode_id, rejected.episode_id])

    def aside(self) -> None:
        """The traces set aside (axis B; unscored under ``separate``)."""
        for stream in self.streams:
            for row in self.workspace.kept(stream):
                self.sinks[(stream, self._note(row))].write(aside_row(row, row.document), row.episode_id)

    def grpo(self) -> None:
        """One RL prompt per observed task, with its ground truth and observed rewards."""
        for task_id, task in sorted(self.curation.tasks.items()):
            cluster = cluster_of(task)
            best = self.workspace.best(task_id)
            side = self.curation.split(cluster)
            self.splits[side]["tasks"].add(task_id)
            self.splits[side]["clusters"].add(cluster)
            row = grpo_row(
                task,
                best=best.document if best else None,
                observed=self.workspace.observed(task_id),
                world=self.curation.worlds.get(task_id, STATIC_WORLD),
            )
            self.sinks[("grpo", side)].write(row, task_id)

    def finish(self, source: str) -> dict[str, Any]:
        """Close the files; write funnel.json, manifest.json and README.md; return the funnel."""
        files: dict[str, dict[str, Any]] = {}
        for sink in self.sinks.values():
            files |= sink.close()
        funnel = self.curation.funnel
        funnel.exports = {
            name: {side: self.sinks[(name, side)].rows for side in SPLITS}
            for name in [*self.formats, *self.streams]
        }
        funnel.origins = {
            fmt: {o: sum(self.sinks[(fmt, side)].origins[o] for side in SPLITS) for o in ORIGINS}
            for fmt in self.formats
            if fmt != "grpo"
        }
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
        )
        footer = f"\nSource database: `{source}`.\n" if source else ""
        (self.root / "README.md").write_text(card + footer, encoding="utf-8")
        return content


def _pairs(workspace: Workspace) -> Iterable[tuple[Row, Row]]:
    """Yield DPO pairs task by task (one task's kept traces in memory at a time)."""
    group: list[Row] = []
    for row in workspace.kept(MAIN, order=f"task_id, {RANK_ORDER}"):
        if group and row.task_id != group[0].task_id:
            yield from dpo_pairs(group)
            group = []
        group.append(row)
    yield from dpo_pairs(group)


def _move_into(staging: Path, out_dir: Path) -> None:
    """Replace our own files in ``out_dir`` with the staged ones (stale ones from an earlier export go)."""
    for folder in (out_dir, out_dir / "eval"):
        for name in OWN_FILES:
            (folder / name).unlink(missing_ok=True)
    for path in sorted(staging.rglob("*")):
        if path.is_file():
            target = out_dir / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
