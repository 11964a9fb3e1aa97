"""The local chain's records: the subnet's configuration, a neuron row, the view rules read, outcomes.

Plain frozen dataclasses shared by the state file (``state``), the pallet rules (``rules``) and
the substrate; kept apart so that the rules need not import the state that applies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LocalChainConfig:
    """The subnet a local chain file holds, and its hyperparameters (fixed at creation)."""

    netuid: int
    owner_hotkey: str
    owner_coldkey: str
    genesis_time: float
    block_seconds: float = 1.0
    name: str = "shopping-arena"
    symbol: str = "SA"
    tempo: int = 20
    weights_rate_limit: int = 5
    min_allowed_weights: int = 1
    max_weights_limit: int = 65535
    commit_reveal: bool = True  # on, as on finney: weights are timelocked commits revealed later
    reveal_period_epochs: int = 1
    weights_version: int = 0
    max_uids: int = 256
    serving_rate_limit: int = 0
    min_stake: float = 0.0
    # Seconds from a drand round's publication to its pulse on chain: a real chain's arrive a few
    # seconds late; one past the reveal epoch is a drand stall, and the commit expires unopened.
    pulse_delay: float = 0.0
    # Subtensor refuses 127.0.0.1 and ::1 as axon addresses. "The local network is in use" (every
    # process on one host, as in the demo and tests/e2e) needs them: only then may this be True.
    loopback_axons: bool = False

    def epoch_anchor(self) -> int:
        """``LastEpochBlock`` when the subnet was added (at block 1): staggered by ``netuid % tempo``.

        As subtensor's ``init_new_network`` (saturating at block 0).
        """
        return max(0, 1 - self.netuid % max(1, self.tempo))

    def epoch_index(self, block: int) -> int:
        """``SubnetEpochIndex`` at ``block``: how many epochs have run at or before it.

        Subtensor's stateful schedule: an epoch runs where ``block - LastEpochBlock >= tempo``
        and moves ``LastEpochBlock`` there, so epochs are ``tempo`` blocks apart from the
        anchor. The local chain has no tempo change, owner-triggered epoch or per-block epoch
        cap, so the count has this closed form; a tempo of 0 runs none.
        """
        if self.tempo <= 0:
            return 0
        return max(0, (block - self.epoch_anchor()) // self.tempo)

    def epoch_start(self, index: int) -> int:
        """The block epoch ``index`` runs at (the block its ``LastEpochBlock`` is); 0 is the anchor."""
        return self.epoch_anchor() + index * self.tempo

    def last_epoch_block(self, block: int) -> int:
        """``LastEpochBlock`` at ``block``: where the subnet's epoch last ran (the anchor before any)."""
        return self.epoch_start(self.epoch_index(block))

    def block_at(self, now: float) -> int:
        """The block current at wall time ``now`` (block 1 is genesis)."""
        return 1 + max(0, math.floor((now - self.genesis_time) / self.block_seconds))

    def block_time(self, block: int) -> float:
        """The wall time block ``block`` was made at (its ``Timestamp.Now``)."""
        return self.genesis_time + (block - 1) * self.block_seconds

    def first_block_at(self, when: float) -> int:
        """The first block made at or after wall time ``when``."""
        return max(1, 1 + math.ceil((when - self.genesis_time) / self.block_seconds))


@dataclass(frozen=True)
class NeuronRow:
    """One uid of the local subnet as stored."""

    uid: int
    hotkey: str
    coldkey: str
    stake_rao: int
    validator_permit: bool
    registered_at: int
    last_update: int = 0
    axon_ip: int = 0
    axon_port: int = 0
    axon_ip_type: int = 4
    axon_protocol: int = 0
    axon_version: int = 0
    axon_block: int = 0


@dataclass(frozen=True)
class ChainView:
    """The subnet at one block: configuration, block number and neurons ordered by uid."""

    config: LocalChainConfig
    block: int
    neurons: tuple[NeuronRow, ...]

    def by_hotkey(self, hotkey: str) -> NeuronRow | None:
        """The neuron holding ``hotkey``, or None."""
        return next((n for n in self.neurons if n.hotkey == hotkey), None)


@dataclass(frozen=True)
class Outcome:
    """The result of one signed call: applied or refused in a block, or refused by the pool.

    ``block``/``index`` are None for a pool refusal: the transaction never reached a block,
    consumed no nonce and is not in the extrinsic log (as subtensor's transaction extension
    refuses a rate-limited or under-staked weight call, or any invalid serve_axon).
    """

    block: int | None
    index: int | None
    error: str | None = None  # the chain's error name when refused
    message: str = "Success"
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def success(self) -> bool:
        """True when the call was applied."""
        return self.error is None

    @property
    def included(self) -> bool:
        """True when the call reached a block (applied or refused there)."""
        return self.block is not None


@dataclass(frozen=True)
class CommitRecord:
    """One timelocked weight commit and what became of it at its reveal round.

    ``plaintext`` is what the submitter handed the local chain next to the ciphertext (it cannot
    open a drand timelock): ``{"dests", "weights", "version_key"}`` as the SDK quantised them.
    ``status`` is ``pending`` until the first block at or after ``reveal_at``, then
    ``revealed`` (weights stored at ``revealed_block``) or ``failed`` with the pallet's error:
    silent on chain, as subtensor drops a commit whose reveal fails.
    """

    id: int
    signer: str
    block: int
    reveal_round: int
    reveal_at: float
    plaintext: dict[str, Any] | None
    status: str
    revealed_block: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class ExtrinsicRecord:
    """One logged extrinsic: who sent which call with which arguments, and whether it failed."""

    block: int
    index: int
    signer: str
    call: str  # "Pallet.function"
    params: dict[str, Any]
    error: str | None
