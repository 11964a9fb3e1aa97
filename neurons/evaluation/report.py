"""Evaluation metrics: per-task values from judged samples, overall and per intent, with bootstrap intervals.

Each metric is first averaged over a task's samples, then over tasks, so every task weighs the
same however many samples it has, and the bootstrap resamples tasks (see :mod:`judging.stats`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from arena.types import Task
from judging.stats import DEFAULT_LEVEL, bootstrap_interval, mean, noise_floor, pass_at_k
from judging.types import Judgment
from neurons.evaluation.records import JudgmentRecord, Key, SampleSummary

RESULTS_FORMAT = "arena.eval/1"
INTENT_ORDER = ("product", "shop", "voucher", "knowledge")


@dataclass(frozen=True)
class Metric:
    """One reported metric: its key, its label, which direction is better, and whether it is a rate."""

    name: str
    label: str
    better: Literal["higher", "lower"] | None
    rate: bool


METRICS: tuple[Metric, ...] = (
    Metric("asr", "ASR (pass@1)", "higher", True),
    Metric("strict_asr", "strict ASR (no reject, fabrication or hallucination)", "higher", True),
    Metric("car", "CAR (mean rule score)", "higher", True),
    Metric("score", "judge score", "higher", False),
    Metric("process", "process score", "higher", False),
    Metric("reasoning", "reasoning (LLM judge)", "higher", False),
    Metric("hallucinated_ids", "hallucinated ids / trajectory", "lower", False),
    Metric("fabrication_free", "fabrication-free rate", "higher", True),
    Metric("tool_calls", "tool calls / trajectory", None, False),
    Metric("tokens", "tokens / trajectory", None, False),
)
METRIC_BY_NAME = {metric.name: metric for metric in METRICS}


def sample_values(summary: SampleSummary, judgment: Judgment) -> dict[str, float | None]:
    """Return one sample's value of every metric (None where it has none, e.g. reasoning unscored)."""
    process = judgment.check("process")
    usage = summary.usage
    clean = not judgment.fabricated and not judgment.hallucinated_product_ids
    return {
        "asr": 1.0 if judgment.success else 0.0,
        # A success the judge zeroed (a hard reject, a fabricated result, an id never shown).
        "strict_asr": 1.0 if judgment.success and judgment.score > 0 else 0.0,
        "car": judgment.outcome.rule,
        "score": judgment.score,
        "process": process.value if process is not None else None,
        "reasoning": judgment.reasoning.value,
        "hallucinated_ids": float(len(judgment.hallucinated_product_ids)),
        "fabrication_free": 1.0 if clean else 0.0,
        "tool_calls": float(summary.tool_calls),
        "tokens": float(usage.prompt_tokens + usage.completion_tokens) if usage is not None else None,
    }


@dataclass
class TaskRow:
    """One task's samples folded: counts, the mean of each metric over its samples, the stop reasons."""

    intent: str
    n: int = 0
    successes: int = 0
    sums: dict[str, list[float]] = field(default_factory=dict)
    hallucinated_total: int = 0
    stops: Counter[str] = field(default_factory=Counter)

    def add(self, summary: SampleSummary, judgment: Judgment) -> None:
        """Fold one judged sample in."""
        self.n += 1
        self.successes += int(judgment.success)
        self.hallucinated_total += len(judgment.hallucinated_product_ids)
        self.stops[summary.stop] += 1
        for name, value in sample_values(summary, judgment).items():
            if value is not None:
                self.sums.setdefault(name, []).append(value)

    def value(self, name: str) -> float | None:
        """The task's mean of one metric over the samples that have it."""
        return mean(self.sums.get(name, []))

    def pass_at(self, k: int) -> float | None:
        """The task's unbiased pass@k, or None with fewer than k samples."""
        return pass_at_k(self.n, self.successes, k) if self.n >= k else None

    def to_json(self, ks: Sequence[int]) -> dict[str, Any]:
        """The row as JSON (results.json ``per_task``; ``arena eval compare`` pairs these)."""
        return {
            "intent": self.intent,
            "n": self.n,
            "successes": self.successes,
            "metrics": {m.name: self.value(m.name) for m in METRICS},
            "pass_at_k": {str(k): self.pass_at(k) for k in ks},
            "hallucinated_ids_total": self.hallucinated_total,
            "stops": dict(self.stops),
        }


