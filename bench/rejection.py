"""Rejection-sampled re-SFT: a model's own verified successes, trained on, and measured on held-out tasks.

One round, from any GGUF (``--gguf``; default: the embedded SmolLM2, through the same exporter
as the learning proof's base):

1. world: the learning proof's (a synthetic catalog, its index, generated tasks, leak clusters,
   a held-out set in ``never_touch``: ``neurons.learning.pipeline.build_world``), or an earlier
   run's (``--world-dir``: its ``index/``, ``train.jsonl`` and ``held_out.jsonl``);
2. rollouts: ``arena env rollouts --gguf START --k K`` on the training tasks (the model served
   by the local server with the learning proof's chat handler and agent options, every episode
   judged as the validator judges it, through curation's funnel, split and audit);
3. the export's train-split SFT rows (verified successes, ``origin: rollout``) fine-tune START
   (TRL on the CPU, as the learning proof trains), written back to a GGUF;
4. ``arena eval`` of START and the tuned model on the held-out tasks (k=1, the rollout export's
   manifest refusing any task whose leak cluster it trained on), ``arena eval compare`` (paired
   bootstrap over tasks: pass@1 before and after, and the interval of the difference), and
   START's pass@k on the same tasks (``arena eval --k K``, temperature 0.7).

With no verified success there is nothing to train: the result says so, and the tuned model is
START. Writes ``bench/results/rejection.json`` (``rejection-toy.json`` with ``--toy``).

Example: python bench/rejection.py --toy
Example: python bench/rejection.py --gguf /path/best.gguf --world-dir /path/learn-work --k 8
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neurons.learning.pipeline import (  # noqa: E402
    AGENT_OPTIONS,
    LearnPlan,
    Steps,
    build_world,
    claim_run_dir,
    compare,
    evaluate,
    headline,
    sft_rows,
)
from neurons.learning.train import TrainPlan  # noqa: E402

WORLD_FILES = ("index", "train.jsonl", "held_out.jsonl")


def _tools() -> list[dict[str, Any]]:
    from arena.tools import tool_schemas
    from neurons.learning.pipeline import SCHEMA_MAX_STRING
    from neurons.miner.agents.schemas import constrain_tool_schemas

    # The agent sends the model these (tightened) schemas; training renders the same ones.
    return list(constrain_tool_schemas(tool_schemas("sb-1"), max_string=SCHEMA_MAX_STRING))


def start_model(steps: Steps, gguf: Path | None) -> Path:
    """The model rollouts start from: ``gguf`` (copied into the work dir), or the exported base."""
    from neurons.learning.run import base_gguf

    if gguf is None:
        return base_gguf(steps)
    start = steps.work / "start.gguf"
    if not start.exists():
        shutil.copyfile(gguf, start)
    return start


def world(steps: Steps, plan: LearnPlan, world_dir: Path | None) -> None:
    """The index and the training and held-out task files in the work dir (built, or linked from a run)."""
    if world_dir is None:
        if not (steps.work / "held_out.jsonl").exists():
            build_world(steps, plan)
        return
    for name in WORLD_FILES:
        target = steps.work / name
        if not target.exists():
            target.symlink_to((world_dir / name).resolve())


def rollouts(steps: Steps, plan: LearnPlan, start: Path, k: int, max_tasks: int | None) -> dict[str, Any]:
    """``arena env rollouts`` of the start model on the training tasks; its summary."""
    args = ["env", "rollouts", "--index", "index", "--tasks", "train.jsonl", "--gguf", str(start),
            "--k", str(k), "--max-steps", str(plan.eval_max_steps),
            "--max-tool-calls", str(plan.eval_max_tool_calls), "--deadline", str(plan.eval_timeout_s),
            "--seed", str(plan.seed), "--out", "rollouts", "--json"]  # fmt: skip
    if max_tasks:
        args += ["--max-tasks", str(max_tasks)]
    return dict(json.loads(steps.arena("rollouts", *args)))


def fine_tune(steps: Steps, plan: LearnPlan, start: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Fine-tune the start model on ``rows``; write ``tuned.gguf``; the training report."""
    from neurons.learning.gguf_policy import export_gguf, load_policy
    from neurons.learning.rows import render_rows
    from neurons.learning.train import train

    if not rows:
        return {"rows": 0, "trained": False}
    model, tokenizer = steps.timed("load-start", lambda: load_policy(start))
    rendered = render_rows(rows, _tools(), tokenizer, max_tokens=plan.max_tokens)
    report: dict[str, Any] = {
        "rows": len(rows),
        "examples": len(rendered.examples),
        "tokens": rendered.tokens,
    }
    if not rendered.examples:
        return report | {"trained": False}
    tuned, trained = steps.timed(
        "train", lambda: train(model, tokenizer, rendered.examples, plan.train, steps.work / "trainer")
    )
    steps.timed("export", lambda: export_gguf(tuned, start, steps.work / "tuned.gguf"))
    return report | {
        "trained": True,
        "steps": trained.steps,
        "seconds": trained.seconds,
        "loss_first": trained.losses[0] if trained.losses else None,
        "loss_last": trained.losses[-1] if trained.losses else None,
    }


