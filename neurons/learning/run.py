"""One learning run: world, traces, export, base and tuned weights, evaluation, comparison, ablation.

:func:`run_learning` returns the JSON ``bench/learn.py`` writes to ``bench/results/learning.json``.
The ablation trains the same plan on native rows only (what curation exported before axis-B
conversion); with no rows there is nothing to train, and the "tuned" model is the base.
"""

from __future__ import annotations

import logging
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from neurons.learning.pipeline import (
    LearnError,
    LearnPlan,
    Steps,
    build_world,
    collect_and_curate,
    compare,
    describe_plan,
    evaluate,
    headline,
    names_of,
    sft_rows,
    verdict,
)

logger = logging.getLogger(__name__)


def _tools() -> list[dict[str, Any]]:
    from arena.tools import tool_schemas
    from neurons.learning.pipeline import SCHEMA_MAX_STRING
    from neurons.miner.agents.schemas import constrain_tool_schemas

    # The evaluation agent sends these (tightened) schemas; training renders the same ones.
    return list(constrain_tool_schemas(tool_schemas("sb-1"), max_string=SCHEMA_MAX_STRING))


def train_and_export(steps: Steps, plan: LearnPlan, rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """Render ``rows``, fine-tune the base model on them, write the tuned GGUF; returns the report."""
    from neurons.demo.local_llm import model_path
    from neurons.learning.gguf_policy import export_gguf, load_policy
    from neurons.learning.rows import render_rows
    from neurons.learning.train import train

    if not rows:  # nothing to render or train: skip the model load (about half a minute)
        return {"rows": 0, "examples": 0, "trained": False}
    model, tokenizer = steps.timed(f"load-{name}", lambda: load_policy(model_path()))
    rendered = render_rows(rows, _tools(), tokenizer, max_tokens=plan.max_tokens)
    report: dict[str, Any] = {
        "rows": len(rows),
        "examples": len(rendered.examples),
        "left_out": {"too_long": rendered.too_long, "no_assistant_turn": rendered.no_assistant_turn},
        "tokens_per_epoch": rendered.tokens,
    }
    if not rendered.examples:
        report["trained"] = False
        return report
    tuned, trained = steps.timed(
        f"train-{name}",
        lambda: train(model, tokenizer, rendered.examples, plan.train, steps.work / f"trainer-{name}"),
    )
    gguf = steps.work / f"tuned-{name}.gguf"
    steps.timed(f"export-{name}", lambda: export_gguf(tuned, model_path(), gguf))
    report |= {
        "trained": True,
        "gguf": gguf.name,
        "steps": trained.steps,
        "tokens": trained.tokens,
        "trained_tokens": trained.trained_tokens,
        "seconds": trained.seconds,
        "tokens_per_second": trained.tokens_per_second,
        "loss_first": trained.losses[0] if trained.losses else None,
        "loss_last": trained.losses[-1] if trained.losses else None,
    }
    return report


def with_recoveries(
    steps: Steps, plan: LearnPlan, rows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every ``plan.recovery_every``-th row taught to search again after an empty search."""
    from arena.index import open_index
    from arena.tools import ToolContext
    from neurons.learning.recovery import add_recoveries

    if not rows or plan.recovery_every < 1:
        return rows, {"recovered": 0, "unchanged": len(rows)}
    with open_index(steps.work / "index") as index:
        done = add_recoveries(rows, ToolContext(index=index), every=plan.recovery_every, seed=plan.seed)
    return list(done.rows), {"recovered": done.recovered, "unchanged": done.unchanged}


def base_gguf(steps: Steps) -> Path:
    """The base weights through the same exporter as the tuned ones (the comparison isolates weights)."""
    from neurons.demo.local_llm import model_path
    from neurons.learning.gguf_policy import export_gguf, load_policy

    out = steps.work / "base.gguf"
    if not out.exists():
        model, _ = steps.timed("load-base", lambda: load_policy(model_path()))
        steps.timed("export-base", lambda: export_gguf(model, model_path(), out))
    return out


def run_learning(plan: LearnPlan, work: Path, *, echo: Any = print) -> dict[str, Any]:
    """Run the whole pipeline in ``work`` (created); returns the benchmark's JSON."""
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps(work, echo=echo)
    started = time.monotonic()
    build_world(steps, plan)
    converted_export = collect_and_curate(steps, plan, conversion=True, name="converted")
    native_export = collect_and_curate(steps, plan, conversion=False, name="native")
    base = base_gguf(steps)
    converted = sft_rows(converted_export, plan.max_rows)
    converted_rows, converted_recovery = with_recoveries(steps, plan, converted)
    native_rows, _ = with_recoveries(steps, plan, sft_rows(native_export, plan.max_rows))
    training = train_and_export(steps, plan, converted_rows, "converted") | {"recovery": converted_recovery}
    if not training.get("trained"):
        raise LearnError(f"the converted export holds no trainable rows ({training})")
    manifest = converted_export / "manifest.json"
    base_results = evaluate(steps, plan, base, "base", manifest)
    tuned_results = evaluate(steps, plan, work / str(training["gguf"]), "tuned", manifest)
    ablation = train_and_export(steps, plan, native_rows, "native")
    ablation_headline: dict[str, Any] | None = None
    if ablation.get("trained"):
        ablation_results = evaluate(steps, plan, work / str(ablation["gguf"]), "native", manifest)
        ablation_headline = headline(ablation_results) | {"compare_to_base": compare(steps, "base", "native")}
    comparison = compare(steps, "base", "tuned")
    return {
        "benchmark": "learning",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": _cpus()},
        "plan": describe_plan(plan),
        "rows": {"converted_export": names_of(converted_rows, "origin"), "native_export": len(native_rows)},
        "training": training,
        "base": headline(base_results),
        "tuned": headline(tuned_results),
        "selection": tuned_results.get("selection"),
        "comparison": comparison,
        "acceptance": verdict(comparison, plan.held_out),
        "ablation_native_only": {
            "training": ablation,
            "eval": ablation_headline or "no rows: the model is the base",
        },
        "timings_s": steps.timings | {"total": round(time.monotonic() - started, 1)},
    }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)
