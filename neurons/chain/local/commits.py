"""The local chain's commit-reveal: keep a timelocked commit with its plaintext, open it at its round.

The local chain cannot open a drand timelock (that needs the round's signature from the drand
network), so the submitter hands it the plaintext next to the ciphertext: the test double's one
shortcut. As subtensor: a commit made in epoch ``e`` is opened in epoch ``e + reveal_period``, at
its first block whose time is at or after the drand round's publication (the pulse must be on
chain); it is applied under ``set_weights``'s rules at that block (``rules.reveal_weights``). A
failed reveal is silent, as on chain: the commit is marked ``failed`` with the pallet error and no
weights change; one whose round is not published before its reveal epoch ends is ``expired``.
Epochs follow subtensor's stateful schedule (``LocalChainConfig.epoch_index``: an epoch runs
``tempo`` blocks after the last one, ``SubnetEpochIndex`` counts them), and a commit belongs to
the epoch of the block that includes it. Subtensor tries a commit of epoch ``e`` at every block
of epoch ``e + reveal_period`` once the round's pulse is on chain (``pulse_delay`` after the
round's publication; a stall is a delay past the epoch) and drops it at the next epoch; the SDK
times its drand round from the same schedule (``LastEpochBlock``, ``SubnetEpochIndex``,
``BlocksSinceLastStep``, read from this chain), a little after the reveal epoch begins.
"""

from __future__ import annotations

import json
import logging
import math
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


def reveal_window(config: LocalChainConfig, commit: CommitRecord) -> tuple[int, int]:
    """The first and the last block of the commit's reveal epoch."""
    reveal_epoch = config.epoch_index(commit.block) + config.reveal_period_epochs
    return config.epoch_start(reveal_epoch), config.epoch_start(reveal_epoch + 1) - 1


def opening_block(config: LocalChainConfig, commit: CommitRecord) -> int | None:
    """The first block of the reveal epoch made after the commit's round was published; None: it expires."""
    first, last = reveal_window(config, commit)
    if math.isinf(commit.reveal_at):
        return None
    opens = max(first, config.first_block_at(commit.reveal_at + config.pulse_delay))
    return opens if opens <= last else None


def _pending(conn: sqlite3.Connection) -> list[CommitRecord]:
    rows = conn.execute("SELECT * FROM commits WHERE status = 'pending' ORDER BY id").fetchall()
    return [commit_record(row) for row in rows]


def _due(config: LocalChainConfig, commit: CommitRecord, block: int) -> bool:
    opens = opening_block(config, commit)
    return opens <= block if opens is not None else block > reveal_window(config, commit)[1]


def reveal_pending(conn: sqlite3.Connection, config: LocalChainConfig, block: int) -> int:
    """Open (or expire) every pending commit due at or before ``block``; returns how many."""
    due = [commit for commit in _pending(conn) if _due(config, commit, block)]
    for row in due:
        at = opening_block(config, row)
        update: tuple[str, int | None, str | None]
        if at is None:
            update = ("expired", None, "NoDrandPulse")
        else:
            view = ChainView(config, at, read_neurons(conn))
            try:
                if row.plaintext is None:
                    raise Refused("CommitUnreadable", "no plaintext was handed over with this commit")
                store(conn, reveal_weights(view, row.signer, row.plaintext))
                update = ("revealed", at, None)
            except Refused as refusal:
                update = ("failed", at, refusal.name)
        conn.execute(
            "UPDATE commits SET status = ?, revealed_block = ?, error = ? WHERE id = ?", (*update, row.id)
        )
        logger.debug(
            "local reveal block=%s signer=%s status=%s error=%s", update[1], row.signer, *update[::2]
        )
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
    """Whether any pending commit opens (or expires) at or before ``block``."""
    return any(_due(config, commit, block) for commit in _pending(conn))
