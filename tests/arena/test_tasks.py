import gzip
import json
from pathlib import Path

import pytest

from arena.difficulty import difficulty, oro_field_count
from arena.errors import InvalidTask
from arena.tasks import TaskLoadReport, load_tasks, save_tasks, task_line
from arena.types import GoldItem, PriceConstraint, Task, Voucher


def product_task(query: str, pid: str = "p1", **gold: object) -> Task:
    return Task(
        intent="product", query=query, gold=(GoldItem(product_id=pid, titles=(f"title {pid}",), **gold),)
    )


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    tasks = [
        product_task("red shoes", "p1"),
        product_task("blue hat", "p2").model_copy(update={"pool": "practice"}),
    ]
    path = tmp_path / "tasks.jsonl"
    assert save_tasks(tasks, path) == 2
    assert load_tasks(path) == tasks
    assert path.read_text().count("\n") == 2


def test_gzip_files_round_trip(tmp_path: Path) -> None:
    tasks = [product_task("red shoes")]
    path = tmp_path / "tasks.jsonl.gz"
    save_tasks(tasks, path)
    with gzip.open(path, "rt") as handle:
        assert json.loads(handle.readline())["query"] == "red shoes"
    assert load_tasks(path) == tasks


def test_bad_rows_are_reported_and_skipped(tmp_path: Path) -> None:
    good = product_task("red shoes")
    forged = json.loads(task_line(product_task("blue hat", "p2")))
    forged["query"] = "tampered"  # the id no longer matches the content
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        task_line(good) + "{not json\n" + json.dumps(forged) + "\n" + "[1, 2]\n" + task_line(good) + "\n",
        encoding="utf-8",
    )
    report = TaskLoadReport()
    assert load_tasks(path, report) == [good]
    assert (report.rows, report.tasks, report.bad) == (5, 1, 4)
    reasons = [row.reason for row in report.bad_rows]
    assert [row.line for row in report.bad_rows] == [2, 3, 4, 5]
    assert "does not match its content" in reasons[1]
    assert "expected a JSON object" in reasons[2]
    assert "duplicate task_id" in reasons[3]


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidTask, match="not found"):
        load_tasks(tmp_path / "absent.jsonl")


def test_save_is_atomic_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    save_tasks([product_task("red shoes")], path)

    def broken() -> object:
        yield product_task("blue hat")
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        save_tasks(broken(), path)  # type: ignore[arg-type]
    assert [t.query for t in load_tasks(path)] == ["red shoes"]
    assert list(tmp_path.iterdir()) == [path]


def test_product_difficulty_follows_oro_field_counts() -> None:
    price = (PriceConstraint(mode="less than", high=10),)
    easy = product_task("q", price=price, service=("COD",))  # 2 + 2 fields
    medium = product_task("q", price=price, service=("COD", "official"), sku_options=({"size": "l"},))
    hard = product_task(
        "q",
        price=price,
        service=("COD", "official"),
        sku_options=({"size": "l"},),
        attributes=({"a": ("b",)},),
    )
    assert [oro_field_count(t.gold[0]) for t in (easy, medium, hard)] == [4, 6, 7]
    assert [difficulty(t) for t in (easy, medium, hard)] == ["easy", "medium", "hard"]


def test_shop_and_voucher_difficulty() -> None:
    items = tuple(GoldItem(product_id=f"p{i}", titles=("t",)) for i in range(4))
    shop = [Task(intent="shop", query="q", gold=items[:k]) for k in (2, 3, 4)]
    assert [difficulty(t) for t in shop] == ["easy", "medium", "hard"]
    fixed = Voucher(voucher_type="platform", threshold=10, discount_type="fixed", face_value=1)
    pct = Voucher(voucher_type="shop", threshold=10, discount_type="percentage", discount=0.1, cap=5)
    one = Task(intent="voucher", query="q", gold=items[:1], voucher=fixed, budget=100)
    mid = Task(intent="voucher", query="q", gold=items[:2], voucher=pct, budget=100)
    top = Task(intent="voucher", query="q", gold=items[:4], voucher=pct, budget=100)
    assert [difficulty(t) for t in (one, mid, top)] == ["easy", "medium", "hard"]
