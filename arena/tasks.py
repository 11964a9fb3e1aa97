"""Task files: our JSONL format (one ``Task`` per line), loaded with bad-row reports and saved atomically.

A line is the JSON of ``Task.model_dump(mode="json")``. A bad line (invalid JSON, failed
validation, a ``task_id`` that does not match the content, a repeated ``task_id``) is reported
with file, line and reason, counted and skipped, as catalog rows are; a missing or unreadable
file is an ``InvalidTask`` error. ``.gz`` files are read and written compressed.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from arena.catalog import BadRow, BadRowLog, numbered_lines
from arena.errors import InvalidTask
from arena.types import Task, validate_row

logger = logging.getLogger(__name__)


@dataclass
class TaskLoadReport(BadRowLog):
    """Totals of a load: rows read, tasks accepted, bad rows (the first N kept), duplicates dropped."""

    rows: int = 0
    tasks: int = 0
    duplicates: int = 0
    event = "task_bad_row"


def task_line(task: Task) -> str:
    """Serialise one task as a JSONL line (stable bytes for the same task)."""
    return json.dumps(task.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n"


def parse_task(row: object) -> Task:
    """Validate one decoded JSON row as a Task.

    Raises:
        ValueError: the row is not an object or fails validation (the message says where and why).
    """
    return validate_row(Task, row)


def iter_tasks(paths: Iterable[Path | str], report: TaskLoadReport | None = None) -> Iterator[Task]:
    """Stream tasks from task files, skipping (and reporting) bad rows and repeated task ids.

    Raises:
        InvalidTask: a file is missing or unreadable.
    """
    report = report if report is not None else TaskLoadReport()
    seen: set[str] = set()
    for raw_path in paths:
        path = Path(raw_path)
        for line_no, line in numbered_lines(path, "task file", InvalidTask):
            report.rows += 1
            try:
                task = parse_task(json.loads(line))
            except ValueError as exc:
                report.reject(BadRow(str(path), line_no, str(exc)))
                continue
            if task.task_id in seen:
                report.reject(BadRow(str(path), line_no, f"duplicate task_id {task.task_id}"))
                continue
            seen.add(task.task_id)
            report.tasks += 1
            yield task


def load_tasks(path: Path | str, report: TaskLoadReport | None = None) -> list[Task]:
    """Load every valid task of one JSONL task file (bad rows are reported in ``report`` and skipped).

    Raises:
        InvalidTask: the file is missing or unreadable.
    """
    return list(iter_tasks([path], report))


def _open_write(path: Path, tmp: str) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(tmp, "wt", encoding="utf-8")
    return open(tmp, "w", encoding="utf-8")


def save_tasks(tasks: Iterable[Task], path: Path | str) -> int:
    """Write tasks to a JSONL file atomically (a temporary file renamed into place); return the count.

    Raises:
        InvalidTask: the file cannot be written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    count = 0
    try:
        with _open_write(target, tmp) as handle:
            for task in tasks:
                handle.write(task_line(task))
                count += 1
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InvalidTask(f"cannot write task file {target}: {exc}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count
