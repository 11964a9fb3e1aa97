"""The learning proof, end to end: does a model fine-tuned on our export gain on held-out tasks?

Every step but training runs the ``arena`` command an ML engineer would run, as a subprocess,
so the benchmark exercises the product and not a private path through it:

1. world: ``arena catalog synth`` + ``catalog build`` (a synthetic catalog and its index);
2. tasks: ``arena tasks generate`` -> ``tasks cluster`` -> ``tasks assign-pools`` (whole leak
   clusters into ``never_touch``: the held-out set), then split into train and held-out files;
3. traces: ``arena eval --agent scripted --db`` on the training tasks (judged and stored as a
   validator stores episodes);
4. data: ``arena curate --format sft`` (with conversion of axis-B traces, or native rows only);
5. training: the SFT rows rendered as the local server renders them, TRL on the CPU, the tuned
   weights written back to a GGUF; the base weights go through the same exporter;
6. evaluation: base and tuned served by the same local server and chat handler, ``arena eval``
   on the held-out tasks with ``--train-manifest`` (refusing any task whose leak cluster the
   export touched), then ``arena eval compare`` (paired bootstrap over tasks).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from neurons.errors import NeuronError
from neurons.learning.train import TrainPlan

logger = logging.getLogger(__name__)

# What the evaluated agent is told and allowed; the same for base and tuned, written once.
SCHEMA_MAX_STRING = 64
AGENT_OPTIONS: dict[str, Any] = {
    "tool_choice": "required",
    "schema_max_string": SCHEMA_MAX_STRING,
    "max_tokens": 256,
    "stop_after_recommend": True,
}
CHAT_FORMAT = "arena-tools-compact"
# The metrics of results.json the benchmark reports for each model.
REPORTED = ("asr", "process", "hallucinated_ids", "tool_calls")
# `arena curate` arguments of the two exports: axis-B and mixed traces converted into agentic
# trajectories (which needs the index they were judged on), or native axis-A rows only (what
# curation exported before conversion).
CURATE_ARGS = {"converted": ("--index", "index"), "native": ("--no-convert",)}


class LearnError(NeuronError):
    """A step of the pipeline failed: which, and what its command said."""


@dataclass(frozen=True)
class LearnPlan:
    """Sizes and budgets of one run (``quick`` is the toy size `make learn-quick` uses)."""

    products: int = 20_000
    tasks: int = 480
    intents: tuple[str, ...] = ("product",)
    never_touch: float = 0.2
    held_out: int = 60  # held-out tasks evaluated (at least 60 for the acceptance)
    seed: int = 7
    # Rows trained on, at most: ~2,200 tokens each (the system turn alone is ~900), so 96 rows are
    # ~210k tokens, ~45 minutes of one epoch at the ~80 tokens/s two cores train at.
    max_rows: int = 96
    max_tokens: int = 3072  # a longer rendered row is left out (never truncated)
    # Every n-th row also learns to search again after a search that found nothing
    # (neurons/learning/recovery.py says why); 0 turns it off.
    recovery_every: int = 3
    # The harness's own pattern is search, view, recommend (3 steps; the episode ends at the
    # recommendation): 6 steps leave room for one more search and view, the same for both models.
    eval_max_steps: int = 6
    eval_max_tool_calls: int = 8
    # Generous on purpose: the step limits bound an episode; a time limit tight enough to bind
    # would make the outcome depend on how busy the machine is.
    eval_timeout_s: float = 600.0
    threads: int = 2
    train: TrainPlan = field(default_factory=lambda: TrainPlan(learning_rate=1e-4))

    @classmethod
    def quick(cls) -> LearnPlan:
        """A run of a few minutes: tiny world, few rows, a handful of training steps."""
        return cls(
            products=2_000,
            tasks=60,
            never_touch=0.2,
            held_out=6,
            max_rows=6,
            eval_max_steps=4,
            eval_timeout_s=120.0,
            train=TrainPlan(max_steps=2, gradient_accumulation=2, learning_rate=1e-4),
        )


@dataclass
class Steps:
    """Runs the pipeline's commands in ``work``, logging and timing each; every output kept on disk."""

    work: Path
    timings: dict[str, float] = field(default_factory=dict)
    echo: Callable[[str], None] = print

    def arena(self, name: str, *args: str) -> str:
        """Run ``arena <args>``; returns stdout; raises LearnError with stderr's tail on failure."""
        started = time.monotonic()
        self.echo(f"[learn] {name}: arena {' '.join(args[:3])} ...")
        log = self.work / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [sys.executable, "-m", "neurons.cli", *args], cwd=self.work, capture_output=True, text=True
        )
        log.write_text(result.stderr, encoding="utf-8")
        self.timings[name] = round(self.timings.get(name, 0.0) + time.monotonic() - started, 1)
        if result.returncode != 0:
            tail = "\n".join(result.stderr.strip().splitlines()[-5:])
            raise LearnError(f"step {name} failed (exit {result.returncode}): {tail}")
        return result.stdout

    def timed(self, name: str, function: Callable[[], Any]) -> Any:
        """Run an in-process step and record its time."""
        started = time.monotonic()
        self.echo(f"[learn] {name} ...")
        try:
            return function()
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + time.monotonic() - started, 1)


