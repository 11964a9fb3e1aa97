"""The same work is known by its effect (the hits logged, the answer), and copies share one credit."""

from __future__ import annotations

from typing import Any

import pytest

from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.types import ToolLogEntry, Trajectory
from judging.duplicates import shared_by, work_hash
from judging.scores import ScorePolicy, ScoreSample, standings, weight_vector
from tests.judging.factory import logged_episode

Call = tuple[str, dict[str, Any]]


def episode(index: SearchIndex, calls: list[Call]) -> tuple[Trajectory, list[ToolLogEntry]]:
    """Run calls through the real tools over the fixture catalog; the trajectory and the tool log."""
    return logged_episode(ToolContext(index=index), calls, query="running shoes", task_id="t-1")


def work(index: SearchIndex, calls: list[Call], task_id: str = "t-1") -> str | None:
    trajectory, log = episode(index, calls)
    return work_hash(task_id, trajectory, log)


SEARCH: Call = ("find_product", {"q": "running shoes", "page": 1})
VIEW: Call = ("view_product_information", {"product_ids": "1001"})
ANSWER: Call = ("recommend_product", {"product_ids": "1001"})
PATH = [SEARCH, VIEW, ANSWER]


def test_a_query_changed_but_not_its_hits_is_the_same_work(fixture_index: SearchIndex) -> None:
    # The red team's evasion: " ." appended to a search query (the same hits, the same answer).
    dotted = ("find_product", {"q": "running shoes .", "page": 1})
    _, plain_log = episode(fixture_index, [SEARCH])
    _, dotted_log = episode(fixture_index, [dotted])
    assert plain_log[0].status == dotted_log[0].status == "ok" and plain_log[0].result != "[]"
    assert plain_log[0].arguments != dotted_log[0].arguments and plain_log[0].result == dotted_log[0].result
    assert work(fixture_index, [dotted, VIEW, ANSWER]) == work(fixture_index, PATH) is not None
    assert work(fixture_index, [("find_product", {"q": "Running  SHOES", "page": 1}), VIEW, ANSWER]) == work(
        fixture_index, PATH
    )


def test_order_repeats_and_failed_calls_do_not_make_new_work(fixture_index: SearchIndex) -> None:
    base = work(fixture_index, PATH)
    assert work(fixture_index, [VIEW, SEARCH, ANSWER]) == base
    assert work(fixture_index, [SEARCH, SEARCH, VIEW, VIEW, ANSWER]) == base
    failed = ("view_product_information", {"product_ids": ""})  # an error result: nothing learned
    assert work(fixture_index, [SEARCH, failed, VIEW, ANSWER]) == base
    assert work(fixture_index, [*PATH, ("terminate", {"status": "success"})]) == base


def test_other_hits_another_answer_or_another_task_are_other_work(fixture_index: SearchIndex) -> None:
    base = work(fixture_index, PATH)
    assert work(fixture_index, [("find_product", {"q": "laptop", "page": 1}), VIEW, ANSWER]) != base
    assert work(fixture_index, [*PATH, ("find_product", {"q": "laptop", "page": 1})]) != base  # more learned
    assert work(fixture_index, [SEARCH, VIEW, ("recommend_product", {"product_ids": "1002"})]) != base
    assert work(fixture_index, PATH, task_id="t-2") != base


def test_no_call_is_no_work(fixture_index: SearchIndex) -> None:
    assert work(fixture_index, []) is None


def test_the_effect_is_read_from_the_tool_log_not_from_the_miners_account(fixture_index: SearchIndex) -> None:
    trajectory, log = episode(fixture_index, PATH)
    other, _ = episode(fixture_index, [("find_product", {"q": "laptop", "page": 1}), VIEW, ANSWER])
    # The results the miner reports are not what the work is: the validator's own log is.
    assert work_hash("t-1", other, log) == work_hash("t-1", trajectory, log)


def sample(hotkey: str, task: int, score: float, work: str | None, order: int = 0) -> ScoreSample:
    return ScoreSample(hotkey=hotkey, score=score, order=order or task, task_id=f"t-{task}", work=work)


