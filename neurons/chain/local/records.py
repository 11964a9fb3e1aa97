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
    commit_reveal: bool = False
    reveal_period_epochs: int = 1
    weights_version: int = 0
    max_uids: int = 256
    serving_rate_limit: int = 0
    min_stake: float = 0.0

    def block_at(self, now: float) -> int:
        """The block current at wall time ``now`` (block 1 is genesis)."""
        return 1 + max(0, math.floor((now - self.genesis_time) / self.block_seconds))


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
    """The result of dispatching one extrinsic: included at ``block``/``index``, ok or refused."""

    block: int
    index: int
    error: str | None = None  # the chain's error name when refused
    message: str = "Success"
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def success(self) -> bool:
        """True when the call was applied."""
        return self.error is None


@dataclass(frozen=True)
class ExtrinsicRecord:
    """One logged extrinsic: who sent which call with which arguments, and whether it failed."""

    block: int
    index: int
    signer: str
    call: str  # "Pallet.function"
    params: dict[str, Any]
    error: str | None
