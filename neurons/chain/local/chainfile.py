"""The local chain file: its schema, connections, and the row reads and writes every part shares."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from neurons.chain.local.commitments import TABLE as COMMITMENTS_TABLE
from neurons.chain.local.records import LocalChainConfig, NeuronRow
from neurons.chain.local.rules import Change
from neurons.errors import LocalChainError

SCHEMA = (
    """
CREATE TABLE config (id INTEGER PRIMARY KEY CHECK (id = 1), body TEXT NOT NULL);
CREATE TABLE neurons (
    uid INTEGER PRIMARY KEY, hotkey TEXT NOT NULL UNIQUE, coldkey TEXT NOT NULL,
    stake_rao INTEGER NOT NULL, validator_permit INTEGER NOT NULL, registered_at INTEGER NOT NULL,
    last_update INTEGER NOT NULL DEFAULT 0,
    axon_ip INTEGER NOT NULL DEFAULT 0, axon_port INTEGER NOT NULL DEFAULT 0,
    axon_ip_type INTEGER NOT NULL DEFAULT 4, axon_protocol INTEGER NOT NULL DEFAULT 0,
    axon_version INTEGER NOT NULL DEFAULT 0, axon_block INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE weights (
    uid INTEGER NOT NULL, dest INTEGER NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (uid, dest)
);
CREATE TABLE extrinsics (
    block INTEGER NOT NULL, idx INTEGER NOT NULL, signer TEXT NOT NULL, call TEXT NOT NULL,
    params TEXT NOT NULL, error TEXT, PRIMARY KEY (block, idx)
);
CREATE TABLE commits (
    id INTEGER PRIMARY KEY, signer TEXT NOT NULL, block INTEGER NOT NULL,
    reveal_round INTEGER NOT NULL, reveal_at REAL NOT NULL, plaintext TEXT,
    status TEXT NOT NULL DEFAULT 'pending', revealed_block INTEGER, error TEXT
);
CREATE INDEX commits_pending ON commits (status, reveal_at);
"""
    + COMMITMENTS_TABLE
)


def json_default(value: object) -> object:
    """JSON for call parameters: bytes as 0x-hex."""
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


@contextmanager
def connect(path: Path, *, write: bool = False) -> Iterator[sqlite3.Connection]:
    """One transaction on the chain file (``BEGIN IMMEDIATE`` to write); the file must exist."""
    if not path.is_file():
        raise LocalChainError(f"no local chain at {path}; create one with create_local_chain()")
    # mode=rw: never let a typo in the path create an empty chain file.
    uri = path.resolve().as_uri() + "?mode=rw"
    with closing(sqlite3.connect(uri, uri=True, timeout=10.0, isolation_level=None)) as conn:
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def read_config(conn: sqlite3.Connection) -> LocalChainConfig:
    """The subnet's configuration."""
    row = conn.execute("SELECT body FROM config WHERE id = 1").fetchone()
    if row is None:
        raise LocalChainError("local chain file has no configuration")
    return LocalChainConfig(**json.loads(row["body"]))


def read_neurons(conn: sqlite3.Connection) -> tuple[NeuronRow, ...]:
    """The neurons, ordered by uid."""
    rows = conn.execute("SELECT * FROM neurons ORDER BY uid").fetchall()
    return tuple(NeuronRow(**{**dict(r), "validator_permit": bool(r["validator_permit"])}) for r in rows)


def insert_neuron(conn: sqlite3.Connection, neuron: NeuronRow) -> None:
    """Register one neuron row."""
    columns = ("uid", "hotkey", "coldkey", "stake_rao", "validator_permit", "registered_at")
    conn.execute(
        f"INSERT INTO neurons ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        tuple(getattr(neuron, c) for c in columns),
    )


def store(conn: sqlite3.Connection, change: Change) -> None:
    """Write what an accepted call changes: last update, weights, axon."""
    if change.last_update is not None:
        conn.execute("UPDATE neurons SET last_update = ? WHERE uid = ?", (change.last_update, change.uid))
    if change.weights is not None:
        conn.execute("DELETE FROM weights WHERE uid = ?", (change.uid,))
        conn.executemany(
            "INSERT INTO weights (uid, dest, value) VALUES (?, ?, ?)",
            [(change.uid, dest, value) for dest, value in change.weights],
        )
    if change.axon is not None:
        assignments = ", ".join(f"{column} = ?" for column in change.axon)
        conn.execute(f"UPDATE neurons SET {assignments} WHERE uid = ?", (*change.axon.values(), change.uid))
