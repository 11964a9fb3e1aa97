"""Two evaluation runs side by side: paired bootstrap differences per metric, verdicts, and a per-intent plot.

Pairing is over the tasks both runs evaluated: each replicate resamples those tasks once and
takes B − A on the same draw, so the tasks' own difficulty cancels out. A verdict is given only
where the interval excludes zero; anything else is "no detectable difference", however large
the point estimate looks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from judging.stats import mean, noise_floor, paired_bootstrap_interval
from neurons.evaluation.report import INTENT_ORDER, METRICS, Metric

PerTask = Mapping[str, Mapping[str, Any]]


def _verdict(metric: Metric, low: float, high: float) -> str | None:
    if low <= 0.0 <= high:
        return None
    up = low > 0.0
    if metric.better is None:
        return "B higher" if up else "B lower"
    return "B better" if up == (metric.better == "higher") else "B worse"


def _row(
    metric: Metric,
    task_ids: Sequence[str],
    a: PerTask,
    b: PerTask,
    field: tuple[str, str],
    *,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    section, key = field
    pairs = [(a[t][section].get(key), b[t][section].get(key)) for t in task_ids]
    xs = [x for x, y in pairs if x is not None and y is not None]
    ys = [y for x, y in pairs if x is not None and y is not None]
    interval = paired_bootstrap_interval(xs, ys, resamples=resamples, seed=seed)
    difference = None
    verdict = None
    if interval is not None:
        difference = {
            "estimate": interval.estimate,
            "low": interval.low,
            "high": interval.high,
            "tasks": len(xs),
        }
        verdict = _verdict(metric, interval.low, interval.high)
    return {
        "name": metric.name,
        "label": metric.label,
        "better": metric.better,
        "a": mean(xs),
        "b": mean(ys),
        "difference": difference,
        "verdict": verdict,
    }


def _warnings(a: Mapping[str, Any], b: Mapping[str, Any], only_a: int, only_b: int) -> list[str]:
    warnings = []
    if a.get("versions") != b.get("versions"):
        warnings.append("the runs were judged by different scorer versions, catalogs or toolsets")
    if a.get("k") != b.get("k"):
        warnings.append(
            f"the runs drew different numbers of samples per task (k={a.get('k')} vs {b.get('k')})"
        )
    if only_a or only_b:
        warnings.append(f"{only_a + only_b} tasks are in only one run and are left out of every difference")
    for name, results in (("A", a), ("B", b)):
        if not results.get("complete", True):
            warnings.append(f"run {name} is incomplete")
    return warnings


def compare_results(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    labels: tuple[str, str] = ("A", "B"),
    resamples: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare two results.json documents over the tasks both evaluated.

    Returns:
        ``{"a", "b", "tasks", "only_a", "only_b", "noise_floor", "metrics": [row...], "warnings"}``;
        each row has the means of A and B over the paired tasks, ``difference`` (B − A with its
        interval) and ``verdict`` (``B better`` / ``B worse``, ``B higher`` / ``B lower`` for
        metrics with no better direction, or None when the interval includes zero).
    """
    per_a: PerTask = a["per_task"]
    per_b: PerTask = b["per_task"]
    common = sorted(t for t in per_a.keys() & per_b.keys() if per_a[t]["n"] > 0 and per_b[t]["n"] > 0)
    only_a, only_b = len(per_a.keys() - per_b.keys()), len(per_b.keys() - per_a.keys())
    rows = [
        _row(m, common, per_a, per_b, ("metrics", m.name), resamples=resamples, seed=seed) for m in METRICS
    ]
    shared_k = [k for k in a["overall"]["pass_at_k"] if k != "1" and k in b["overall"]["pass_at_k"]]
    for k in shared_k:
        metric = Metric(f"pass@{k}", f"pass@{k}", "higher", True)
        rows.append(_row(metric, common, per_a, per_b, ("pass_at_k", k), resamples=resamples, seed=seed))
    for intent in INTENT_ORDER:
        ids = [t for t in common if per_a[t]["intent"] == intent]
        if ids:
            metric = Metric(f"asr_{intent}", f"ASR {intent}", "higher", True)
            rows.append(_row(metric, ids, per_a, per_b, ("metrics", "asr"), resamples=resamples, seed=seed))
    return {
        "a": {"label": labels[0], "run": a.get("run", {})},
        "b": {"label": labels[1], "run": b.get("run", {})},
        "tasks": len(common),
        "only_a": only_a,
        "only_b": only_b,
        "noise_floor": noise_floor(len(common)),
        "bootstrap": {"resamples": resamples, "seed": seed, "paired": True},
        "metrics": rows,
        "warnings": _warnings(a, b, only_a, only_b),
    }


def plot_intent_asr(
    a: Mapping[str, Any], b: Mapping[str, Any], path: Path, *, labels: tuple[str, str] = ("A", "B")
) -> None:
    """Draw per-intent ASR (and overall) of two runs with their 95% intervals as a PNG."""
    # The object-oriented API with the Agg canvas: no pyplot global state, no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    groups = ["all", *[i for i in INTENT_ORDER if i in a["by_intent"] or i in b["by_intent"]]]
    figure = Figure(figsize=(1.6 * len(groups) + 2, 3.6), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    width = 0.38
    for offset, results, label in ((-width / 2, a, labels[0]), (width / 2, b, labels[1])):
        heights: list[float] = []
        errors: list[list[float]] = [[], []]
        for group in groups:
            summary = results["overall"] if group == "all" else results["by_intent"].get(group)
            asr = summary["metrics"]["asr"] if summary else None
            value = 100 * asr["estimate"] if asr else 0.0
            heights.append(value)
            errors[0].append(value - 100 * asr["low"] if asr else 0.0)
            errors[1].append(100 * asr["high"] - value if asr else 0.0)
        positions = [i + offset for i in range(len(groups))]
        axes.bar(positions, heights, width, yerr=errors, capsize=3, label=label)
    axes.set_xticks(range(len(groups)), groups)
    axes.set_ylabel("ASR (%) with 95% interval")
    axes.set_ylim(0, 100)
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
