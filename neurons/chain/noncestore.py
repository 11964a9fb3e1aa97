"""Replay protection for signed requests shared by several worker processes: a SQLite nonce store.

``bittensor.http_auth.verify`` accepts any object with ``check_and_store(hotkey, nonce) -> bool``
(and reads ``retention`` to refuse a store that forgets nonces before they go stale). The SDK's
default store lives in one process's memory, so two uvicorn workers behind one port would each
accept the same replayed request once; this one keeps the seen nonces in a SQLite file that
every worker opens.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS seen_nonces (
    hotkey TEXT NOT NULL,
    nonce INTEGER NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (hotkey, nonce)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_nonces_expires ON seen_nonces (expires);
"""


class SqliteNonceStore:
    """A ``NonceStore`` backed by a SQLite file, safe across threads and processes.

    Each process (and each fork) opens its own connection on first use; a write lock on the
    file makes "check and store" atomic across processes. Expired entries are pruned at most
    once per ``retention / 4`` seconds.
    """

    def __init__(
        self, path: Path, *, retention: float = 60.0, clock: Callable[[], float] = time.time
    ) -> None:
        """Open (and create if needed) the store at ``path``.

        Args:
            path: the SQLite file; its directory must exist.
            retention: seconds a nonce is remembered; must cover the verifier's
                ``max_age + allowed_skew`` (the SDK checks this).
            clock: wall-clock source, injectable for tests.
        """
        self.path = path
        self.retention = retention
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._next_prune = 0.0
        with self._connection() as conn:
            conn.executescript(_SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        # A connection must not cross a fork: reopen when the pid changes.
        if self._conn is None or self._pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def check_and_store(self, hotkey_ss58: str, nonce_ns: int) -> bool:
        """Record ``(hotkey, nonce)``; True if it was new, False if it was already seen."""
        now = self._clock()
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                if now >= self._next_prune:
                    conn.execute("DELETE FROM seen_nonces WHERE expires <= ?", (now,))
                    self._next_prune = now + self.retention / 4
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO seen_nonces (hotkey, nonce, expires) VALUES (?, ?, ?)",
                    (hotkey_ss58, nonce_ns, now + self.retention),
                )
                fresh = cursor.rowcount == 1
                if not fresh:
                    # A row past its expiry is a nonce we promised to forget; accept it afresh.
                    expired = conn.execute(
                        "UPDATE seen_nonces SET expires = ? WHERE hotkey = ? AND nonce = ? AND expires <= ?",
                        (now + self.retention, hotkey_ss58, nonce_ns, now),
                    )
                    fresh = expired.rowcount == 1
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return fresh

    def close(self) -> None:
        """Close this process's connection (reopened on next use)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
