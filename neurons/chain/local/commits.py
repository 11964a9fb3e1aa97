"""The local chain's commit-reveal: keep a timelocked commit with its plaintext, open it at its round.

The local chain cannot open a drand timelock (that needs the round's signature from the drand
network), so the submitter hands it the plaintext next to the ciphertext: the test double's one
shortcut. A commit opens at the first block made at or after its drand round's publication
time, under ``set_weights``'s rules at that block (``rules.reveal_weights``); a failed reveal is
silent, as on chain: the commit is marked ``failed`` with the pallet error, no weights change.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Mapping
from typing import Any

from neurons.chain.local.chainfile import read_neurons, store
from neurons.chain.local.records import ChainView, CommitRecord, LocalChainConfig
from neurons.chain.local.rules import Refused, reveal_weights

logger = logging.getLogger(__name__)


def keep_commit(
    conn: sqlite3.Connection, signer: str, block: int, reveal_round: int, sealed: Mapping[str, Any] | None
) -> None:
    """Store a commit included at ``block``; without ``sealed`` (plaintext, reveal time) it never opens."""
    reveal_at = float(sealed["reveal_at"]) if sealed else float("inf")  # unknown: never opens
    plaintext = json.dumps(sealed["plaintext"]) if sealed and sealed.get("plaintext") else None
    conn.execute(
        "INSERT INTO commits (signer, block, reveal_round, reveal_at, plaintext) VALUES (?, ?, ?, ?, ?)",
        (signer, block, reveal_round, reveal_at, plaintext),
    )


def reveal_pending(conn: sqlite3.Connection, config: LocalChainConfig, block: int) -> int:
    """Open every pending commit whose reveal block is at or before ``block``; returns how many."""
    head_time = config.block_time(block)
    due = conn.execute(
        "SELECT * FROM commits WHERE status = 'pending' AND reveal_at <= ? ORDER BY id", (head_time,)
    ).fetchall()
    for row in map(commit_record, due):
        at = config.first_block_at(row.reveal_at)
        view = ChainView(config, at, read_neurons(conn))
        try:
            if row.plaintext is None:
                raise Refused("CommitUnreadable", "no plaintext was handed over with this commit")
            store(conn, reveal_weights(view, row.signer, row.plaintext))
            update: tuple[str, int, str | None] = ("revealed", at, None)
        except Refused as refusal:
            update = ("failed", at, refusal.name)
        conn.execute(
            "UPDATE commits SET status = ?, revealed_block = ?, error = ? WHERE id = ?", (*update, row.id)
        )
        logger.debug("local reveal block=%d signer=%s status=%s error=%s", at, row.signer, *update[::2])
    return len(due)


def commit_record(row: sqlite3.Row) -> CommitRecord:
    """A ``commits`` row as a record."""
    plaintext = json.loads(row["plaintext"]) if row["plaintext"] else None
    return CommitRecord(
        row["id"],
        row["signer"],
        row["block"],
        row["reveal_round"],
        row["reveal_at"],
        plaintext,
        row["status"],
        row["revealed_block"],
        row["error"],
    )


def pending_due(conn: sqlite3.Connection, config: LocalChainConfig, block: int) -> bool:
    """Whether any pending commit opens at or before ``block``."""
    query = "SELECT 1 FROM commits WHERE status = 'pending' AND reveal_at <= ? LIMIT 1"
    return conn.execute(query, (config.block_time(block),)).fetchone() is not None
