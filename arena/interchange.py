"""Task interchange: import from ShoppingBench rows and ORO suites, export to them, audited first.

Imports report bad rows (file, line or problem position, reason) and skip them, as catalog and
task loads do. Imported tasks get ORO's difficulty buckets (``arena.difficulty``) unless the
source states one (ORO does). Exports run ``arena.audit.audit`` over every task first and
refuse to write when it finds a leak between pools.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from arena.audit import AuditReport, audit
from arena.catalog import BadRow, numbered_lines
from arena.difficulty import with_difficulty
from arena.errors import InvalidTask
from arena.oro import iter_oro, save_oro
from arena.shoppingbench import intent_from_path, task_from_row, task_to_row
from arena.tasks import TaskLoadReport
from arena.types import Intent, Pool, Task

logger = logging.getLogger(__name__)

Format = Literal["shoppingbench", "oro"]
FORMATS: tuple[Format, ...] = ("shoppingbench", "oro")


def iter_shoppingbench(
    paths: Iterable[Path | str], report: TaskLoadReport | None = None, *, intent: Intent | None = None
) -> Iterator[Task]:
    """Read ShoppingBench task files (intent from each file name unless given); bad rows are reported.

    Raises:
        InvalidTask: a file is missing or unreadable, or its name tells no intent and none is given.
    """
    report = report if report is not None else TaskLoadReport()
    for raw in paths:
        path = Path(raw)
        file_intent = intent or intent_from_path(path)
        for line_no, line in numbered_lines(path, "ShoppingBench task file", InvalidTask):
            report.rows += 1
            try:
                task = task_from_row(json.loads(line), intent=file_intent)
            except (InvalidTask, ValueError) as exc:
                report.reject(BadRow(str(path), line_no, str(exc)))
                continue
            report.tasks += 1
            yield with_difficulty(task)


def import_tasks(
    fmt: Format,
    paths: Sequence[Path | str],
    report: TaskLoadReport | None = None,
    *,
    intent: Intent | None = None,
) -> list[Task]:
    """Import tasks from ShoppingBench or ORO files, dropping repeated tasks (same content, same id).

    Raises:
        InvalidTask: an unknown format, or a file that cannot be read at all.
    """
    report = report if report is not None else TaskLoadReport()
    if fmt == "shoppingbench":
        stream: Iterable[Task] = iter_shoppingbench(paths, report, intent=intent)
    elif fmt == "oro":
        stream = iter_oro(paths, report)
    else:
        raise InvalidTask(f"unknown task format {fmt!r}: expected one of {FORMATS}")
    tasks: dict[str, Task] = {}
    for task in stream:
        if task.task_id in tasks:
            report.duplicates += 1
            logger.warning("import_duplicate_task task=%s", task.task_id)
            continue
        tasks[task.task_id] = task
    return list(tasks.values())


def export_tasks(
    tasks: Sequence[Task], fmt: Format, path: Path | str, *, pools: Iterable[Pool] = ("practice",)
) -> tuple[int, AuditReport]:
    """Audit every task, then write those of ``pools`` in ``fmt``; return the count written and the audit.

    Nothing is written when the audit fails (the count is 0 and ``report.ok`` is False).

    Raises:
        InvalidTask: an unknown format or an unwritable file.
    """
    report = audit(tasks)
    if not report.ok:
        logger.error("export_refused violations=%d", report.violation_count)
        return 0, report
    wanted = set(pools)
    chosen = [t for t in tasks if t.pool in wanted]
    if fmt == "oro":
        return save_oro(chosen, path), report
    if fmt != "shoppingbench":
        raise InvalidTask(f"unknown task format {fmt!r}: expected one of {FORMATS}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for task in chosen:
                handle.write(json.dumps(task_to_row(task), ensure_ascii=False) + "\n")
        tmp.replace(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidTask(f"cannot write {target}: {exc}") from exc
    return len(chosen), report
