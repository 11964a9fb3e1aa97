"""The curation scratch store: a temporary SQLite file holding one compact row per surviving trace.

Curation reads the judged traces once; what later stages need (the canonical record, the
dedup keys, the rank, the split inputs) goes here, on disk, so memory stays bounded however
many traces are stored. The file is deleted when the workspace closes.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE traces (
    seq INTEGER PRIMARY KEY,
    episode_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    cluster TEXT NOT NULL,
    miner TEXT NOT NULL,
    stream TEXT NOT NULL,
    success INTEGER NOT NULL,
    label INTEGER NOT NULL,
    grounded INTEGER NOT NULL,
    score REAL NOT NULL,
    structural REAL NOT NULL,
    exact TEXT NOT NULL,
    steps TEXT NOT NULL,
    answer TEXT NOT NULL,
    judgment_hash TEXT NOT NULL,
    versions TEXT NOT NULL,
    record TEXT NOT NULL,
    origin TEXT NOT NULL,
    source_hash TEXT,
    converter_version TEXT,
    writer TEXT,
    world_id TEXT,
    pack_hash TEXT,
    pending INTEGER NOT NULL
);
CREATE TABLE converted AS SELECT * FROM traces WHERE 0;
CREATE INDEX traces_task ON traces (task_id);
CREATE INDEX traces_rank
    ON traces (stream, cluster, success DESC, origin DESC, structural DESC, score DESC, episode_id);
CREATE TABLE decisions (seq INTEGER PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE observed (
    seq INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    miner TEXT NOT NULL,
    score REAL NOT NULL,
    success INTEGER NOT NULL,
    turn_rewards TEXT NOT NULL
);
CREATE INDEX observed_task ON observed (task_id, seq);
"""
KEPT = "kept"
# Rank order within a group: successes first, then native before converted ("native" > "converted":
# dedup and the caps meet natives first, so a converted trace never displaces a native one of its
# task), then the structural score, the judge's score, the id.
RANK_ORDER = "success DESC, origin DESC, structural DESC, score DESC, episode_id"


@dataclass(frozen=True)
class Row:
    """One surviving trace as the workspace holds it: what dedup, ranking, split and export need.

    ``record`` is the canonical chat document (``{"messages", "prompt_length", "toolset"}``) as
    JSON text, encoded once when the trace is added and decoded once per read row (``document``),
    only by the stages that write it out. The table's columns are this class's fields, in order.
    Then come the export's provenance columns (``curation.conversion.results.Provenance``):
    ``origin`` ``native`` or ``converted``, and for a converted trace its source's content hash,
    the converter version and the writer; then the world the trace ran on (null: a static task).
    ``pending``: a trace to convert, held as its source until dedup reaches it (``curation.stages.dedup``:
    it ranks as a converted trace, and its row is replaced by the converted one, or dropped).
    """

    seq: int
    episode_id: str
    task_id: str
    cluster: str
    miner: str
    stream: str
    success: bool
    label: bool
    grounded: bool
    score: float
    structural: float
    exact: str
    steps: frozenset[str]
    answer: tuple[str, ...]
    judgment_hash: str
    versions: dict[str, str | None]
    record: str
    origin: str = "native"
    source_hash: str | None = None
    converter_version: str | None = None
    writer: str | None = None
    world_id: str | None = None
    pack_hash: str | None = None
    pending: bool = False

    @property
    def world(self) -> dict[str, str | None]:
        """The export's world columns."""
        return {"world_id": self.world_id, "pack_hash": self.pack_hash}

    @property
    def provenance(self) -> dict[str, str | None]:
        """The export's provenance columns."""
        return {
            "origin": self.origin,
            "source_hash": self.source_hash,
            "converter_version": self.converter_version,
            "writer": self.writer,
        }

    @cached_property
    def document(self) -> dict[str, Any]:
        """The canonical chat record (messages, prompt_length, toolset), decoded on first use."""
        value: dict[str, Any] = json.loads(self.record)
        return value


@dataclass(frozen=True)
class Observed:
    """One judged episode of a task as the GRPO rows report it (every stored episode, timeouts too)."""

    seq: int
    task_id: str
    episode_id: str
    miner: str
    score: float
    success: bool
    turn_rewards: tuple[float, ...]  # per logged tool call (``curation.rewards.turn_rewards``)


TRACE_COLUMNS = tuple(f.name for f in fields(Row))
_COLUMNS = ",".join(f"traces.{c}" for c in TRACE_COLUMNS)


def _encode(row: Row) -> tuple[Any, ...]:
    """A row's values in ``TRACE_COLUMNS`` order (steps, answer and versions as JSON text)."""
    as_text = {
        "steps": json.dumps(sorted(row.steps)),
        "answer": json.dumps(list(row.answer)),
        "versions": json.dumps(row.versions),
    }
    return tuple(as_text[name] if name in as_text else getattr(row, name) for name in TRACE_COLUMNS)


