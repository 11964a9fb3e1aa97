"""Evaluation statistics: the unbiased pass@k estimator, bootstrap intervals over tasks, paired differences.

Every interval here resamples *tasks* (the unit that was drawn), never individual samples of
one task: k samples of one task are correlated, and treating them as independent would make
the interval too narrow. Resampling is seeded, so the same inputs give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DEFAULT_RESAMPLES = 10_000
DEFAULT_LEVEL = 0.95
# Resamples drawn per batch, so memory stays bounded for thousands of tasks.
_BATCH = 1_000


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided percentile interval at ``level``."""

    estimate: float
    low: float
    high: float
    level: float = DEFAULT_LEVEL

    def excludes_zero(self) -> bool:
        """Whether the whole interval lies strictly above or strictly below zero."""
        return self.low > 0.0 or self.high < 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Return the unbiased estimate of pass@k from ``n`` samples of which ``c`` succeeded.

    ``1 - C(n - c, k) / C(n, k)``: the chance that at least one of ``k`` samples drawn without
    replacement from the ``n`` succeeds (Chen et al., 2021). ``pass_at_k(n, c, 1) == c / n``.

    Raises:
        ValueError: ``k`` is not in ``1..n`` or ``c`` is not in ``0..n``.
    """
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got k={k} n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"successes must be within 0..n, got c={c} n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean(values: Sequence[float]) -> float | None:
    """Return the arithmetic mean, or None for no values."""
    return math.fsum(values) / len(values) if values else None


def noise_floor(tasks: int) -> float | None:
    """Return 1/N: how much one task flipping moves a per-task rate (None for no tasks)."""
    return 1.0 / tasks if tasks > 0 else None


def resampled_means(values: Sequence[float], indices: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Return the mean of ``values`` under each row of ``indices`` (one bootstrap replicate per row)."""
    data = np.asarray(values, dtype=np.float64)
    means: npt.NDArray[np.float64] = data[indices].mean(axis=1)
    return means


def _percentiles(replicates: npt.NDArray[np.float64], level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_means(values: Sequence[float], resamples: int, seed: int) -> npt.NDArray[np.float64]:
    """Return ``resamples`` bootstrap replicates of the mean of ``values`` (tasks drawn with replacement)."""
    rng = np.random.default_rng(seed)
    n = len(values)
    parts: list[npt.NDArray[np.float64]] = []
    done = 0
    while done < resamples:
        size = min(_BATCH, resamples - done)
        parts.append(resampled_means(values, rng.integers(0, n, size=(size, n), dtype=np.int64)))
        done += size
    return np.concatenate(parts)


def _check(resamples: int, level: float) -> None:
    if resamples < 1:
        raise ValueError("resamples must be positive")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be within (0, 1)")


def bootstrap_interval(
    values: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> Interval | None:
    """Return the mean of per-task ``values`` with a percentile bootstrap interval over tasks.

    Args:
        values: one value per task (e.g. the task's success rate over its samples).
        resamples: bootstrap replicates.
        level: two-sided coverage (0.95 gives the 2.5th and 97.5th percentiles).
        seed: the resampling seed.

    Returns:
        The interval, or None when there are no values.
    """
    _check(resamples, level)
    estimate = mean(values)
    if estimate is None:
        return None
    low, high = _percentiles(bootstrap_means(values, resamples, seed), level)
    return Interval(estimate=estimate, low=low, high=high, level=level)


def paired_bootstrap_interval(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> Interval | None:
    """Return ``mean(b) - mean(a)`` over the same tasks, with a paired bootstrap interval.

    Position i of ``a`` and ``b`` is the same task; each replicate resamples task positions
    once and uses them for both runs, so the task-to-task variation they share cancels.

    Raises:
        ValueError: the sequences differ in length.
    """
    _check(resamples, level)
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    if not a:
        return None
    differences = [y - x for x, y in zip(a, b, strict=True)]
    estimate = math.fsum(differences) / len(differences)
    low, high = _percentiles(bootstrap_means(differences, resamples, seed), level)
    return Interval(estimate=estimate, low=low, high=high, level=level)
