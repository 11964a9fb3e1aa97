"""The Commitments pallet on the local chain: ``set_commitment``'s rules and ``CommitmentOf`` with history.

A hotkey registered on the subnet may publish a commitment: up to ``MAX_FIELDS`` ``Raw`` fields
of at most 128 bytes each; each call uses ``max(100, bytes)`` of the hotkey's space for the
current epoch, refused past ``MAX_SPACE`` (``SpaceLimitExceeded``), as subtensor's
``UsedSpaceOf`` does. A new commitment replaces the hotkey's last one; unlike the chain's state,
which a pruning node forgets, the local chain keeps every version, so a read at an old block
(``CommitmentOf`` at a block hash) answers as an archive node would. Timelocked fields
(``TimelockEncrypted``) are not modelled: the local chain cannot open a drand timelock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from neurons.chain.local.records import ChainView, LocalChainConfig
from neurons.chain.local.rules import Refused

MODULE = "Commitments"
MAX_FIELDS = 3  # the runtime's MaxCommitFieldsInner
MAX_RAW_BYTES = 128  # Data::Raw0 .. Data::Raw128
MIN_SPACE = 100  # every set_commitment uses at least this much of the epoch's space
# Bytes per hotkey and epoch the local chain allows (on chain, MaxSpace is a storage value).
MAX_SPACE = 3100

TABLE = """
CREATE TABLE commitments (
    id INTEGER PRIMARY KEY, hotkey TEXT NOT NULL, block INTEGER NOT NULL, fields TEXT NOT NULL,
    space INTEGER NOT NULL
);
CREATE INDEX commitments_by_hotkey ON commitments (hotkey, block);
"""


def raw_fields(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The hex of each ``Raw`` field of a call's ``info`` (one tuple level of SCALE's shape tolerated).

    Raises:
        Refused: a field that is not a ``RawN`` of exactly N bytes (N <= 128): the codec
            refuses it before any block.
    """
    info = params.get("info")
    fields = info.get("fields") if isinstance(info, Mapping) else None
    if isinstance(fields, list | tuple) and len(fields) == 1 and isinstance(fields[0], list | tuple):
        fields = fields[0]  # the BoundedVec's tuple wrapper, as SDK 9 composed it
    if not isinstance(fields, list | tuple):
        raise Refused("BadCommitmentInfo", "info.fields must be a list of Raw fields", at="pool")
    out: list[str] = []
    for field in fields:
        items = list(field.items()) if isinstance(field, Mapping) else []
        if len(items) != 1 or not str(items[0][0]).startswith("Raw"):
            raise Refused("BadCommitmentInfo", f"not a Raw field: {field!r:.80}", at="pool")
        variant, value = items[0]
        data = bytes(value) if isinstance(value, bytes | bytearray) else _hex(value)
        if variant != f"Raw{len(data)}" or len(data) > MAX_RAW_BYTES:
            raise Refused("BadCommitmentInfo", f"{variant} holds {len(data)} bytes", at="pool")
        out.append("0x" + data.hex())
    return tuple(out)


def _hex(value: Any) -> bytes:
    try:
        return bytes.fromhex(str(value).removeprefix("0x"))
    except ValueError:
        raise Refused("BadCommitmentInfo", "a Raw field's data is not hex", at="pool") from None


def check_commitment(view: ChainView, signer: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """The pallet's checks of one ``set_commitment``; the fields to keep.

    Raises:
        Refused: the signer is not registered on the subnet, or too many fields.
    """
    fields = raw_fields(params)
    if int(params.get("netuid", -1)) != view.config.netuid or view.by_hotkey(signer) is None:
        raise Refused("AccountNotAllowedCommit", f"hotkey {signer} is not registered on the subnet")
    if len(fields) > MAX_FIELDS:
        raise Refused("TooManyFieldsInCommitmentInfo", f"{len(fields)} fields, at most {MAX_FIELDS}")
    return fields


def space_of(fields: tuple[str, ...]) -> int:
    """The space one commitment uses: its bytes, at least ``MIN_SPACE``."""
    return max(MIN_SPACE, sum((len(f) - 2) // 2 for f in fields))


def keep_commitment(
    conn: sqlite3.Connection, config: LocalChainConfig, signer: str, block: int, fields: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Store a commitment made at ``block`` after the space check; the events it emits.

    Raises:
        Refused: ``SpaceLimitExceeded`` for this epoch.
    """
    epoch = config.epoch_index(block)
    rows = conn.execute("SELECT block, space FROM commitments WHERE hotkey = ?", (signer,)).fetchall()
    used = sum(int(r["space"]) for r in rows if config.epoch_index(int(r["block"])) == epoch)
    needed = space_of(fields)
    if used + needed > MAX_SPACE:
        message = f"{used} of {MAX_SPACE} bytes used this epoch; this commitment needs {needed}"
        raise Refused("SpaceLimitExceeded", message)
    conn.execute(
        "INSERT INTO commitments (hotkey, block, fields, space) VALUES (?, ?, ?, ?)",
        (signer, block, ",".join(fields), needed),
    )
    attributes = {"netuid": config.netuid, "who": signer}
    return [{"event": {"module_id": MODULE, "event_id": "Commitment", "attributes": attributes}}]


def commitment_at(conn: sqlite3.Connection, hotkey: str, block: int) -> dict[str, Any] | None:
    """``CommitmentOf[netuid, hotkey]`` as it stood at ``block``, decoded as the SDK reads it (None: none)."""
    row = conn.execute(
        "SELECT block, fields FROM commitments WHERE hotkey = ? AND block <= ? ORDER BY id DESC LIMIT 1",
        (hotkey, block),
    ).fetchone()
    if row is None:
        return None
    fields = [{f"Raw{(len(f) - 2) // 2}": f} for f in str(row["fields"]).split(",") if f]
    return {"deposit": 0, "block": int(row["block"]), "info": {"fields": fields}}


def commitments_at(conn: sqlite3.Connection, block: int) -> list[tuple[str, dict[str, Any]]]:
    """Every hotkey's commitment at ``block`` (the ``CommitmentOf`` map of the subnet)."""
    hotkeys = [r["hotkey"] for r in conn.execute("SELECT DISTINCT hotkey FROM commitments ORDER BY hotkey")]
    records = ((hotkey, commitment_at(conn, hotkey, block)) for hotkey in hotkeys)
    return [(hotkey, record) for hotkey, record in records if record is not None]
