"""The local chain's state and rules: one subnet in a SQLite file shared by every local process.

The file holds the subnet's configuration, its registered neurons (hotkey, coldkey, stake,
validator permit, served axon), the weights each validator set, and a log of every extrinsic
(successful or refused). Blocks are not produced by anyone: the current block is derived from
wall time (``1 + (now - genesis) // block_seconds``), so every process agrees on it without a
block-producing daemon. Writes take SQLite's write lock (``BEGIN IMMEDIATE``), so a validator
and several miners in separate processes see one consistent chain.

``LocalChain.dispatch`` applies a signed call under the pallet rules of ``neurons.chain.local.rules``
(set weights, timelocked weight commits, serving an axon; the chain's own error names) and
logs it, so a call the SDK's pre-flight lets through can still be refused on chain, as on
finney. Nothing here imports bittensor: ``neurons.chain.local.substrate`` presents this state to the
SDK.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from neurons.chain.local.records import ChainView, ExtrinsicRecord, LocalChainConfig, NeuronRow, Outcome
from neurons.chain.local.rules import RAO_PER_UNIT, Change, Refused, apply_call
from neurons.errors import LocalChainError

logger = logging.getLogger(__name__)

_SCHEMA = """
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
"""


def _json_default(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


@contextmanager
def _connect(path: Path, *, write: bool = False) -> Iterator[sqlite3.Connection]:
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


def _read_config(conn: sqlite3.Connection) -> LocalChainConfig:
    row = conn.execute("SELECT body FROM config WHERE id = 1").fetchone()
    if row is None:
        raise LocalChainError("local chain file has no configuration")
    return LocalChainConfig(**json.loads(row["body"]))


def _read_neurons(conn: sqlite3.Connection) -> tuple[NeuronRow, ...]:
    rows = conn.execute("SELECT * FROM neurons ORDER BY uid").fetchall()
    return tuple(NeuronRow(**{**dict(r), "validator_permit": bool(r["validator_permit"])}) for r in rows)


def _insert_neuron(conn: sqlite3.Connection, neuron: NeuronRow) -> None:
    columns = ("uid", "hotkey", "coldkey", "stake_rao", "validator_permit", "registered_at")
    conn.execute(
        f"INSERT INTO neurons ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        tuple(getattr(neuron, c) for c in columns),
    )


def create_local_chain(
    path: Path,
    netuid: int,
    *,
    owner_hotkey: str,
    owner_coldkey: str,
    overwrite: bool = False,
    clock: Callable[[], float] = time.time,
    **settings: Any,
) -> LocalChainConfig:
    """Create a local chain file holding one subnet; the owner's hotkey is registered at uid 0.

    Args:
        path: the SQLite file to create.
        netuid: the subnet's id.
        owner_hotkey: ss58 hotkey of the subnet owner (registered at uid 0, no stake, no permit).
        owner_coldkey: ss58 coldkey of the subnet owner.
        overwrite: replace an existing file instead of refusing.
        clock: wall-clock source; genesis is "now".
        **settings: any other ``LocalChainConfig`` field (block_seconds, tempo,
            weights_rate_limit, min_allowed_weights, max_weights_limit, commit_reveal,
            weights_version, max_uids, serving_rate_limit, min_stake, name, symbol).

    Returns:
        The configuration written.

    Raises:
        LocalChainError: the file exists and ``overwrite`` is False, or a setting is unknown.
    """
    known = set(LocalChainConfig.__dataclass_fields__) - {"netuid", "owner_hotkey", "owner_coldkey"}
    if unknown := set(settings) - known:
        raise LocalChainError(f"unknown local chain settings: {sorted(unknown)}")
    if path.exists():
        if not overwrite:
            raise LocalChainError(f"{path} already exists (pass overwrite=True to replace it)")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    settings.setdefault("genesis_time", clock())
    config = LocalChainConfig(
        netuid=netuid, owner_hotkey=owner_hotkey, owner_coldkey=owner_coldkey, **settings
    )
    if config.block_seconds <= 0:
        raise LocalChainError("block_seconds must be positive")
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        conn.execute("INSERT INTO config (id, body) VALUES (1, ?)", (json.dumps(config.__dict__),))
        _insert_neuron(conn, NeuronRow(0, owner_hotkey, owner_coldkey, 0, False, config.block_at(clock())))
    logger.info("local chain created path=%s netuid=%d", path, netuid)
    return config


def register(
    path: Path,
    hotkey: str,
    coldkey: str,
    *,
    stake: float = 0.0,
    validator_permit: bool = False,
    clock: Callable[[], float] = time.time,
) -> int:
    """Register ``hotkey`` (owned by ``coldkey``) on the local subnet; returns its uid.

    Registering a hotkey again with the same coldkey updates its stake and permit and keeps
    its uid. There is no pruning: a full subnet refuses new hotkeys.

    Raises:
        LocalChainError: the hotkey belongs to another coldkey, or the subnet is full.
    """
    stake_rao = round(stake * RAO_PER_UNIT)
    with _connect(path, write=True) as conn:
        config = _read_config(conn)
        row = conn.execute("SELECT uid, coldkey FROM neurons WHERE hotkey = ?", (hotkey,)).fetchone()
        if row is not None:
            if row["coldkey"] != coldkey:
                raise LocalChainError(f"hotkey {hotkey} is registered to another coldkey")
            conn.execute(
                "UPDATE neurons SET stake_rao = ?, validator_permit = ? WHERE uid = ?",
                (stake_rao, int(validator_permit), row["uid"]),
            )
            return int(row["uid"])
        uid = int(conn.execute("SELECT COUNT(*) FROM neurons").fetchone()[0])
        if uid >= config.max_uids:
            raise LocalChainError(f"subnet {config.netuid} is full ({config.max_uids} uids)")
        block = config.block_at(clock())
        _insert_neuron(conn, NeuronRow(uid, hotkey, coldkey, stake_rao, validator_permit, block))
    logger.info("local chain registered uid=%d hotkey=%s permit=%s", uid, hotkey, validator_permit)
    return uid


def read_weights(path: Path) -> dict[int, dict[int, int]]:
    """The weights on the local chain: validator uid -> {miner uid: u16 value as stored}."""
    with _connect(path) as conn:
        rows = conn.execute("SELECT uid, dest, value FROM weights ORDER BY uid, dest").fetchall()
    out: dict[int, dict[int, int]] = {}
    for row in rows:
        out.setdefault(int(row["uid"]), {})[int(row["dest"])] = int(row["value"])
    return out


def read_extrinsics(path: Path, *, call: str | None = None) -> list[ExtrinsicRecord]:
    """Every extrinsic the local chain received, oldest first, optionally only one ``Pallet.call``."""
    with _connect(path) as conn:
        rows = conn.execute("SELECT * FROM extrinsics ORDER BY block, idx").fetchall()
    records = [
        ExtrinsicRecord(r["block"], r["idx"], r["signer"], r["call"], json.loads(r["params"]), r["error"])
        for r in rows
    ]
    return [r for r in records if call is None or r.call == call]


def _store(conn: sqlite3.Connection, change: Change) -> None:
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


class LocalChain:
    """A handle on a local chain file: reads views, dispatches calls. Cheap; no open connection."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        """Bind to the chain file at ``path`` (which must exist when first used)."""
        self.path = path
        self._clock = clock
        self._config: LocalChainConfig | None = None

    @property
    def config(self) -> LocalChainConfig:
        """The subnet's configuration (read once: it never changes after creation)."""
        if self._config is None:
            with _connect(self.path) as conn:
                self._config = _read_config(conn)
        return self._config

    def block(self) -> int:
        """The current block."""
        return self.config.block_at(self._clock())

    def view(self) -> ChainView:
        """The subnet's neurons at the current block."""
        with _connect(self.path) as conn:
            neurons = _read_neurons(conn)
        return ChainView(self.config, self.block(), neurons)

    def weights(self) -> dict[int, list[tuple[int, int]]]:
        """Stored weights per setting uid, as (dest uid, u16 value) pairs."""
        return {uid: sorted(row.items()) for uid, row in read_weights(self.path).items()}

    def extrinsic_count(self, signer: str) -> int:
        """How many extrinsics ``signer`` has sent (its account nonce)."""
        with _connect(self.path) as conn:
            row = conn.execute("SELECT COUNT(*) FROM extrinsics WHERE signer = ?", (signer,)).fetchone()
        return int(row[0])

    def dispatch(self, signer: str, module: str, function: str, params: Mapping[str, Any]) -> Outcome:
        """Apply one signed call under the chain's rules and log it; refusals are outcomes, not errors."""
        with _connect(self.path, write=True) as conn:
            config = _read_config(conn)
            block = config.block_at(self._clock())
            view = ChainView(config, block, _read_neurons(conn))
            index = int(
                conn.execute("SELECT COUNT(*) FROM extrinsics WHERE block = ?", (block,)).fetchone()[0]
            )
            try:
                change = apply_call(view, signer, module, function, params)
                _store(conn, change)
                outcome = Outcome(block, index, events=change.events)
            except Refused as refusal:
                outcome = Outcome(block, index, error=refusal.name, message=refusal.message)
            conn.execute(
                "INSERT INTO extrinsics (block, idx, signer, call, params, error) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    block,
                    index,
                    signer,
                    f"{module}.{function}",
                    json.dumps(params, default=_json_default),
                    outcome.error,
                ),
            )
        logger.debug("local extrinsic block=%d call=%s.%s error=%s", block, module, function, outcome.error)
        return outcome