def _decode(values: Sequence[Any]) -> Row:
    data = dict(zip(TRACE_COLUMNS, values, strict=True))
    for name in ("success", "label", "grounded", "pending"):
        data[name] = bool(data[name])
    data["steps"] = frozenset(json.loads(data["steps"]))
    data["answer"] = tuple(json.loads(data["answer"]))
    data["versions"] = json.loads(data["versions"])
    return Row(**data)


class Workspace:
    """A temporary SQLite database for one curation run; use as a context manager."""

    def __init__(self, directory: Path | None = None) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="arena-curate-", dir=directory))
        self.path = self._dir / "workspace.db"
        self._db = sqlite3.connect(self.path)
        # Scratch data: a crash loses the run, never stored data, so skip the journal and fsync.
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000;")
        self._db.executescript(_SCHEMA)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection and delete the file."""
        self._db.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def add_traces(self, rows: Sequence[Row]) -> None:
        """Insert surviving traces."""
        marks = ",".join("?" * len(TRACE_COLUMNS))
        self._db.executemany(f"INSERT INTO traces VALUES ({marks})", [_encode(row) for row in rows])

    def add_observed(self, episodes: Sequence[Observed]) -> None:
        """Record judged episodes for the GRPO rows' observed rewards."""
        self._db.executemany(
            "INSERT INTO observed VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    o.seq,
                    o.task_id,
                    o.episode_id,
                    o.miner,
                    o.score,
                    o.success,
                    json.dumps(list(o.turn_rewards)),
                )
                for o in episodes
            ],
        )

    def convert(self, rows: Sequence[Row]) -> None:
        """Hold converted rows that replace their pending sources (``apply_conversions``, after the walk)."""
        marks = ",".join("?" * len(TRACE_COLUMNS))
        self._db.executemany(f"INSERT INTO converted VALUES ({marks})", [_encode(row) for row in rows])

    def apply_conversions(self) -> None:
        """Replace each pending row by its converted row (not during ``ranked``: that would reorder it)."""
        self._db.execute("DELETE FROM traces WHERE seq IN (SELECT seq FROM converted)")
        self._db.execute("INSERT INTO traces SELECT * FROM converted")
        self._db.execute("DELETE FROM converted")

    def decide(self, decisions: Sequence[tuple[int, str]]) -> None:
        """Record dedup decisions: (seq, "kept" or the drop reason)."""
        self._db.executemany("INSERT OR REPLACE INTO decisions VALUES (?, ?)", decisions)

    def commit(self) -> None:
        """Commit what was added (one page at a time keeps the write buffer small)."""
        self._db.commit()

    def ranked(self, stream: str) -> Iterator[Row]:
        """Yield a stream's traces grouped by cluster, best-ranked first within each cluster."""
        cursor = self._db.execute(
            f"SELECT {','.join(TRACE_COLUMNS)} FROM traces WHERE stream = ? ORDER BY cluster, {RANK_ORDER}",
            (stream,),
        )
        for values in cursor:
            yield _decode(values)

    def kept(self, stream: str, *, order: str = "seq") -> Iterator[Row]:
        """Yield a stream's traces that survive dedup (for the aside streams: all), in ``order``."""
        join = (
            "JOIN decisions USING (seq) WHERE decisions.state = 'kept' AND" if stream == "main" else "WHERE"
        )
        cursor = self._db.execute(
            f"SELECT {_COLUMNS} FROM traces {join} stream = ? ORDER BY {order}", (stream,)
        )
        for values in cursor:
            yield _decode(values)

    def best(self, task_id: str) -> Row | None:
        """Return a task's best-ranked trace kept for the imitation sets, or None."""
        values = self._db.execute(
            f"SELECT {_COLUMNS} FROM traces JOIN decisions USING (seq) WHERE decisions.state = 'kept' "
            f"AND stream = 'main' AND task_id = ? ORDER BY {RANK_ORDER} LIMIT 1",
            (task_id,),
        ).fetchone()
        return _decode(values) if values else None

    def observed(self, task_id: str) -> list[Observed]:
        """Return a task's observed episodes, in ingest order."""
        rows = self._db.execute(
            "SELECT seq, task_id, episode_id, miner, score, success, turn_rewards FROM observed "
            "WHERE task_id = ? ORDER BY seq",
            (task_id,),
        )
        return [
            Observed(seq, task, episode, miner, score, bool(ok), tuple(json.loads(turns)))
            for seq, task, episode, miner, score, ok, turns in rows
        ]

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read query and return all its rows (only for small, aggregated results)."""
        return list(self._db.execute(sql, params))
