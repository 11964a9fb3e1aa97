"""The export's audit manifest (``manifest.json``): what went into which split, and how to refuse a leak.

An evaluation harness reads it before scoring a model trained on the export: any eval task
whose leak cluster (or task id) is in the manifest's train split was trained on, and must be
refused (``training_clusters`` / ``refuse_leaks``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from arena.types import Task
from curation.errors import CurationError
from curation.stages.split import cluster_of

MANIFEST_SCHEMA = "arena.export-manifest/1"


def build_manifest(
    *,
    created_at: str,
    splits: dict[str, dict[str, set[str]]],
    files: dict[str, dict[str, Any]],
    judgment_hashes: dict[str, str],
    audit: dict[str, Any],
    config: dict[str, Any],
) -> dict[str, Any]:
    """Assemble the manifest.

    Args:
        created_at: ISO time of the export.
        splits: per split, the sets ``tasks``, ``clusters`` and ``episodes`` it holds.
        files: per file (relative path): format, split, rows, sha256 and the row provenance
            (episode ids per row; a DPO row lists chosen then rejected; a GRPO row its task id).
        judgment_hashes: exported episode id -> its judgment's content hash.
        audit: the task audit's summary.
        config: the curation settings.
    """
    return {
        "schema": MANIFEST_SCHEMA,
        "created_at": created_at,
        "splits": {
            side: {key: sorted(values) for key, values in content.items()} for side, content in splits.items()
        },
        "files": files,
        "judgment_hashes": dict(sorted(judgment_hashes.items())),
        "audit": audit,
        "config": config,
    }


def read_manifest(path: Path) -> dict[str, Any]:
    """Read a ``manifest.json`` (the file itself or the export directory holding it).

    Raises:
        CurationError: missing, unreadable, or not an export manifest.
    """
    target = path / "manifest.json" if path.is_dir() else path
    try:
        value: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CurationError(f"cannot read export manifest {target}: {exc}") from exc
    if not isinstance(value, dict) or value.get("schema") != MANIFEST_SCHEMA:
        raise CurationError(f"{target} is not an export manifest ({MANIFEST_SCHEMA})")
    return value


def training_clusters(manifest: dict[str, Any]) -> set[str]:
    """The leak clusters a model trained on this export has seen (its train split)."""
    return set(manifest["splits"].get("train", {}).get("clusters", ()))


def refuse_leaks(manifest: dict[str, Any], tasks: Iterable[Task]) -> list[str]:
    """Return the ids of ``tasks`` an evaluation must refuse: their task or leak cluster was in training."""
    train = manifest["splits"].get("train", {})
    clusters, task_ids = set(train.get("clusters", ())), set(train.get("tasks", ()))
    return [task.task_id for task in tasks if task.task_id in task_ids or cluster_of(task) in clusters]
