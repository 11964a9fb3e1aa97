import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from arena.clusters import assign_clusters
from arena.difficulty import difficulty
from arena.errors import InvalidTask
from arena.interchange import export_tasks, import_tasks
from arena.oro import iter_oro, problem_from_task, save_oro
from arena.shoppingbench import task_to_row
from arena.tasks import TaskLoadReport, load_tasks, save_tasks
from arena.types import Task


def raw_rows(files: list[Path]) -> list[dict[str, Any]]:
    # split("\n"), not splitlines(): some queries hold U+2028 and friends inside JSON strings.
    return [
        json.loads(line) for path in files for line in path.read_text(encoding="utf-8").split("\n") if line
    ]


def raw_constraints(row: dict[str, Any]) -> Counter[str]:
    """Every constraint of a ShoppingBench row, as comparable strings (what must survive an import)."""
    out: Counter[str] = Counter()
    reward = row["reward"]
    items = reward if isinstance(reward, list) else [reward]
    for position, item in enumerate(items):
        out[f"{position} id {item['product_id']}"] += 1
        titles = item["title"] if isinstance(item["title"], list) else [item["title"]]
        out.update(f"{position} title {t}" for t in titles)
        if "Knowledge_Attribute" in row:
            continue  # the reward is the whole product record: its fields are not constraints
        out.update(f"{position} service {s}" for s in item.get("service") or [])
        out.update(f"{position} sku {json.dumps(o, sort_keys=True)}" for o in item.get("sku_options") or [])
        out.update(f"{position} attr {json.dumps(a, sort_keys=True)}" for a in item.get("attributes") or [])
        for price in item.get("price") or []:
            out.update(
                f"{position} price {mode} {float(lo or 0)} {float(hi or 0)}"
                for mode, (lo, hi) in price.items()
            )
    if "voucher" in row:
        out.update(f"voucher {k} {v}" for k, v in row["voucher"].items() if k != "price_after_voucher")
    if "Knowledge_Attribute" in row:
        out[f"knowledge {row['Knowledge_Attribute']}"] += 1
    return out


def task_constraints(task: Task) -> Counter[str]:
    out: Counter[str] = Counter()
    for position, item in enumerate(task.gold):
        out[f"{position} id {item.product_id}"] += 1
        out.update(f"{position} title {t}" for t in item.titles)
        out.update(f"{position} service {s}" for s in item.service)
        out.update(f"{position} sku {json.dumps(o, sort_keys=True)}" for o in item.sku_options)
        out.update(
            f"{position} attr {json.dumps({k: list(v) for k, v in a.items()}, sort_keys=True)}"
            for a in item.attributes
        )
        out.update(f"{position} price {p.mode} {float(p.low or 0)} {float(p.high or 0)}" for p in item.price)
    if task.voucher is not None:
        fields = task.voucher.model_dump(exclude={"price_after_voucher"})
        fields["budget"] = task.budget
        out.update(f"voucher {k} {v}" for k, v in fields.items())
    if task.knowledge_attribute is not None:
        out[f"knowledge {task.knowledge_attribute}"] += 1
    return out


def numbers_equal(a: Counter[str], b: Counter[str]) -> bool:
    # 170 and 170.0 are the same bound.
    def norm(c: Counter[str]) -> Counter[str]:
        return Counter(
            " ".join(w[:-2] if w.endswith(".0") else w for w in k.split(" ")) for k in c.elements()
        )

    return norm(a) == norm(b)


