import gzip
import json
from pathlib import Path

import pytest

from arena.errors import InvalidTask
from arena.shoppingbench import (
    difficulty,
    intent_from_path,
    load_shoppingbench,
    task_from_row,
    task_load,
    task_to_row,
)
from arena.types import Task


def _rows(path: Path) -> list[dict]:
    # split("\n"), not splitlines(): descriptions contain U+2028 and friends inside strings.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def test_all_900_tasks_load_and_round_trip_without_loss(shoppingbench_files: list[Path]) -> None:
    tasks = load_shoppingbench(shoppingbench_files)
    rows = [row for path in shoppingbench_files for row in _rows(path)]
    assert len(tasks) == len(rows) == 900
    assert len({t.task_id for t in tasks}) == 900
    for task, row in zip(tasks, rows, strict=True):
        back = task_to_row(task)
        # Parsed-JSON equality: numbers compare by value (419 == 419.0), types otherwise exact.
        assert back == row, task.query
        assert json.loads(json.dumps(back)) == row
        assert type(back.get("Knowledge_Attribute")) is type(row.get("Knowledge_Attribute"))
        # The Task itself survives its own JSON round trip with the same id.
        assert Task.model_validate_json(task.model_dump_json()) == task


def test_intents_follow_file_names(shoppingbench_files: list[Path]) -> None:
    counts: dict[str, int] = {}
    for task in load_shoppingbench(shoppingbench_files):
        counts[task.intent] = counts.get(task.intent, 0) + 1
        assert task.source == "shoppingbench"
    assert counts == {"product": 250, "shop": 250, "voucher": 250, "knowledge": 150}
    assert intent_from_path("x/synthesize_web_simpleqa_train.jsonl.gz") == "knowledge"
    with pytest.raises(InvalidTask, match="intent"):
        intent_from_path("tasks.jsonl")


def test_price_modes_map_to_constraints() -> None:
    row = {
        "query": "q",
        "reward": {
            "product_id": "7",
            "title": ["T"],
            "price": [{"greater than": [375, None]}, {"between": [10, 20.5]}, {"less than": [None, 9]}],
        },
    }
    task = task_from_row(row, intent="product")
    modes = [(p.mode, p.low, p.high) for p in task.gold[0].price]
    assert modes == [("greater than", 375, None), ("between", 10, 20.5), ("less than", None, 9)]
    assert task.gold[0].price[1].contains(20.5) and not task.gold[0].price[1].contains(20.51)
    assert task_to_row(task) == row


def test_voucher_fields_and_budget_survive() -> None:
    voucher = {
        "voucher_type": "shop",
        "threshold": 149,
        "discount_type": "percentage",
        "face_value": None,
        "discount": 0.35,
        "cap": 134,
        "price_after_voucher": 281.0,
        "budget": 295,
    }
    row = {"query": "q", "reward": [{"product_id": "1", "title": ["A"]}], "voucher": voucher}
    task = task_from_row(row, intent="voucher")
    assert task.budget == 295 and task.voucher is not None
    assert task.voucher.price_after(415.0, 1) == 281.0
    assert task_to_row(task)["voucher"] == voucher


def test_knowledge_record_is_kept_whole(shoppingbench_dir: Path) -> None:
    path = shoppingbench_dir / "synthesize_web_simpleqa_test.jsonl"
    row = _rows(path)[0]
    task = task_from_row(row, intent="knowledge")
    gold = task.gold[0]
    assert gold.product is not None
    assert gold.product.product_id == gold.product_id == row["reward"]["product_id"]
    assert gold.titles == (row["reward"]["title"],)
    assert gold.product.price == row["reward"]["price"]


def test_numeric_knowledge_attribute_keeps_its_type() -> None:
    record = {"product_id": "5", "shop_id": "9", "title": "Book", "price": 1.0, "sold_count": 0}
    row = {"query": "q", "Knowledge_Attribute": 1995, "reward": record}
    task = task_from_row(row, intent="knowledge")
    assert task.knowledge_attribute == "1995"
    assert task_to_row(task)["Knowledge_Attribute"] == 1995
    string_task = task_from_row({**row, "Knowledge_Attribute": "1995"}, intent="knowledge")
    assert task_to_row(string_task)["Knowledge_Attribute"] == "1995"


def test_task_ids_without_reference_product_are_unchanged() -> None:
    task = task_from_row({"query": "q", "reward": {"product_id": "1", "title": ["A"]}}, intent="product")
    assert "product" not in task.definition()["gold"][0]


@pytest.mark.parametrize(
    ("row", "intent", "match"),
    [
        ({"query": "q", "reward": [{"product_id": "1", "title": ["A"]}]}, "product", "one item"),
        ({"query": "q", "reward": []}, "shop", "non-empty list"),
        ({"query": "q", "reward": {"product_id": "1", "title": ["A"], "colour": []}}, "product", "colour"),
        ({"query": "q", "reward": [{"product_id": "1", "title": ["A"]}]}, "voucher", "voucher"),
        (
            {"query": "q", "reward": {"product_id": "1", "title": ["A"], "price": [{"about": [1, 2]}]}},
            "product",
            "mode",
        ),
        ({"query": "q", "reward": {"product_id": "1"}}, "product", "title"),
    ],
)
def test_bad_rows_are_invalid_tasks(row: dict, intent: str, match: str) -> None:
    with pytest.raises(InvalidTask, match=match):
        task_from_row(row, intent=intent)  # type: ignore[arg-type]


def test_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "synthesize_product_test.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"query": "q", "reward": {"product_id": "1", "title": ["A"]}}) + "\n\n{oops\n"
        )
    with pytest.raises(InvalidTask, match=r"synthesize_product_test.jsonl.gz:3:"):
        load_shoppingbench([path])


def test_difficulty_buckets_by_load() -> None:
    def product(**extra: object) -> Task:
        return task_from_row(
            {"query": "q", "reward": {"product_id": "1", "title": ["A"], **extra}}, intent="product"
        )

    easy = product(service=["COD"])
    medium = product(service=["COD", "official"], attributes=[{"a": ["x"]}, {"b": ["y"]}])
    items = [{"product_id": str(i), "title": ["A"], "attributes": [{"a": ["x"]}]} for i in range(4)]
    hard = task_from_row({"query": "q", "reward": items}, intent="shop")
    assert (task_load(easy), task_load(medium), task_load(hard)) == (1, 4, 10)
    assert [difficulty(t) for t in (easy, medium, hard)] == ["easy", "medium", "hard"]
    assert easy.difficulty == "easy" and hard.difficulty == "hard"
