"""Markdown and terminal renderings of evaluation results and comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neurons.evaluation.report import METRIC_BY_NAME, METRICS, Metric


def format_value(value: float | None, *, rate: bool, digits: int = 3) -> str:
    """Format one number: rates as percentages with one decimal, others to ``digits`` significant digits."""
    if value is None:
        return "–"
    if rate:
        return f"{100 * value:.1f}%"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.{digits}g}" if abs(value) < 1 else f"{value:.2f}"


def format_interval(interval: Mapping[str, Any] | None, *, rate: bool) -> str:
    """Format ``estimate [low, high]`` (percentage points for rates)."""
    if interval is None:
        return "–"
    if rate:
        return (
            f"{100 * interval['estimate']:.1f}% [{100 * interval['low']:.1f}, {100 * interval['high']:.1f}]"
        )
    estimate, low, high = (format_value(interval[key], rate=False) for key in ("estimate", "low", "high"))
    return f"{estimate} [{low}, {high}]"


def _groups(results: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [("all", results["overall"]), *results["by_intent"].items()]


def _title(results: Mapping[str, Any]) -> str:
    run = results["run"]
    agent = run.get("agent", "?")
    if agent != "llm":
        return f"agent {agent}"
    return f"{run.get('model') or 'model'} (temperature {run.get('temperature', '?')})"


def _tasks_line(tasks: int, selection: Mapping[str, Any]) -> str:
    if "pool" not in selection:
        return f"- Tasks: {tasks}"
    return (
        f"- Tasks: {tasks} (pool {selection['pool']}; loaded {selection['loaded']}, dropped "
        f"{selection['dropped_pool']} by pool, {selection['dropped_leak']} as seen in training, "
        f"{selection['dropped_limit']} by --limit)"
    )


def results_markdown(results: Mapping[str, Any]) -> str:
    """Render results.json as a Markdown report: one column per intent, intervals in brackets."""
    groups = _groups(results)
    selection = results["selection"]
    overall = results["overall"]
    boot = results["bootstrap"]
    lines = [
        f"# Evaluation: {_title(results)}",
        "",
        _tasks_line(overall["tasks"], selection),
        f"- Samples: {overall['samples']} of {results['samples_expected']} (k = {results['k']} per task)"
        + ("" if results["complete"] else " — incomplete run"),
        f"- Intervals: {int(100 * boot['level'])}% percentile bootstrap over tasks "
        f"({boot['resamples']} resamples, seed {boot['seed']})",
        f"- Noise floor (one task of {overall['tasks']}): {format_value(overall['noise_floor'], rate=True)}",
        "",
        "| Metric | " + " | ".join(f"{name} (N={group['tasks']})" for name, group in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for metric in METRICS:
        if all(group["metrics"][metric.name] is None for _, group in groups):
            continue
        cells = [format_interval(group["metrics"][metric.name], rate=metric.rate) for _, group in groups]
        lines.append(f"| {metric.label} | " + " | ".join(cells) + " |")
    for k in overall["pass_at_k"]:
        if k == "1":
            continue
        cells = [format_interval(group["pass_at_k"].get(k), rate=True) for _, group in groups]
        lines.append(f"| pass@{k} | " + " | ".join(cells) + " |")
    counts = (
        ("hallucinated ids (total)", "hallucinated_ids_total"),
        ("model errors (samples)", "model_errors"),
    )
    for label, key in counts:
        lines.append(f"| {label} | " + " | ".join(str(group[key]) for _, group in groups) + " |")
    lines.append(
        "| noise floor (1/N) | "
        + " | ".join(format_value(group["noise_floor"], rate=True) for _, group in groups)
        + " |"
    )
    for warning in selection.get("warnings", []):
        lines += ["", f"Note: {warning}."]
    if len(results.get("versions", [])) > 1:
        lines += ["", "Warning: the judgments were made by more than one scorer version."]
    return "\n".join(lines) + "\n"


def _verdict_text(row: Mapping[str, Any]) -> str:
    return str(row["verdict"]) if row["verdict"] else "no detectable difference"


def compare_markdown(comparison: Mapping[str, Any]) -> str:
    """Render a comparison: B - A per metric with the paired interval and the verdict."""
    a, b = comparison["a"], comparison["b"]
    lines = [
        f"# Comparison: B = {b['label']} vs A = {a['label']}",
        "",
        f"- Paired over {comparison['tasks']} tasks in both runs "
        f"({comparison['only_a']} only in A, {comparison['only_b']} only in B); "
        f"noise floor {format_value(comparison['noise_floor'], rate=True)}",
        "- A verdict is given only where the 95% paired bootstrap interval of B − A excludes zero.",
        "",
        "| Metric | A | B | B − A [95% interval] | Verdict |",
        "|---|---|---|---|---|",
    ]
    for row in comparison["metrics"]:
        metric: Metric = METRIC_BY_NAME.get(row["name"]) or Metric(row["name"], row["label"], "higher", True)
        diff = row["difference"]
        if diff is None:
            interval = "–"
        elif metric.rate:
            interval = (
                f"{100 * diff['estimate']:+.1f} pts [{100 * diff['low']:+.1f}, {100 * diff['high']:+.1f}]"
            )
        else:
            interval = f"{diff['estimate']:+.3g} [{diff['low']:+.3g}, {diff['high']:+.3g}]"
        lines.append(
            f"| {row['label']} | {format_value(row['a'], rate=metric.rate)} | "
            f"{format_value(row['b'], rate=metric.rate)} | {interval} | {_verdict_text(row)} |"
        )
    for warning in comparison["warnings"]:
        lines += ["", f"Warning: {warning}"]
    return "\n".join(lines) + "\n"