def build_world(steps: Steps, plan: LearnPlan) -> tuple[Path, Path, Path]:
    """Catalog, index and tasks; returns (index dir, training tasks file, held-out tasks file)."""
    from arena.tasks import load_tasks, save_tasks

    steps.arena("catalog", "catalog", "synth", "--products", str(plan.products), "--seed", str(plan.seed),
                "--out", "catalog.jsonl")  # fmt: skip
    steps.arena("index", "catalog", "build", "--catalog", "catalog.jsonl", "--index", "index")
    steps.arena("generate", "tasks", "generate", "--index", "index", "--n", str(plan.tasks), "--seed",
                str(plan.seed), "--intents", ",".join(plan.intents), "--out", "generated.jsonl")  # fmt: skip
    steps.arena("cluster", "tasks", "cluster", "generated.jsonl", "--out", "clustered.jsonl")
    steps.arena("pools", "tasks", "assign-pools", "clustered.jsonl", "--never-touch", str(plan.never_touch),
                "--seed", str(plan.seed), "--out", "tasks.jsonl")  # fmt: skip
    tasks = load_tasks(steps.work / "tasks.jsonl")
    held = [t for t in tasks if t.pool == "never_touch"]
    train = [t for t in tasks if t.pool != "never_touch"]
    save_tasks(train, steps.work / "train.jsonl")
    save_tasks(held, steps.work / "held_out.jsonl")
    return steps.work / "index", steps.work / "train.jsonl", steps.work / "held_out.jsonl"


def collect_and_curate(steps: Steps, plan: LearnPlan, *, conversion: bool, name: str) -> Path:
    """Scripted traces on the training tasks into a database, curated to an SFT export; returns it."""
    db = f"sqlite:///{steps.work / 'traces.db'}"
    if not (steps.work / "traces.db").exists():
        steps.arena("collect", "eval", "--index", "index", "--tasks", "train.jsonl", "--pool", "all",
                    "--agent", "scripted", "--k", "1", "--out", "runs/scripted", "--db", db)  # fmt: skip
    export = steps.work / f"export-{name}"
    mode = "converted" if conversion else "native"
    args = ["curate", "--db", db, "--out", export.name, "--format", "sft", "--json", *CURATE_ARGS[mode]]
    steps.arena(f"curate-{name}", *args)
    return export


