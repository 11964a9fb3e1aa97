from __future__ import annotations

import pytest

from arena.types import Trajectory
from judging.format import estimate_tokens
from judging.process import check_process
from judging.types import Check, ProcessStats
from tests.judging.factory import Episode, context, good_shop_episode, good_voucher_episode


def run(traj: Trajectory) -> tuple[Check, ProcessStats]:
    check = check_process(context(traj))
    return check, check.evidence.stats  # type: ignore[union-attr]


def test_verified_model_driven_process() -> None:
    traj = good_shop_episode().trajectory()
    check, stats = run(traj)
    assert stats.verified and stats.views == 1 and stats.searches == 1 and stats.loops == 0
    assert stats.depth == 4 and stats.tool_calls == 4 and stats.tokens == estimate_tokens(traj)
    assert check.value == pytest.approx(1.0)


def test_reformulations_count_changes_of_query_not_pages() -> None:
    traj = good_voucher_episode().trajectory()
    _, stats = run(traj)
    assert stats.searches == 2 and stats.reformulations == 1
    ep = Episode("q")
    ep.step("a", ("find_product", {"q": "Nike shoes"}))
    ep.step("b", ("find_product", {"q": "shoes nike", "page": 2}))  # same words: a page turn
    ep.step("c", ("find_product", {"q": "adidas"}))
    ep.step("d", ("recommend_product", {"product_ids": "1003"}))
    _, stats = run(ep.trajectory())
    assert stats.reformulations == 1


def test_unverified_and_looping_process_scores_low() -> None:
    ep = Episode("q")
    for _ in range(3):
        ep.step("again", ("find_product", {"q": "nike"}))
    ep.step("rec", ("recommend_product", {"product_ids": "1001"}))
    traj = ep.trajectory()
    check, stats = run(traj)
    assert stats.loops == 1 and not stats.verified
    assert check.value == pytest.approx(0.3 + 0.1)  # searched + efficient, no verify, loops


def test_views_after_the_answer_do_not_verify() -> None:
    ep = Episode("q")
    ep.step("rec", ("recommend_product", {"product_ids": "1001"}))
    ep.step("peek", ("view_product_information", {"product_ids": "1001"}))
    traj = ep.trajectory()
    _, stats = run(traj)
    assert not stats.verified


def test_long_trajectories_lose_efficiency() -> None:
    ep = Episode("q")
    for i in range(24):
        ep.step("s", ("find_product", {"q": f"nike {i}"}))
    ep.step("v", ("view_product_information", {"product_ids": "1001"}))
    ep.step("rec", ("recommend_product", {"product_ids": "1001"}))
    traj = ep.trajectory()
    check, stats = run(traj)
    assert stats.depth == 26 and check.evidence.parts["efficiency"] == 0.0
