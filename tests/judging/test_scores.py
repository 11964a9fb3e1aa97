import math

import pytest
from pydantic import ValidationError

from judging.scores import ScorePolicy, ScoreSample, standings, weight_vector, wilson_lower_bound


def samples(hotkey: str, values: list[float | None], start: int = 0) -> list[ScoreSample]:
    return [ScoreSample(hotkey=hotkey, score=v, order=start + i) for i, v in enumerate(values)]


def test_wilson_bound_matches_hand_computation() -> None:
    # n=1, p=1, z=1.96: (1 + z^2/2 - z*sqrt(z^2/4)) / (1 + z^2) = 1 / (1 + z^2)
    assert wilson_lower_bound(1.0, 1, 1.96) == pytest.approx(1 / (1 + 1.96**2))
    # n=100, p=0.5, z=1.96: the textbook value 0.4038
    assert wilson_lower_bound(0.5, 100, 1.96) == pytest.approx(0.4038, abs=1e-4)
    assert wilson_lower_bound(0.0, 10, 1.96) == 0.0
    assert wilson_lower_bound(0.7, 0, 1.96) == 0.0


def test_one_lucky_task_does_not_beat_a_steady_miner() -> None:
    policy = ScorePolicy()
    table = standings(samples("lucky", [1.0]) + samples("steady", [0.7] * 30), policy)
    assert table["lucky"].mean > table["steady"].mean
    assert table["lucky"].lower < table["steady"].lower
    uids, weights = weight_vector(table, {"lucky": 1, "steady": 2}, owner_uid=0, policy=policy)
    assert uids == [1, 2]
    assert weights[1] > weights[0]


def test_window_keeps_only_most_recent_scored_samples_and_skips_unscored() -> None:
    policy = ScorePolicy(window=3)
    history = samples("m", [1.0, 1.0, 1.0, 0.0, None, 0.0, 0.0])
    entry = standings(history, policy)["m"]
    assert entry.n == 3
    assert entry.mean == 0.0  # the three most recent scored samples are 0, 0, 0


def test_order_not_arrival_decides_the_window() -> None:
    policy = ScorePolicy(window=1)
    shuffled = [
        ScoreSample("m", 0.2, order=5),
        ScoreSample("m", 0.9, order=9),
        ScoreSample("m", 0.1, order=1),
    ]
    assert standings(shuffled, policy)["m"].mean == 0.9


def test_weights_are_finite_normalised_and_burn_goes_to_owner() -> None:
    policy = ScorePolicy(burn_share=0.25)
    table = standings(samples("a", [0.9] * 20) + samples("b", [0.3] * 20), policy)
    uids, weights = weight_vector(table, {"a": 3, "b": 5, "owner": 0}, owner_uid=0, policy=policy)
    assert uids == [0, 3, 5]
    assert all(math.isfinite(w) and w >= 0 for w in weights)
    assert sum(weights) == pytest.approx(1.0)
    assert weights[0] == pytest.approx(0.25)
    assert weights[1] > weights[2] > 0


def test_unregistered_hotkeys_drop_out_and_uids_are_looked_up_at_submission() -> None:
    policy = ScorePolicy()
    table = standings(samples("old", [0.9] * 10) + samples("new", [0.4] * 10), policy)
    # "old" deregistered; its former uid 7 now belongs to "new": "new" gets only its own score.
    uids, weights = weight_vector(table, {"new": 7}, owner_uid=0, policy=policy)
    assert uids == [7] and weights == [pytest.approx(1.0)]


def test_nothing_positive_burns_everything() -> None:
    policy = ScorePolicy()
    table = standings(samples("a", [0.0] * 5) + samples("b", [float("nan")]), policy)
    assert weight_vector(table, {"a": 1, "b": 2}, owner_uid=4, policy=policy) == ([4], [1.0])
    assert weight_vector({}, {}, owner_uid=4, policy=policy) == ([4], [1.0])


def test_same_inputs_same_vector() -> None:
    policy = ScorePolicy(power=2.0, burn_share=0.1)
    data = samples("x", [0.5, 0.8, 0.9]) + samples("y", [0.6] * 4) + samples("z", [0.2] * 9)
    mapping = {"x": 9, "y": 2, "z": 4}
    first = weight_vector(standings(data, policy), mapping, owner_uid=0, policy=policy)
    second = weight_vector(standings(list(reversed(data)), policy), mapping, owner_uid=0, policy=policy)
    assert first == second


@pytest.mark.parametrize(
    "kwargs", [{"window": 0}, {"burn_share": 1.5}, {"power": 0}, {"z": float("inf")}, {"min_samples": 0}]
)
def test_meaningless_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        ScorePolicy(**kwargs)


def test_min_samples_zeroes_the_bound_below_threshold() -> None:
    policy = ScorePolicy(min_samples=5)
    table = standings(samples("few", [1.0] * 4) + samples("enough", [0.5] * 5), policy)
    assert table["few"].lower == 0.0
    assert table["enough"].lower > 0.0


def test_unattested_factor_rewards_attested_episodes_and_is_off_by_default() -> None:
    attested = [ScoreSample(hotkey="a", score=0.8, order=i, attested=True) for i in range(10)]
    plain = [ScoreSample(hotkey="p", score=0.8, order=i) for i in range(10)]
    default = standings(attested + plain, ScorePolicy())
    assert default["a"].mean == default["p"].mean == pytest.approx(0.8)
    rewarded = standings(attested + plain, ScorePolicy(unattested_factor=0.5))
    assert rewarded["a"].mean == pytest.approx(0.8) and rewarded["p"].mean == pytest.approx(0.4)
    with pytest.raises(ValidationError):
        ScorePolicy(unattested_factor=1.5)