def k_values(k: int) -> list[int]:
    """The k of pass@k to report: 1, the powers of two below k, and k."""
    ks = {1, k}
    power = 2
    while power < k:
        ks.add(power)
        power *= 2
    return sorted(ks)


def task_rows(
    tasks: Sequence[Task],
    samples: Mapping[Key, SampleSummary],
    judgments: Mapping[Key, JudgmentRecord],
    k: int,
) -> dict[str, TaskRow]:
    """Fold the judged samples ``0..k-1`` of each task into its row (tasks with none get an empty row)."""
    rows: dict[str, TaskRow] = {}
    for task in tasks:
        row = TaskRow(intent=task.intent)
        for sample in range(k):
            key = (task.task_id, sample)
            if key in samples and key in judgments:
                row.add(samples[key], judgments[key].judgment)
        rows[task.task_id] = row
    return rows


def interval_json(values: Sequence[float], *, resamples: int, seed: int) -> dict[str, Any] | None:
    """A bootstrap interval over per-task values as JSON, with the number of tasks it rests on."""
    interval = bootstrap_interval(values, resamples=resamples, seed=seed)
    if interval is None:
        return None
    return {"estimate": interval.estimate, "low": interval.low, "high": interval.high, "tasks": len(values)}


def summarize(rows: Sequence[TaskRow], ks: Sequence[int], *, resamples: int, seed: int) -> dict[str, Any]:
    """Summarise a group of tasks: every metric and pass@k with its interval, counts, noise floor."""
    scored = [row for row in rows if row.n > 0]
    metrics: dict[str, Any] = {}
    for metric in METRICS:
        values = [v for v in (row.value(metric.name) for row in scored) if v is not None]
        metrics[metric.name] = interval_json(values, resamples=resamples, seed=seed)
    passes: dict[str, Any] = {}
    for k in ks:
        values = [v for v in (row.pass_at(k) for row in scored) if v is not None]
        passes[str(k)] = interval_json(values, resamples=resamples, seed=seed)
    stops: Counter[str] = Counter()
    for row in scored:
        stops.update(row.stops)
    return {
        "tasks": len(scored),
        "samples": sum(row.n for row in scored),
        "noise_floor": noise_floor(len(scored)),
        "metrics": metrics,
        "pass_at_k": passes,
        "hallucinated_ids_total": sum(row.hallucinated_total for row in scored),
        "model_errors": stops.get("model_error", 0),
        "stops": dict(sorted(stops.items())),
    }


def build_results(
    tasks: Sequence[Task],
    samples: Mapping[Key, SampleSummary],
    judgments: Mapping[Key, JudgmentRecord],
    *,
    k: int,
    seed: int,
    resamples: int,
    run: Mapping[str, Any],
    selection: Mapping[str, Any],
) -> dict[str, Any]:
    """Build results.json: settings, selection, versions, overall and per-intent summaries, per-task rows."""
    rows = task_rows(tasks, samples, judgments, k)
    ks = k_values(k)
    intents = [i for i in INTENT_ORDER if any(r.intent == i for r in rows.values())]
    versions = {
        judgments[key].judgment.versions.model_dump_json()
        for key in judgments
        if key[1] < k and key[0] in rows and key in samples
    }
    expected = len(tasks) * k
    done = sum(row.n for row in rows.values())
    return {
        "format": RESULTS_FORMAT,
        "run": dict(run),
        "selection": dict(selection),
        "k": k,
        "complete": done == expected,
        "samples_expected": expected,
        "bootstrap": {"resamples": resamples, "seed": seed, "level": DEFAULT_LEVEL, "unit": "task"},
        "versions": [json.loads(v) for v in sorted(versions)],
        "overall": summarize(list(rows.values()), ks, resamples=resamples, seed=seed),
        "by_intent": {
            intent: summarize(
                [r for r in rows.values() if r.intent == intent], ks, resamples=resamples, seed=seed
            )
            for intent in intents
        },
        "per_task": {task_id: row.to_json(ks) for task_id, row in rows.items()},
    }