def history(hotkey: str, works: dict[int, str], score: float = 0.9) -> list[ScoreSample]:
    return [sample(hotkey, task, score, w) for task, w in works.items()]


def own(name: str, tasks: range) -> dict[int, str]:
    return {t: f"w-{name}-{t}" for t in tasks}


def test_copies_share_one_credit() -> None:
    farm = [s for k in ("c1", "c2", "c3") for s in history(k, own("farm", range(10)))]
    assert shared_by(farm, copy_share=0.5) == [3] * len(farm)
    table = standings(farm, ScorePolicy())
    assert all(entry.mean == pytest.approx(0.3) for entry in table.values())


def test_a_copy_farm_earns_no_more_weight_than_one_hotkey() -> None:
    policy = ScorePolicy()
    honest = history("honest", own("honest", range(20)), score=0.6)
    alone = history("solo", own("farm", range(20)))
    farm = [s for k in ("c1", "c2", "c3") for s in history(k, own("farm", range(20)))]
    uids = {"honest": 1, "solo": 2, "c1": 3, "c2": 4, "c3": 5}
    _, solo_weights = weight_vector(standings(honest + alone, policy), uids, owner_uid=0, policy=policy)
    ids, farm_weights = weight_vector(standings(honest + farm, policy), uids, owner_uid=0, policy=policy)
    assert sum(w for uid, w in zip(ids, farm_weights, strict=True) if uid >= 3) < solo_weights[1]


def test_independent_miners_converging_on_the_obvious_tasks_keep_full_credit() -> None:
    # Three of ten tasks have one obvious path both take; on the rest each works its own way.
    a = {**own("a", range(10)), **{t: f"w-obvious-{t}" for t in range(3)}}
    b = {**own("b", range(10)), **{t: f"w-obvious-{t}" for t in range(3)}}
    samples = history("a", a) + history("b", b)
    assert shared_by(samples, copy_share=0.5) == [1] * len(samples)
    table = standings(samples, ScorePolicy())
    assert table["a"].mean == table["b"].mean == pytest.approx(0.9)


def test_a_copy_farm_cannot_dilute_an_independent_miner_on_the_obvious_path() -> None:
    obvious = {t: f"w-obvious-{t}" for t in range(3)}
    honest = history("honest", {**own("honest", range(10)), **obvious})
    farm = [s for k in ("c1", "c2", "c3") for s in history(k, {**own("farm", range(10)), **obvious})]
    table = standings(honest + farm, ScorePolicy())
    assert table["honest"].mean == pytest.approx(0.9)  # independent of every copy: its own credit
    assert all(table[k].mean == pytest.approx(0.3) for k in ("c1", "c2", "c3"))


def test_a_pair_is_linked_by_more_than_the_copy_share_of_the_tasks_both_scored() -> None:
    half = history("a", own("a", range(4))) + history("b", {**own("b", range(4)), 0: "w-a-0", 1: "w-a-1"})
    assert shared_by(half, copy_share=0.5) == [1] * 8  # the same on 2 of 4: not more than half
    assert shared_by(half, copy_share=0.25) == [2, 2, 1, 1, 2, 2, 1, 1]
    copies = history("a", own("a", range(4))) + history("b", own("a", range(4)))
    assert shared_by(copies, copy_share=1.0) == [1] * 8  # 1.0: every converger keeps its own credit
    assert shared_by(copies, copy_share=0.0) == [2] * 8  # 0.0: the same work is always shared


def test_work_that_earns_nothing_claims_no_share() -> None:
    zero = [sample("a", 1, 0.9, "w-1"), sample("b", 1, 0.0, "w-1"), sample("c", 1, 0.5, None)]
    table = standings(zero, ScorePolicy())
    assert table["a"].mean == pytest.approx(0.9) and table["b"].mean == 0.0 and table["c"].mean == 0.5


def test_the_copy_share_is_a_share() -> None:
    with pytest.raises(ValueError, match="copy_share"):
        ScorePolicy(copy_share=1.5)
    assert ScorePolicy().copy_share == 0.5
