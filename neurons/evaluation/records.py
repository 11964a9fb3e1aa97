"""The run directory of `arena eval`: run settings, the tasks, append-only sample and judgment records.

A run directory holds:

- ``run.json``: the settings every sample depends on (its *fingerprint*); a resumed run must match;
- ``tasks.jsonl``: the tasks selected for the latest invocation (our task JSONL);
- ``samples.jsonl``: one line per finished sample: trajectory, tool log, stop reason, timing;
- ``judgments.jsonl``: one line per judged sample (the full Judgment);
- ``results.json`` and ``results.md``: the metrics, rewritten at the end of each invocation.

Sample and judgment lines are appended and flushed one at a time, keyed by ``(task_id, sample)``;
a later line for the same key wins (a re-run errored sample). A process killed mid-write leaves
at most one partial last line, which :func:`repair_tail` cuts off before anything is appended.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.types import ToolLogEntry, Trajectory, Usage
from judging.types import Judgment

logger = logging.getLogger(__name__)

RUN_FILE = "run.json"
TASKS_FILE = "tasks.jsonl"
SAMPLES_FILE = "samples.jsonl"
JUDGMENTS_FILE = "judgments.jsonl"
RESULTS_FILE = "results.json"
TABLE_FILE = "results.md"

Key = tuple[str, int]


class Record(BaseModel):
    """Base of the run records: frozen, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    sample: int = Field(ge=0)

    @property
    def key(self) -> Key:
        """The record's key, ``(task_id, sample)``."""
        return (self.task_id, self.sample)


class SampleRecord(Record):
    """One finished sample: what the agent returned and what the tools logged.

    ``trajectory`` is None when the agent returned nothing usable (it overran the backstop
    timeout or raised); ``end`` then says why, in the validator's vocabulary.
    """

    seed: int | None = None
    episode_id: str
    intent: str
    stop: str
    end: str = "completed"
    error: str | None = None
    elapsed_s: float = Field(ge=0)
    finished_at: datetime | None = None  # None in records of older releases
    usage: Usage | None = None
    tool_calls: int = Field(default=0, ge=0)  # calls the tool log holds (timeouts included)
    trajectory: Trajectory | None = None
    log: tuple[ToolLogEntry, ...] = ()


class SampleSummary(Record):
    """A sample record without trajectory and log: what the metrics need, cheap to hold for many samples."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    intent: str
    stop: str
    end: str = "completed"
    elapsed_s: float = 0.0
    usage: Usage | None = None
    tool_calls: int = 0


class RecordKey(Record):
    """Just a record's key (the rest of the line is skipped), for knowing what is done."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class JudgmentRecord(Record):
    """The judge's verdict on one sample."""

    judgment: Judgment


R = TypeVar("R", bound=Record)


def repair_tail(path: Path) -> int:
    """Cut a partial last line (a write interrupted by a kill) off an append-only file; return bytes cut."""
    if not path.is_file():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return 0
        # Walk back to the last newline; everything after it is the partial line.
        position = size
        while position > 0:
            step = min(65536, position)
            handle.seek(position - step)
            chunk = handle.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                keep = position - step + cut + 1
                break
            position -= step
        else:
            keep = 0
        handle.truncate(keep)
    logger.warning("eval_record_tail_repaired path=%s bytes=%d", path, size - keep)
    return size - keep


def read_records(path: Path, model: type[R]) -> dict[Key, R]:
    """Read an append-only record file; the last record of each key wins, unreadable lines are skipped."""
    records: dict[Key, R] = {}
    if not path.is_file():
        return records
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = model.model_validate_json(line)
            except ValidationError as exc:
                logger.warning("eval_record_unreadable path=%s line=%d error=%.200s", path, line_no, exc)
                continue
            records[record.key] = record
    return records


class RecordWriter:
    """Appends records to one file, one flushed line each; safe to share between threads and tasks."""

    def __init__(self, path: Path) -> None:
        """Open ``path`` for appending, after cutting off a partial last line."""
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(path)
        self._lock = threading.Lock()
        self._handle: IO[str] = path.open("a", encoding="utf-8")

    def append(self, record: Record) -> None:
        """Write one record as one line and flush it to the OS (it survives a kill of this process)."""
        line = record.model_dump_json(by_alias=True) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._handle.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_atomic(path: Path, text: str) -> None:
    """Write a whole file atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_records(path: Path, records: Iterable[Record]) -> int:
    """Replace a record file atomically with ``records`` (used by re-judging); return the count."""
    lines = [r.model_dump_json(by_alias=True) + "\n" for r in records]
    write_atomic(path, "".join(lines))
    return len(lines)


def read_json(path: Path) -> dict[str, Any] | None:
    """Read a JSON object file, or None when it does not exist."""
    if not path.is_file():
        return None
    value = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return value


def write_json(path: Path, value: Any) -> None:
    """Write a JSON value atomically, indented, with a trailing newline."""
    write_atomic(path, json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False) + "\n")


def iter_keys(tasks: Iterable[str], k: int) -> Iterator[Key]:
    """Every ``(task_id, sample)`` key of ``k`` samples per task, task by task."""
    for task_id in tasks:
        for sample in range(k):
            yield (task_id, sample)
