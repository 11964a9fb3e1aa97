"""A policy's verified rollouts as training data: SFT rows of its successes, KTO rows with its failures.

The rollouts (``arena env rollouts``: k episodes per task of one policy in the RL environment,
judged as the validator judges, stored in a database of the validator's schema) go through the
same funnel as any judged trace (:func:`curation.curate.curate`: hard rejects, the reasoning
gate, the axis gate, ranking, dedup and caps, the leak-cluster split and the task audit); this
module writes what survives:

- ``sft.jsonl`` / ``.parquet``: each kept success (the KTO positive label: success, a score of
  at least ``label_min_score``, nothing invented), the whole conversation and its tools;
- ``kto.jsonl`` / ``.parquet``: every kept trace with its label (the failures are the negatives);
- the eval split of each under ``eval/``; ``funnel.json``; ``manifest.json`` (the export
  manifest, so ``arena eval --train-manifest`` refuses any task whose leak cluster was trained on).

Every row is ``origin: rollout`` with the columns ``policy``, ``weights_hash`` and ``k``
(``curation.formats.ROLLOUT_COLUMNS``); messages and tools are the export's
(``curation.chat``). The tool calls and results are the rollout's own, unchanged: each tool
message is what the environment logged for its call (a trace whose results differ from the log
is fabricated, and fabrication is a hard reject).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from datasets import Dataset

from curation.formats import ROLLOUT, ROLLOUT_FEATURES, validate_row
from curation.gates import MAIN, SPLITS, Split
from curation.manifest import build_manifest
from curation.rows import kto_row, sft_row
from curation.split import Curation

ROLLOUT_FORMATS = ("sft", "kto")


@dataclass(frozen=True)
class RolloutSource:
    """Where rollouts came from: the policy (a name), its weights' sha256 (None: unknown), k per task."""

    policy: str
    weights_hash: str | None
    k: int

    def columns(self) -> dict[str, Any]:
        """The provenance columns of a rollout row (``curation.formats``)."""
        return {
            "origin": ROLLOUT,
            "source_hash": None,
            "converter_version": None,
            "writer": None,
            "policy": self.policy,
            "weights_hash": self.weights_hash,
            "k": self.k,
        }


def rollout_rows(
    curation: Curation, source: RolloutSource
) -> dict[tuple[str, Split], list[tuple[str, dict[str, Any]]]]:
    """Every row of the export: per (format, split), (episode id, row) in ingest order."""
    rows: dict[tuple[str, Split], list[tuple[str, dict[str, Any]]]] = {
        (fmt, side): [] for fmt in ROLLOUT_FORMATS for side in SPLITS
    }
    columns = source.columns()
    for row in curation.workspace.kept(MAIN):
        side = curation.split(row.cluster)
        record = row.document
        if row.label:
            rows[("sft", side)].append((row.episode_id, _with(sft_row(record, world=row.world), columns)))
        rows[("kto", side)].append(
            (row.episode_id, _with(kto_row(record, label=row.label, world=row.world), columns))
        )
    return rows


def _with(row: dict[str, Any], columns: dict[str, Any]) -> dict[str, Any]:
    """The row with the rollout's provenance columns in place of a native row's."""
    return {**row, **columns}


def export_rollouts(curation: Curation, out_dir: Path, source: RolloutSource) -> dict[str, Any]:
    """Write the rollout export to ``out_dir`` (module docstring); return ``funnel.json``'s content.

    Written into a staging directory beside ``out_dir`` and moved in whole.

    Raises:
        RowError: a row does not have its format's shape (a bug: rows are built here).
    """
    staging = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        files: dict[str, dict[str, Any]] = {}
        splits: dict[str, dict[str, set[str]]] = {
            side: {"tasks": set(), "clusters": set(), "episodes": set()} for side in SPLITS
        }
        hashes: dict[str, str] = {}
        for row in curation.workspace.kept(MAIN):
            side = curation.split(row.cluster)
            for key, value in (
                ("tasks", row.task_id),
                ("clusters", row.cluster),
                ("episodes", row.episode_id),
            ):
                splits[side][key].add(value)
            hashes[row.episode_id] = row.judgment_hash
        for (fmt, side), rows in rollout_rows(curation, source).items():
            files |= _write(staging, fmt, side, rows)
        funnel = curation.funnel
        funnel.exports = {
            fmt: {side: files[_relative(fmt, side)]["rows"] for side in SPLITS} for fmt in ROLLOUT_FORMATS
        }
        content = funnel.to_json() | {
            "rollouts": {"policy": source.policy, "weights_hash": source.weights_hash, "k": source.k}
        }
        (staging / "funnel.json").write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
        manifest = build_manifest(
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            splits=splits,
            files=files,
            judgment_hashes=hashes,
            audit=funnel.audit,
            config=funnel.config,
        )
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        out_dir.mkdir(parents=True, exist_ok=True)
        for path in sorted(staging.rglob("*")):
            if path.is_file():
                target = out_dir / path.relative_to(staging)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return content


def _relative(fmt: str, side: Split) -> str:
    return f"{fmt}.jsonl" if side == "train" else f"eval/{fmt}.jsonl"


def _write(
    root: Path, fmt: str, side: Split, rows: list[tuple[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """One format and split as JSONL and Parquet (each row validated); their manifest entries."""
    relative = _relative(fmt, side)
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for _, row in rows:
        validate_row(fmt, row)
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    text = "".join(lines)
    path.write_text(text, encoding="utf-8")
    parquet = path.with_suffix(".parquet")
    features = ROLLOUT_FEATURES[fmt]
    with pq.ParquetWriter(parquet, features.arrow_schema) as writer:  # a format with no rows keeps its schema
        if rows:
            writer.write_table(Dataset.from_list([r for _, r in rows], features=features).data.table)
    entry = {"format": fmt, "split": side, "rows": len(rows), "origins": {ROLLOUT: len(rows)}}
    return {
        relative: {
            **entry,
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "provenance": [e for e, _ in rows],
        },
        relative.removesuffix(".jsonl") + ".parquet": {**entry, "sha256": _file_hash(parquet)},
    }


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
