import pytest

from arena.audit import audit
from arena.clusters import assign_clusters
from arena.errors import InvalidTask
from arena.pools import assign_pools, clusters_of, merged_pool, move_clusters, pool_groups, reconcile_pools
from arena.types import GoldItem, Task


def words(seed: int) -> str:
    # Distinct vocabulary per task, so only the shared gold product links tasks.
    return " ".join(f"w{seed}n{j}" for j in range(6))


def corpus(n_clusters: int, size: int) -> list[Task]:
    tasks = [
        Task(
            intent="product",
            query=words(c * 1000 + k),
            gold=(GoldItem(product_id=f"p{c}", titles=(f"title {c} {k}",)),),
        )
        for c in range(n_clusters)
        for k in range(size)
    ]
    return assign_clusters(tasks)


def test_move_takes_the_whole_cluster() -> None:
    tasks = corpus(3, 4)
    cluster = tasks[0].leak_cluster
    assert cluster is not None
    moved = move_clusters(tasks, [cluster], "practice")
    assert [t.pool for t in moved if t.leak_cluster == cluster] == ["practice"] * 4
    assert all(t.pool == "held_out" for t in moved if t.leak_cluster != cluster)
    assert [t.task_id for t in moved] == [t.task_id for t in tasks]


def test_moves_only_go_one_way() -> None:
    tasks = corpus(2, 2)
    cluster = tasks[0].leak_cluster
    assert cluster is not None
    retired = move_clusters(tasks, [cluster], "retired")
    with pytest.raises(InvalidTask, match="not allowed"):
        move_clusters(retired, [cluster], "held_out")
    practice = move_clusters(tasks, [cluster], "practice")
    with pytest.raises(InvalidTask, match="not allowed"):
        move_clusters(practice, [cluster], "never_touch")
    with pytest.raises(InvalidTask, match="unknown leak cluster"):
        move_clusters(tasks, ["lc-nope"], "retired")


def test_assign_pools_takes_whole_clusters_to_the_shares() -> None:
    tasks = corpus(50, 2)
    out = assign_pools(tasks, practice=0.1, never_touch=0.2, seed="s")
    counts = {p: sum(1 for t in out if t.pool == p) for p in ("practice", "never_touch", "held_out")}
    assert counts == {"practice": 10, "never_touch": 20, "held_out": 70}
    for members in clusters_of(out).values():
        assert len({out[i].pool for i in members}) == 1
    assert assign_pools(tasks, practice=0.1, never_touch=0.2, seed="s") == out
    assert assign_pools(tasks, practice=0.1, never_touch=0.2, seed="other") != out


def test_assign_pools_keeps_existing_pools_and_rejects_bad_shares() -> None:
    tasks = assign_pools(corpus(20, 1), practice=0.25, seed="a")
    again = assign_pools(tasks, practice=0.25, seed="b")
    assert [t.pool for t in again] == [t.pool for t in tasks]
    with pytest.raises(InvalidTask):
        assign_pools(tasks, practice=0.7, never_touch=0.5)


def test_merged_pool_is_the_safest() -> None:
    assert merged_pool(["held_out", "held_out"]) == "held_out"
    assert merged_pool(["held_out", "practice"]) == "retired"
    assert merged_pool(["never_touch", "retired"]) == "retired"
    assert merged_pool(["never_touch", "held_out"]) == "never_touch"
    assert merged_pool(["practice", "practice"]) == "practice"


def test_reconcile_puts_mixed_clusters_in_one_pool() -> None:
    tasks = corpus(2, 3)
    mixed = [tasks[0].model_copy(update={"pool": "practice"}), *tasks[1:]]
    out, moved = reconcile_pools(mixed)
    assert moved == {tasks[0].leak_cluster: "retired"}
    assert [t.pool for t in out[:3]] == ["retired"] * 3
    assert [t.pool for t in out[3:]] == ["held_out"] * 3


def near_pair() -> list[Task]:
    # Jaccard about 0.43: separate leak clusters (link at 0.5), but the audit (0.4) would flag a split.
    queries = [
        "Show me red cotton t-shirts with free shipping priced under 200 pesos",
        "Red cotton t-shirt, ships free, under 200, slim fit, crew neck, long sleeves",
    ]
    tasks = [
        Task(intent="product", query=q, gold=(GoldItem(product_id=f"q{i}", titles=(f"t{i}",)),))
        for i, q in enumerate(queries)
    ]
    return assign_clusters(tasks)


def test_pool_groups_join_clusters_the_audit_would_link() -> None:
    pair = near_pair()
    assert pair[0].leak_cluster != pair[1].leak_cluster
    assert sorted(len(m) for m in pool_groups(pair).values()) == [2]
    for seed in ("a", "b", "c", "d"):
        assigned = assign_pools([*pair, *corpus(6, 1)], practice=0.25, seed=seed)
        assert assigned[0].pool == assigned[1].pool
        assert audit(assigned).ok


def test_pool_groups_join_clusters_that_share_a_gold_product() -> None:
    # Two clusters the clusterer kept apart (a world task is clustered on its skeleton, which
    # differs between two requests for one product), but the audit's gold rule links them.
    a, b = (
        Task(intent="product", query=words(seed), gold=(GoldItem(product_id="p-shared", titles=("t",)),))
        for seed in (1, 2)
    )
    pair = [a.model_copy(update={"leak_cluster": "lc-a"}), b.model_copy(update={"leak_cluster": "lc-b"})]
    assert sorted(len(m) for m in pool_groups(pair).values()) == [2]
    split = [
        pair[0].model_copy(update={"pool": "practice"}),
        pair[1].model_copy(update={"pool": "never_touch"}),
    ]
    assert not audit(split).ok  # what the grouping prevents