def sft_rows(export: Path, limit: int) -> list[dict[str, Any]]:
    """The export's training-split SFT rows (JSONL), at most ``limit``, in file order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(export.glob("sft*.jsonl")):
        if "eval" in path.name:
            continue
        with path.open(encoding="utf-8") as handle:
            rows += [json.loads(line) for line in handle if line.strip()]
    return rows[:limit]


def evaluate(steps: Steps, plan: LearnPlan, gguf: Path, name: str, manifest: Path | None) -> dict[str, Any]:
    """Serve ``gguf`` locally and run ``arena eval`` on the held-out tasks; returns results.json."""
    from neurons.demo.local_llm import LocalLLM

    args = ["eval", "--index", "index", "--tasks", "held_out.jsonl", "--pool", "never_touch",
            "--limit", str(plan.held_out), "--k", "1", "--concurrency", "1", "--max-steps",
            str(plan.eval_max_steps), "--max-tool-calls", str(plan.eval_max_tool_calls),
            "--task-timeout", str(plan.eval_timeout_s), "--seed", str(plan.seed),
            "--out", f"runs/{name}"]  # fmt: skip
    for key, value in AGENT_OPTIONS.items():
        args += ["--agent-option", f"{key}={json.dumps(value)}"]
    if manifest is not None:
        args += ["--train-manifest", str(manifest)]
    claim_run_dir(steps.work / "runs" / name, gguf)
    log = steps.work / "logs" / f"llm-{name}.log"
    with LocalLLM(model=gguf, chat_format=CHAT_FORMAT, threads=plan.threads, log_path=log) as llm:
        steps.arena(f"eval-{name}", *args, "--model-url", llm.base_url, "--model", llm.model)
    results: dict[str, Any] = json.loads((steps.work / "runs" / name / "results.json").read_text())
    return results


def claim_run_dir(run_dir: Path, gguf: Path) -> None:
    """Keep ``run_dir`` for resuming only if its samples came from these weights; else start afresh.

    ``arena eval`` resumes a run whose settings match, but the local server names every GGUF
    alike, so the weights are told apart here: by their SHA-256, stamped before the first sample.
    """
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    stamp = run_dir / "weights.json"
    if run_dir.exists():
        old = json.loads(stamp.read_text()).get("sha256") if stamp.exists() else None
        if old == digest:
            return
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    stamp.write_text(json.dumps({"gguf": gguf.name, "sha256": digest}) + "\n", encoding="utf-8")


def headline(results: dict[str, Any]) -> dict[str, Any]:
    """The figures the benchmark reports from one run's results.json."""
    metrics = results["overall"]["metrics"]
    return {
        "tasks": results["overall"]["tasks"],
        **{name: metrics[name] for name in REPORTED if name in metrics},
        "pass_at_k": results["overall"].get("pass_at_k"),
    }


def compare(steps: Steps, a: str, b: str) -> dict[str, Any]:
    """``arena eval compare`` of two runs (paired bootstrap), as JSON."""
    out = steps.arena(f"compare-{a}-{b}", "eval", "compare", f"runs/{a}", f"runs/{b}", "--json")
    return dict(json.loads(out))


def verdict(comparison: dict[str, Any], held_out: int) -> dict[str, Any]:
    """The acceptance, read off the paired comparison of base (a) and tuned (b).

    Tuned ASR above base with the paired 95% interval of the difference above zero, on at least
    60 held-out tasks, and hallucinated ids per episode not higher.
    """
    rows = {row["name"]: row for row in comparison.get("metrics", [])}
    asr = (rows.get("asr") or {}).get("difference") or {}
    hallucinated = (rows.get("hallucinated_ids") or {}).get("difference") or {}
    checks = {
        "held_out_at_least_60": held_out >= 60 and int(asr.get("tasks", 0)) >= 60,
        "asr_lift_interval_above_zero": float(asr.get("low", 0.0)) > 0.0,
        "hallucinated_ids_not_higher": float(hallucinated.get("estimate", 0.0)) <= 0.0,
    }
    return {"passed": all(checks.values()), "checks": checks, "asr_difference": asr or None}


def describe_plan(plan: LearnPlan) -> dict[str, Any]:
    """The plan as JSON, with the evaluation agent's fixed options."""
    return asdict(plan) | {"agent_options": AGENT_OPTIONS, "chat_format": CHAT_FORMAT}


def names_of(rows: Sequence[dict[str, Any]], key: str) -> dict[str, int]:
    """Count rows by a column's value (``origin`` for native and converted rows)."""
    counts: dict[str, int] = {}
    for row in rows:
        value = str(row.get(key, "native"))
        counts[value] = counts.get(value, 0) + 1
    return counts
