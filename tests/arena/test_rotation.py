import pytest

from arena.clusters import assign_clusters
from arena.rotation import draw_round, retire, round_key
from arena.types import GoldItem, Task


def corpus(n: int, per_cluster: int = 1) -> list[Task]:
    tasks = [
        Task(
            intent="product",
            query=" ".join(f"w{i}k{k}n{j}" for j in range(6)),
            gold=(GoldItem(product_id=f"p{i}", titles=(f"title {i}",)),),
        )
        for i in range(n)
        for k in range(per_cluster)
    ]
    return assign_clusters(tasks)


def ids(tasks: list[Task]) -> list[str]:
    return [t.task_id for t in tasks]


def test_draw_is_reproducible_for_the_operator() -> None:
    tasks = corpus(200)
    first = draw_round(tasks, secret=b"validator-secret", round_number=7, n=10)
    assert len(first) == 10
    assert ids(draw_round(list(reversed(tasks)), secret=b"validator-secret", round_number=7, n=10)) == ids(
        first
    )


def test_draw_changes_with_round_and_secret() -> None:
    tasks = corpus(200)
    base = set(ids(draw_round(tasks, secret=b"s1", round_number=1, n=10)))
    other_round = set(ids(draw_round(tasks, secret=b"s1", round_number=2, n=10)))
    other_secret = set(ids(draw_round(tasks, secret=b"s2", round_number=1, n=10)))
    # 10 of 200: a chance overlap of more than half would be astronomically unlikely.
    assert len(base & other_round) < 5 and len(base & other_secret) < 5


def test_the_key_depends_on_the_secret_not_only_the_round() -> None:
    assert round_key(b"a", 1) != round_key(b"b", 1)
    assert round_key(b"a", 1) != round_key(b"a", 2)
    with pytest.raises(ValueError):
        round_key(b"", 1)


def test_draw_serves_only_held_out_and_one_task_per_cluster() -> None:
    tasks = corpus(30, per_cluster=3)
    tasks = [t.model_copy(update={"pool": "practice"}) if i % 9 == 0 else t for i, t in enumerate(tasks)]
    tasks = [t.model_copy(update={"pool": "never_touch"}) if i % 9 == 3 else t for i, t in enumerate(tasks)]
    drawn = draw_round(tasks, secret=b"s", round_number=0, n=100)
    assert all(t.pool == "held_out" for t in drawn)
    assert len({t.leak_cluster for t in drawn}) == len(drawn) == 30


def test_retire_burns_whole_clusters_of_served_tasks() -> None:
    tasks = corpus(10, per_cluster=3)
    served = draw_round(tasks, secret=b"s", round_number=3, n=2)
    after = retire(tasks, [t.task_id for t in served] + ["t-unknown"])
    burned = {t.leak_cluster for t in served}
    assert all(t.pool == "retired" for t in after if t.leak_cluster in burned)
    assert sum(t.pool == "retired" for t in after) == 6
    assert not set(ids(served)) & set(ids(draw_round(after, secret=b"s", round_number=4, n=100)))


def test_retire_also_burns_clusters_the_audit_would_link() -> None:
    queries = [
        "Show me red cotton t-shirts with free shipping priced under 200 pesos",
        "Red cotton t-shirt, ships free, under 200, slim fit, crew neck, long sleeves",
    ]
    pair = assign_clusters(
        [
            Task(intent="product", query=q, gold=(GoldItem(product_id=f"q{i}", titles=(f"t{i}",)),))
            for i, q in enumerate(queries)
        ]
    )
    tasks = [*pair, *corpus(5)]
    after = retire(tasks, [pair[0].task_id])
    assert [t.pool for t in after[:2]] == ["retired", "retired"]
    assert all(t.pool == "held_out" for t in after[2:])
