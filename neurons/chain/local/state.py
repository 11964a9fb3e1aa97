"""The local chain's state and rules: one subnet in a SQLite file shared by every local process.

The file holds the subnet's configuration, its registered neurons (hotkey, coldkey, stake,
validator permit, served axon), the weights each validator set, and a log of every extrinsic
(successful or refused). Blocks are not produced by anyone: the current block is derived from
wall time (``1 + (now - genesis) // block_seconds``), so every process agrees on it without a
block-producing daemon. A signed call lands in the next block (the head's plus one), as a node
includes a transaction in the block it builds next; a read sees it at once (the file keeps no
history). Writes take SQLite's write lock (``BEGIN IMMEDIATE``), so a validator and several
miners in separate processes see one consistent chain.

``LocalChain.dispatch`` applies a signed call under the pool's and the pallet's rules of
``neurons.chain.local.rules`` (set weights, timelocked weight commits, serving an axon; the
chain's own error names) and logs what reaches a block, so a call the SDK's pre-flight lets
through can still be refused, as on finney. The account nonce is the number of extrinsics a
signer got into blocks; the pool refuses any other (a stale or future nonce).

Commit-reveal (``neurons.chain.local.commits``): a timelocked commit is kept with the plaintext
its submitter handed over (the local chain cannot open a drand timelock: this is the test
double's one shortcut) and revealed in its reveal epoch, at the first block made after its
drand round's publication, under ``set_weights``'s rules at that block. A failed reveal is
silent, as on chain: the commit is marked ``failed`` in the commit log (``read_commits``), and
no weights change. Reveals due are applied by whichever access comes first (a read or a
dispatch), so every process sees the same state.

Nothing here imports bittensor: ``neurons.chain.local.substrate`` presents this state to the
SDK.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from neurons.chain.local.chainfile import (
    SCHEMA,
    connect,
    insert_neuron,
    json_default,
    read_config,
    read_neurons,
    store,
)
from neurons.chain.local.commitments import MODULE as COMMITMENTS
from neurons.chain.local.commitments import check_commitment, commitment_at, commitments_at, keep_commitment
from neurons.chain.local.commits import commit_record, keep_commit, pending_due, reveal_pending
from neurons.chain.local.records import (
    ChainView,
    CommitRecord,
    ExtrinsicRecord,
    LocalChainConfig,
    NeuronRow,
    Outcome,
)
from neurons.chain.local.rules import RAO_PER_UNIT, Refused, apply_call
from neurons.errors import LocalChainError

logger = logging.getLogger(__name__)


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
            weights_rate_limit, min_allowed_weights, max_weights_limit, commit_reveal (on by
            default, as on finney), reveal_period_epochs, weights_version, max_uids,
            serving_rate_limit, min_stake, pulse_delay, loopback_axons, name, symbol).

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
        conn.executescript(SCHEMA)
        conn.execute("INSERT INTO config (id, body) VALUES (1, ?)", (json.dumps(config.__dict__),))
        insert_neuron(conn, NeuronRow(0, owner_hotkey, owner_coldkey, 0, False, config.block_at(clock())))
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
    with connect(path, write=True) as conn:
        config = read_config(conn)
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
        insert_neuron(conn, NeuronRow(uid, hotkey, coldkey, stake_rao, validator_permit, block))
    logger.info("local chain registered uid=%d hotkey=%s permit=%s", uid, hotkey, validator_permit)
    return uid


def replace_neuron(
    path: Path,
    uid: int,
    hotkey: str,
    coldkey: str,
    *,
    stake: float = 0.0,
    validator_permit: bool = False,
    clock: Callable[[], float] = time.time,
) -> None:
    """Deregister the neuron at ``uid`` and register ``hotkey`` there, as subtensor's ``replace_neuron``.

    Its axon, its weights and its last update go (the last update becomes the replacement's
    block); the weights other validators set to ``uid`` are zeroed in place, not removed
    (``clear_neuron``), so their rows keep the uid with 0 and the others' values unscaled.

    Raises:
        LocalChainError: no neuron holds ``uid``, it is the owner's, or ``hotkey`` holds another uid.
    """
    with connect(path, write=True) as conn:
        config = read_config(conn)
        row = conn.execute("SELECT hotkey FROM neurons WHERE uid = ?", (uid,)).fetchone()
        if row is None or row["hotkey"] == config.owner_hotkey:
            raise LocalChainError(f"uid {uid} holds no neuron that can be replaced")
        taken = conn.execute("SELECT uid FROM neurons WHERE hotkey = ?", (hotkey,)).fetchone()
        if taken is not None and int(taken["uid"]) != uid:
            raise LocalChainError(f"hotkey {hotkey} already holds uid {taken['uid']}")
        block = config.block_at(clock())
        conn.execute("DELETE FROM neurons WHERE uid = ?", (uid,))
        insert_neuron(
            conn, NeuronRow(uid, hotkey, coldkey, round(stake * RAO_PER_UNIT), validator_permit, block)
        )
        conn.execute("UPDATE neurons SET last_update = ? WHERE uid = ?", (block, uid))
        conn.execute("DELETE FROM weights WHERE uid = ?", (uid,))
        conn.execute("UPDATE weights SET value = 0 WHERE dest = ?", (uid,))
    logger.info("local chain replaced uid=%d hotkey=%s", uid, hotkey)


def read_weights(
    path: Path, *, clock: Callable[[], float] = time.time, at: int | None = None
) -> dict[int, dict[int, int]]:
    """The weights on the local chain, reveals due by block ``at`` (the head) applied: uid -> {dest: u16}."""
    LocalChain(path, clock=clock).reveal_due(at)
    with connect(path) as conn:
        rows = conn.execute("SELECT uid, dest, value FROM weights ORDER BY uid, dest").fetchall()
    out: dict[int, dict[int, int]] = {}
    for row in rows:
        out.setdefault(int(row["uid"]), {})[int(row["dest"])] = int(row["value"])
    return out


def read_extrinsics(path: Path, *, call: str | None = None) -> list[ExtrinsicRecord]:
    """Every extrinsic the local chain received, oldest first, optionally only one ``Pallet.call``."""
    with connect(path) as conn:
        rows = conn.execute("SELECT * FROM extrinsics ORDER BY block, idx").fetchall()
    records = [
        ExtrinsicRecord(r["block"], r["idx"], r["signer"], r["call"], json.loads(r["params"]), r["error"])
        for r in rows
    ]
    return [r for r in records if call is None or r.call == call]


def read_commits(
    path: Path, *, clock: Callable[[], float] = time.time, at: int | None = None
) -> list[CommitRecord]:
    """Every timelocked commit kept, oldest first; reveals due by ``at`` (the head) applied."""
    LocalChain(path, clock=clock).reveal_due(at)
    with connect(path) as conn:
        rows = conn.execute("SELECT * FROM commits ORDER BY id").fetchall()
    return [commit_record(row) for row in rows]


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
            with connect(self.path) as conn:
                self._config = read_config(conn)
        return self._config

    def now(self) -> float:
        """The chain's wall time (its clock; a test's fake one, or ``time.time``)."""
        return self._clock()

    def block(self) -> int:
        """The current block."""
        return self.config.block_at(self._clock())

    def at(self, block: int | None) -> int:
        """The block a read pinned to ``block`` sees: that block, or the head when it is later or None."""
        head = self.block()
        return head if block is None else min(block, head)

    def reveal_due(self, at: int | None = None) -> int:
        """Apply the reveals due by block ``at`` (the head by default); returns how many (0: only a read)."""
        block = self.at(at)
        with connect(self.path) as conn:
            if not pending_due(conn, self.config, block):
                return 0
        with connect(self.path, write=True) as conn:
            return reveal_pending(conn, self.config, block)

    def view(self, at: int | None = None) -> ChainView:
        """The subnet's neurons at block ``at`` (the head by default), reveals due by then applied first.

        The file keeps no history: a read pinned to an older block sees that block's number,
        time and epoch, and the neurons, weights and commits as they are now, reveals due by
        that block applied (the first access after a block applies its reveals, so a pinned read
        sees a later one only when another access applied it first).
        """
        block = self.at(at)
        with connect(self.path) as conn:  # one read in the common case: no reveal due
            if not pending_due(conn, self.config, block):
                return ChainView(self.config, block, read_neurons(conn))
        with connect(self.path, write=True) as conn:
            reveal_pending(conn, self.config, block)
            return ChainView(self.config, block, read_neurons(conn))

    def weights(self, at: int | None = None) -> dict[int, list[tuple[int, int]]]:
        """Stored weights per setting uid, as (dest uid, u16 value) pairs (reveals due by ``at`` applied)."""
        rows = read_weights(self.path, clock=self._clock, at=at)
        return {uid: sorted(row.items()) for uid, row in rows.items()}

    def pending_commits(self, at: int | None = None) -> list[CommitRecord]:
        """The timelocked commits not opened yet (what ``TimelockedWeightCommits`` holds) at ``at``."""
        return [c for c in read_commits(self.path, clock=self._clock, at=at) if c.status == "pending"]

    def commitment(self, hotkey: str, block: int | None = None) -> dict[str, Any] | None:
        """``CommitmentOf`` of ``hotkey`` as it stood at ``block`` (default: the current block)."""
        with connect(self.path) as conn:
            return commitment_at(conn, hotkey, self.block() if block is None else block)

    def commitments(self, block: int | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Every hotkey's ``CommitmentOf`` at ``block`` (default: the current block)."""
        with connect(self.path) as conn:
            return commitments_at(conn, self.block() if block is None else block)

    def extrinsic_count(self, signer: str) -> int:
        """How many extrinsics of ``signer`` reached a block (its account nonce)."""
        with connect(self.path) as conn:
            row = conn.execute("SELECT COUNT(*) FROM extrinsics WHERE signer = ?", (signer,)).fetchone()
        return int(row[0])

    def dispatch(
        self,
        signer: str,
        module: str,
        function: str,
        params: Mapping[str, Any],
        *,
        nonce: int | None = None,
        sealed: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """Apply one signed call under the chain's rules; refusals are outcomes, not errors.

        Args:
            signer: the signing hotkey (ss58).
            module: the pallet, e.g. ``SubtensorModule``.
            function: the call, e.g. ``set_mechanism_weights``.
            params: the call's arguments.
            nonce: the nonce the call was signed with; the pool refuses any but the account's
                next one (None: unchecked).
            sealed: for a timelocked commit, the plaintext and its reveal time:
                ``{"reveal_at": unix seconds, "plaintext": {"dests", "weights", "version_key"}}``.
        """
        with connect(self.path, write=True) as conn:
            config = read_config(conn)
            # Included in the block after the head, as a node's pool puts a transaction in the
            # block it builds next (the SDK times a commit's reveal round for that block).
            block = config.block_at(self._clock()) + 1
            reveal_pending(conn, config, block)  # reveals due come first in a block, as on chain
            expected = int(
                conn.execute("SELECT COUNT(*) FROM extrinsics WHERE signer = ?", (signer,)).fetchone()[0]
            )
            if nonce is not None and nonce != expected:
                name, word = ("Stale", "outdated") if nonce < expected else ("Future", "in the future")
                message = f"transaction is {word}: nonce {nonce}, the account's next is {expected}"
                return Outcome(None, None, error=name, message=message)
            view = ChainView(config, block, read_neurons(conn))
            index = int(
                conn.execute("SELECT COUNT(*) FROM extrinsics WHERE block = ?", (block,)).fetchone()[0]
            )
            try:
                if module == COMMITMENTS:  # the Commitments pallet keeps its own table
                    fields = check_commitment(view, signer, params)
                    events = keep_commitment(conn, config, signer, block, fields)
                    outcome = Outcome(block, index, events=events)
                else:
                    change = apply_call(view, signer, module, function, params)
                    store(conn, change)
                    if change.reveal_round is not None:
                        keep_commit(conn, signer, block, change.reveal_round, sealed)
                    outcome = Outcome(block, index, events=change.events)
            except Refused as refusal:
                if refusal.at == "pool":  # never reaches a block: no log, no nonce consumed
                    return Outcome(None, None, error=refusal.name, message=refusal.message)
                outcome = Outcome(block, index, error=refusal.name, message=refusal.message)
            conn.execute(
                "INSERT INTO extrinsics (block, idx, signer, call, params, error) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    block,
                    index,
                    signer,
                    f"{module}.{function}",
                    json.dumps(params, default=json_default),
                    outcome.error,
                ),
            )
        logger.debug("local extrinsic block=%d call=%s.%s error=%s", block, module, function, outcome.error)
        return outcome
