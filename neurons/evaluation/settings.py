"""An evaluation's settings and their fingerprint, the per-sample seeds, and the run directory's run.json.

A run directory's ``run.json`` records the fingerprint of the settings every sample depends on;
a rerun with another fingerprint is refused, so samples made under different settings never mix.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.tasks import save_tasks
from arena.tools import DEFAULT_TOOLSET
from arena.types import Task
from neurons.errors import NeuronError
from neurons.evaluation.records import RUN_FILE, TASKS_FILE, read_json, write_json

RUN_FORMAT = "arena.eval-run/1"


class RunMismatch(NeuronError):
    """The run directory holds samples made with other settings; resuming would mix them."""


def _sampling_temperature(k: int) -> float:
    """Greedy for one sample per task; else 0.7, since k samples at temperature 0 are one sample k times."""
    return 0.0 if k == 1 else 0.7


class EvalSettings(BaseModel):
    """What an evaluation run does; the fields in :meth:`fingerprint` must match to resume a run.

    Each field's description is also the help of its ``arena eval`` flag (``neurons/cli/evaluate.py``
    offers them through ``neurons/cli/flags.py``), so a knob's default, bounds and help live here only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str = Field(default="llm", description="llm, scripted, or package.module:function.")
    model: str | None = Field(default=None, description="Model name the server expects.")
    model_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint, e.g. http://host:8000/v1."
    )
    api_key: str = Field(default="none", description="The endpoint's API key (ARENA_LLM_API_KEY).")
    agent_options: dict[str, Any] = Field(
        default_factory=dict, description="Options for the agent (--agent-option KEY=VALUE)."
    )
    k: int = Field(default=8, ge=1, le=1000, description="Samples per task.")
    temperature: float = Field(
        default_factory=lambda fields: _sampling_temperature(fields["k"]),
        ge=0.0,
        description="Sampling temperature (default 0 for k=1, else 0.7).",
    )
    seed: int = Field(default=0, description="Base seed: sampling seeds, task subset, bootstrap.")
    concurrency: int = Field(default=4, ge=1, le=1024, description="Samples run at once.")
    max_steps: int = Field(default=20, ge=1, le=200, description="Model turns per sample.")
    max_tool_calls: int = Field(default=30, ge=1, le=1000, description="Tool calls per sample.")
    task_timeout_s: float = Field(default=180.0, ge=1.0, le=3600.0, description="Seconds per sample.")
    toolset: str = Field(
        default=DEFAULT_TOOLSET, description="Tool set offered to the agent (sb-1, arena-2 or arena-3)."
    )
    judge_model: str | None = Field(
        default=None, description="The reasoning judge's model (None: no reasoning judge)."
    )
    retry_errors: bool = Field(default=False, description="Re-run samples that ended in a model error.")

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
    body = settings.model_dump()
    body.pop("api_key", None)
    return body
