from __future__ import annotations

import math

import numpy as np
import pytest

from judging.stats import (
    Interval,
    bootstrap_interval,
    bootstrap_means,
    mean,
    noise_floor,
    paired_bootstrap_interval,
    pass_at_k,
    resampled_means,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 1, 1, 0.25),  # pass@1 is c / n
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (4, 3, 2, 1.0),  # fewer failures than k: some draw always succeeds
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (8, 2, 8, 1.0),
        (8, 0, 8, 0.0),
        (5, 0, 3, 0.0),
        (20, 1, 10, 0.5),  # 1 - C(19,10)/C(20,10) = 1 - 10/20
    ],
)
def test_pass_at_k_matches_hand_computed_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_is_the_chance_that_some_draw_of_k_succeeds() -> None:
    # Brute force over every k-subset of n samples of which the first c succeed.
    from itertools import combinations

    n, c = 7, 2
    for k in range(1, n + 1):
        subsets = list(combinations(range(n), k))
        hits = sum(1 for subset in subsets if any(i < c for i in subset))
        assert pass_at_k(n, c, k) == pytest.approx(hits / len(subsets))


def test_pass_at_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 0)


def test_mean_and_noise_floor() -> None:
    assert mean([0.0, 1.0, 0.5]) == pytest.approx(0.5)
    assert mean([]) is None
    assert noise_floor(50) == pytest.approx(0.02)
    assert noise_floor(0) is None


def test_resampled_means_under_given_draws() -> None:
    draws = np.array([[0, 0, 0], [0, 1, 2], [2, 2, 1]])
    assert resampled_means([0.0, 1.0, 2.0], draws).tolist() == pytest.approx([0.0, 1.0, 5 / 3])


def test_bootstrap_interval_of_a_constant_has_no_width() -> None:
    interval = bootstrap_interval([0.4] * 7, resamples=500)
    assert interval == Interval(estimate=pytest.approx(0.4), low=pytest.approx(0.4), high=pytest.approx(0.4))


def test_bootstrap_interval_matches_the_exact_bootstrap_distribution() -> None:
    # Values (0, 0, 0, 1): a resampled mean is Binomial(4, 1/4) / 4, so P(mean <= 0.5) = 0.949
    # and P(mean <= 0.75) = 0.996: the 97.5th percentile is 0.75; P(mean = 0) = 0.316 > 0.025,
    # so the 2.5th percentile is 0.
    interval = bootstrap_interval([0.0, 0.0, 0.0, 1.0], resamples=20_000, seed=3)
    assert interval is not None
    assert interval.estimate == pytest.approx(0.25)
    assert (interval.low, interval.high) == (0.0, 0.75)


def test_bootstrap_interval_of_two_values_spans_both() -> None:
    # (0, 1): the mean is 0 or 1 with probability 1/4 each, both beyond the 2.5% tails.
    interval = bootstrap_interval([0.0, 1.0], resamples=10_000, seed=1)
    assert interval is not None and (interval.low, interval.estimate, interval.high) == (0.0, 0.5, 1.0)


def test_bootstrap_replicates_have_the_textbook_standard_error() -> None:
    # The bootstrap SE of a mean is the plug-in SD / sqrt(n).
    rng = np.random.default_rng(0)
    values = rng.random(40).tolist()
    replicates = bootstrap_means(values, 20_000, seed=5)
    plug_in_sd = float(np.std(values))
    assert float(np.std(replicates)) == pytest.approx(plug_in_sd / math.sqrt(40), rel=0.03)


def test_bootstrap_is_seeded() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.25]
    assert bootstrap_interval(values, seed=7) == bootstrap_interval(values, seed=7)
    assert bootstrap_interval([], seed=7) is None


def test_bootstrap_narrows_with_more_tasks() -> None:
    small = bootstrap_interval([0.0, 1.0] * 5, seed=0)
    large = bootstrap_interval([0.0, 1.0] * 200, seed=0)
    assert small is not None and large is not None
    assert (large.high - large.low) < (small.high - small.low) / 3


def test_paired_bootstrap_of_a_constant_shift_is_exact() -> None:
    a = [0.1, 0.9, 0.4, 0.7, 0.2]
    b = [x + 0.1 for x in a]
    interval = paired_bootstrap_interval(a, b, resamples=1000)
    assert interval is not None
    assert (interval.estimate, interval.low, interval.high) == pytest.approx((0.1, 0.1, 0.1))
    assert interval.excludes_zero()


def test_identical_runs_have_no_difference() -> None:
    a = [0.0, 1.0, 0.5, 1.0]
    interval = paired_bootstrap_interval(a, list(a), resamples=500)
    assert interval is not None and (interval.low, interval.high) == (0.0, 0.0)
    assert not interval.excludes_zero()


def test_pairing_detects_what_separate_intervals_cannot() -> None:
    # Tasks range from easy to hard; B is 0.05 better on every one. Separately the two runs'
    # intervals overlap widely, but the paired difference is certain.
    a = [i / 40 for i in range(40)]
    b = [x + 0.05 for x in a]
    ia, ib = bootstrap_interval(a, seed=0), bootstrap_interval(b, seed=0)
    assert ia is not None and ib is not None and ib.low < ia.high
    paired = paired_bootstrap_interval(a, b, seed=0)
    assert paired is not None and paired.low > 0


def test_a_noisy_difference_is_not_a_verdict() -> None:
    a = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    b = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]  # one task better on balance, out of six
    interval = paired_bootstrap_interval(a, b, seed=0)
    assert interval is not None and interval.estimate == pytest.approx(1 / 6)
    assert not interval.excludes_zero()


def test_paired_bootstrap_needs_equal_lengths() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap_interval([0.0], [0.0, 1.0])
    assert paired_bootstrap_interval([], []) is None


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        bootstrap_interval([1.0], resamples=0)
    with pytest.raises(ValueError):
        bootstrap_interval([1.0], level=1.0)