def test_all_900_shoppingbench_tasks_import_without_losing_a_constraint(
    shoppingbench_files: list[Path],
) -> None:
    report = TaskLoadReport()
    tasks = import_tasks("shoppingbench", shoppingbench_files, report)
    rows = raw_rows(shoppingbench_files)
    assert (report.rows, report.tasks, report.bad, report.duplicates, len(tasks)) == (900, 900, 0, 0, 900)
    assert Counter(t.intent for t in tasks) == {"product": 250, "shop": 250, "voucher": 250, "knowledge": 150}
    for row, task in zip(rows, tasks, strict=True):
        assert task.query == row["query"]
        assert numbers_equal(raw_constraints(row), task_constraints(task)), row["query"]
        assert (
            task_to_row(task) == row
            or task.intent == "knowledge"
            or numbers_equal(raw_constraints(task_to_row(task)), raw_constraints(row))
        )
        assert task.difficulty == difficulty(task)


def test_import_survives_our_file_format(shoppingbench_files: list[Path], tmp_path: Path) -> None:
    tasks = assign_clusters(import_tasks("shoppingbench", shoppingbench_files))
    save_tasks(tasks, tmp_path / "t.jsonl")
    assert load_tasks(tmp_path / "t.jsonl") == tasks


def test_oro_suite_round_trip(shoppingbench_files: list[Path], tmp_path: Path) -> None:
    tasks = import_tasks("shoppingbench", shoppingbench_files)
    practice = [t.model_copy(update={"pool": "practice"}) for t in tasks]
    suite = tmp_path / "suite.json"
    assert save_oro(practice, suite) == 900
    problems = json.loads(suite.read_text(encoding="utf-8"))
    assert {p["category"] for p in problems} == {"Product", "Shop", "Voucher", "Knowledge"}
    assert problems[0]["title"] == "Product 1"
    back = import_tasks("oro", [suite])
    assert [t.task_id for t in back] == [t.task_id for t in tasks]
    assert [t.difficulty for t in back] == [t.difficulty for t in tasks]
    assert all(t.source == "oro" for t in back)


def test_oro_keeps_given_difficulty_ignores_extra_fields_and_reports_bad_problems(tmp_path: Path) -> None:
    good = {
        "query": "Show me headlight covers where the cost is above 85 PHP.",
        "reward": {
            "product_id": "3552553721",
            "title": ["Headlight Cover"],
            "price": [{"greater than": [85, None]}],
        },
        "category": "Product",
        "difficulty": "hard",
        "title": "Product 3",
        "anything_else": {"ignored": True},
    }
    bad_category = {**good, "category": "Groceries"}
    bad_row = {**good, "reward": {"title": ["no id"]}}
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps([good, bad_category, bad_row, "not an object"]), encoding="utf-8")
    report = TaskLoadReport()
    tasks = list(iter_oro([suite], report))
    assert len(tasks) == 1 and tasks[0].difficulty == "hard" and tasks[0].gold[0].price[0].low == 85
    assert [row.line for row in report.bad_rows] == [2, 3, 4]
    assert problem_from_task(tasks[0], title="Product 1")["reward"] == good["reward"]


def test_oro_file_that_is_not_a_list_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('{"query": "x"}', encoding="utf-8")
    with pytest.raises(InvalidTask, match="not a JSON list"):
        import_tasks("oro", [path])


def test_export_writes_only_requested_pools_and_refuses_leaks(
    shoppingbench_files: list[Path], tmp_path: Path
) -> None:
    tasks = assign_clusters(import_tasks("shoppingbench", shoppingbench_files[:1]))
    tasks = [t.model_copy(update={"pool": "practice"}) if i < 50 else t for i, t in enumerate(tasks)]
    count, report = export_tasks(tasks, "shoppingbench", tmp_path / "out.jsonl")
    assert report.ok and count == 50
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 50
    leak = tasks[60].model_copy(update={"pool": "practice"})  # its twin stays held_out
    count, report = export_tasks([*tasks, leak], "oro", tmp_path / "leak.json")
    assert not report.ok and count == 0 and not (tmp_path / "leak.json").exists()


def test_a_missing_shoppingbench_file_is_our_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidTask, match="ShoppingBench task file not found"):
        import_tasks("shoppingbench", [tmp_path / "synthesize_product_test.jsonl"])
