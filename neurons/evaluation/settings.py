"""An evaluation's settings and their fingerprint, the per-sample seeds, and the run directory's run.json.

A run directory's ``run.json`` records the fingerprint of the settings every sample depends on;
a rerun with another fingerprint is refused, so samples made under different settings never mix.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arena.tasks import save_tasks
from arena.tools import DEFAULT_TOOLSET
from arena.types import Task
from neurons.errors import NeuronError
from neurons.evaluation.records import RUN_FILE, TASKS_FILE, read_json, write_json

RUN_FORMAT = "arena.eval-run/1"


class RunMismatch(NeuronError):
    """The run directory holds samples made with other settings; resuming would mix them."""


@dataclass(frozen=True)
class EvalSettings:
    """What an evaluation run does; the fields in :meth:`fingerprint` must match to resume a run."""

    agent: str = "llm"
    model: str | None = None
    model_url: str | None = None
    api_key: str = "none"
    agent_options: dict[str, Any] = field(default_factory=dict)
    k: int = 8
    temperature: float = 0.0
    seed: int = 0
    concurrency: int = 4
    max_steps: int = 20
    max_tool_calls: int = 30
    task_timeout_s: float = 180.0
    toolset: str = DEFAULT_TOOLSET
    judge_model: str | None = None
    retry_errors: bool = False

    def fingerprint(self, catalog_version: str | None) -> dict[str, Any]:
        """The settings a sample's outcome depends on (not k, concurrency, URLs or keys)."""
        return {
            "agent": self.agent,
            "model": self.model,
            "agent_options": self.agent_options,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "max_tool_calls": self.max_tool_calls,
            "task_timeout_s": self.task_timeout_s,
            "toolset": self.toolset,
            "judge_model": self.judge_model,
            "catalog_version": catalog_version,
        }


def sample_seed(base: int, task_id: str, sample: int) -> int:
    """The sampling seed of one sample: distinct per (task, sample), reproducible from the base seed."""
    digest = hashlib.sha256(f"{base}:{task_id}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def prepare_run_dir(
    run_dir: Path,
    settings: EvalSettings,
    *,
    index_dir: Path,
    catalog_version: str | None,
    tasks: Sequence[Task],
    pack: tuple[str, Path] | None = None,
) -> None:
    """Create or check the run directory, and write the run's settings and its selected tasks.

    ``pack`` (a run on a world: its pack hash and directory) enters the fingerprint, so a run
    directory is never resumed on another world, and ``run.json`` says where the pack is.

    Raises:
        RunMismatch: ``run.json`` exists with another fingerprint.
    """
    fingerprint = settings.fingerprint(catalog_version) | ({"pack_hash": pack[0]} if pack else {})
    existing = read_json(run_dir / RUN_FILE)
    if existing is not None:
        old = existing.get("fingerprint", {})
        differing = sorted(
            key for key in fingerprint.keys() | old.keys() if old.get(key) != fingerprint.get(key)
        )
        if differing:
            details = ", ".join(f"{key}: {old.get(key)!r} -> {fingerprint.get(key)!r}" for key in differing)
            raise RunMismatch(f"{run_dir} holds a run with other settings ({details}); use another --out")
    body = {
        "format": RUN_FORMAT,
        "fingerprint": fingerprint,
        "index": str(index_dir.resolve()),
        **({"pack": str(pack[1].resolve())} if pack else {}),
        "model_url": settings.model_url,
        "k": max(settings.k, int(existing.get("k", 0)) if existing else 0),
        "created": existing.get("created")
        if existing
        else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(run_dir / RUN_FILE, body)
    save_tasks(tasks, run_dir / TASKS_FILE)


def settings_summary(settings: EvalSettings) -> dict[str, Any]:
    """The settings as JSON for results.json (the API key left out)."""
    body = asdict(settings)
    body.pop("api_key", None)
    return body