def pass_at_k(steps: Steps, plan: LearnPlan, gguf: Path, k: int, manifest: Path | None) -> dict[str, Any]:
    """The model's pass@k on the held-out tasks (k samples each at temperature 0.7)."""
    from neurons.demo.local_llm import LocalLLM
    from neurons.learning.pipeline import CHAT_FORMAT

    name = f"start-k{k}"
    args = ["eval", "--index", "index", "--tasks", "held_out.jsonl", "--pool", "never_touch",
            "--limit", str(plan.held_out), "--k", str(k), "--temperature", "0.7", "--concurrency", "1",
            "--max-steps", str(plan.eval_max_steps), "--max-tool-calls", str(plan.eval_max_tool_calls),
            "--task-timeout", str(plan.eval_timeout_s), "--seed", str(plan.seed),
            "--out", f"runs/{name}"]  # fmt: skip
    if manifest is not None:
        args += ["--train-manifest", str(manifest)]
    for key, value in AGENT_OPTIONS.items():
        args += ["--agent-option", f"{key}={json.dumps(value)}"]
    claim_run_dir(steps.work / "runs" / name, gguf)
    with LocalLLM(
        model=gguf, chat_format=CHAT_FORMAT, threads=plan.threads, log_path=steps.work / "logs" / "llm-k.log"
    ) as llm:
        steps.arena(f"eval-{name}", *args, "--model-url", llm.base_url, "--model", llm.model)
    results: dict[str, Any] = json.loads((steps.work / "runs" / name / "results.json").read_text())
    return headline(results)


def run(args: argparse.Namespace) -> dict[str, Any]:
    plan = LearnPlan.quick() if args.toy else LearnPlan()
    if args.held_out:
        plan = replace(plan, held_out=args.held_out)
    if args.toy:
        plan = replace(plan, train=TrainPlan(max_steps=2, gradient_accumulation=2, learning_rate=1e-4))
    work = args.work or Path(tempfile.mkdtemp(prefix="arena-rejection-"))
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps(work, echo=lambda line: print(line, file=sys.stderr, flush=True))
    started = time.monotonic()
    world(steps, plan, args.world_dir)
    start = start_model(steps, args.gguf)
    sampled = rollouts(steps, plan, start, args.k, args.max_tasks)
    rows = sft_rows(work / "rollouts" / "export", plan.max_rows)
    training = fine_tune(steps, plan, start, rows)
    # The evaluation refuses the leak clusters trained on; with nothing trained there is nothing to refuse
    # (and an export without rows names none: `arena eval` refuses such a manifest).
    trained = bool(training.get("trained"))
    manifest = work / "rollouts" / "export" / "manifest.json" if trained else None
    tuned = work / "tuned.gguf" if trained else start
    before = evaluate(steps, plan, start, "start", manifest)
    after = evaluate(steps, plan, tuned, "tuned", manifest)
    return {
        "benchmark": "rejection",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "start": {
            "gguf": str(args.gguf) if args.gguf else "embedded SmolLM2 (exported base)",
            "sha256": sampled["weights_hash"],
        },
        "plan": {
            "toy": args.toy,
            "k": args.k,
            "max_tasks": args.max_tasks,
            "held_out": plan.held_out,
            "max_rows": plan.max_rows,
            "train": plan.train.__dict__,
        },  # fmt: skip
        "rollouts": sampled,
        "training": training,
        "before": headline(before),
        "after": headline(after),
        "comparison": compare(steps, "start", "tuned"),
        "start_pass_at_k": pass_at_k(steps, plan, start, args.k, manifest),
        "timings_s": steps.timings | {"total": round(time.monotonic() - started, 1)},
        "work": str(work),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--toy", action="store_true", help="toy size: a tiny world, few tasks, 2 training steps"
    )
    parser.add_argument(
        "--gguf", type=Path, default=None, help="the start model (default: the embedded SmolLM2)"
    )
    parser.add_argument(
        "--world-dir", type=Path, default=None, help="an earlier run's index/, train.jsonl, held_out.jsonl"
    )
    parser.add_argument("--k", type=int, default=8, help="rollouts per training task, and the k of pass@k")
    parser.add_argument(
        "--max-tasks", type=int, default=None, help="training tasks rolled out (default: all)"
    )
    parser.add_argument("--held-out", type=int, default=None, help="held-out tasks evaluated")
    parser.add_argument(
        "--work", type=Path, default=None, help="work directory (resumable; default: a temp dir)"
    )
    parser.add_argument("--out", type=Path, default=None, help="result JSON (default bench/results/...)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    result = run(args)
    out = args.out or ROOT / "bench" / "results" / ("rejection-toy.json" if args.toy else "rejection.json")
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        json.dumps(
            {k: result[k] for k in ("rollouts", "training", "before", "after", "start_pass_at_k")}, indent=2
        )
    )
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
