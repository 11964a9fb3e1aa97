"""ORO's problem-suite format (Bittensor subnet 15): a JSON list of problems, in and out.

A problem is a ShoppingBench row (``query``, ``reward``, and ``voucher`` for voucher tasks)
plus ``category`` (``Product``, ``Shop``, ``Voucher``; ``Knowledge`` for web questions, with
``Knowledge_Attribute``), ``difficulty`` (easy, medium, hard) and a display ``title``; other
fields are ignored. Rows convert through ``arena.shoppingbench`` so both formats agree on the
constraints. A problem's own difficulty is kept when valid; otherwise it is computed with
ORO's buckets (``arena.difficulty``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, get_args

from arena.catalog import BadRow, open_text
from arena.difficulty import difficulty
from arena.errors import InvalidTask
from arena.shoppingbench import task_from_row, task_to_row
from arena.tasks import TaskLoadReport
from arena.types import Difficulty, Intent, Task

logger = logging.getLogger(__name__)

SOURCE = "oro"
CATEGORY_INTENTS: dict[str, Intent] = {
    "product": "product",
    "shop": "shop",
    "voucher": "voucher",
    "knowledge": "knowledge",
}
INTENT_CATEGORIES: dict[Intent, str] = {
    "product": "Product",
    "shop": "Shop",
    "voucher": "Voucher",
    "knowledge": "Knowledge",
}
ROW_KEYS = ("query", "reward", "voucher", "Knowledge_Attribute")
DIFFICULTIES: tuple[str, ...] = get_args(Difficulty)


def task_from_problem(problem: Any, *, source: str = SOURCE) -> Task:
    """Convert one ORO problem into a Task.

    Raises:
        InvalidTask: the problem is not an object, has an unknown category, or a bad row.
    """
    if not isinstance(problem, dict):
        raise InvalidTask(f"expected a JSON object, got {type(problem).__name__}")
    category = problem.get("category")
    intent = CATEGORY_INTENTS.get(str(category).casefold()) if isinstance(category, str) else None
    if intent is None:
        raise InvalidTask(f"unknown category {category!r}: expected Product, Shop, Voucher or Knowledge")
    row = {key: problem[key] for key in ROW_KEYS if key in problem}
    task = task_from_row(row, intent=intent, source=source)
    given = problem.get("difficulty")
    level = given if isinstance(given, str) and given in DIFFICULTIES else difficulty(task)
    return task.model_copy(update={"difficulty": level})


def iter_oro(paths: Iterable[Path | str], report: TaskLoadReport | None = None) -> Iterable[Task]:
    """Read ORO suite files; a bad problem is reported (its 1-based position as the line) and skipped.

    Raises:
        InvalidTask: a file is missing, unreadable, not JSON, or not a JSON list.
    """
    report = report if report is not None else TaskLoadReport()
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise InvalidTask(f"ORO suite file not found: {path}")
        try:
            with open_text(path) as handle:
                problems = json.load(handle)
        except (OSError, EOFError, UnicodeDecodeError, ValueError) as exc:
            raise InvalidTask(f"cannot read ORO suite {path}: {exc}") from exc
        if not isinstance(problems, list):
            raise InvalidTask(f"ORO suite {path} is not a JSON list of problems")
        for position, problem in enumerate(problems, start=1):
            report.rows += 1
            try:
                task = task_from_problem(problem)
            except InvalidTask as exc:
                report.reject(BadRow(str(path), position, str(exc)))
                continue
            report.tasks += 1
            yield task


def problem_from_task(task: Task, *, title: str) -> dict[str, Any]:
    """Convert a Task into an ORO problem (ShoppingBench row plus category, difficulty, title)."""
    problem = task_to_row(task)
    problem.update(
        {"category": INTENT_CATEGORIES[task.intent], "difficulty": task.difficulty, "title": title}
    )
    return problem


def save_oro(tasks: Sequence[Task], path: Path | str) -> int:
    """Write tasks as an ORO suite (a JSON list; titles ``Product 1``, ``Shop 1``...); return the count."""
    counters: dict[str, int] = {}
    problems = []
    for task in tasks:
        category = INTENT_CATEGORIES[task.intent]
        counters[category] = counters.get(category, 0) + 1
        problems.append(problem_from_task(task, title=f"{category} {counters[category]}"))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_text(json.dumps(problems, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidTask(f"cannot write ORO suite {target}: {exc}") from exc
    return len(problems)
