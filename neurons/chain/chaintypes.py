"""What the rest of the node sees of the chain: metagraph snapshots, submissions, the Chain protocol, auth.

These types carry no bittensor objects, so every module can use them; the SDK adapter
(``neurons.chain.client``, in the only package that imports the SDK) produces them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal, Protocol

from arena.types import Frozen
from neurons.errors import NeuronError


class Neuron(Frozen):
    """One registered uid of the subnet, as the metagraph reports it."""

    uid: int
    hotkey: str
    coldkey: str
    stake: float  # total stake in the subnet's own token (alpha), not TAO
    validator_permit: bool
    endpoint: str | None  # ``http://host:port`` served on chain, None when nothing is served
    last_update: int  # block of the neuron's last weight submission, 0 if never


class MetagraphSnapshot(Frozen):
    """The subnet at one block: its neurons (ordered by uid) and its owner."""

    netuid: int
    block: int
    neurons: tuple[Neuron, ...]
    owner_hotkey: str
    owner_uid: int | None  # None when the owner's hotkey holds no uid
    taken_at: datetime

    def by_hotkey(self, hotkey: str) -> Neuron | None:
        """The neuron registered under ``hotkey``, or None."""
        for neuron in self.neurons:
            if neuron.hotkey == hotkey:
                return neuron
        return None

    def uid_of(self, hotkey: str) -> int | None:
        """The uid of ``hotkey``, or None when it is not registered."""
        neuron = self.by_hotkey(hotkey)
        return neuron.uid if neuron is not None else None


class ChainClock(Frozen):
    """The head block's time (the Timestamp pallet's ``Now``, unix seconds) and the block interval."""

    timestamp: float
    block_seconds: float


class Submission(Frozen):
    """The checked outcome of one extrinsic: included and successful, or refused with a reason.

    ``code`` is the SDK's error class on failure (``rate_limited``, ``not_registered``,
    ``invalid_argument``, ``not_authorized``...), None on success.
    """

    success: bool
    message: str
    block: int | None = None  # block of inclusion when known
    code: str | None = None


class WeightSubmission(Submission):
    """One set_weights submission: the outcome plus what was asked for.

    ``uids``/``weights`` are the vector handed to the SDK (which clips, max-upscales and
    quantises to u16 before signing). On a commit-reveal subnet the submission is a timelocked
    commit and ``reveal_round`` its drand round: ``success`` then means the commit was included,
    not that the weights are on chain; the chain opens it at that round, silently dropping it
    if the reveal fails, so only a later read (``Chain.weights_on_chain``) tells.
    """

    uids: tuple[int, ...]
    weights: tuple[float, ...]
    version_key: int
    reveal_round: int | None = None

    @property
    def committed(self) -> bool:
        """True for a timelocked commit (the weights land at ``reveal_round``, if at all)."""
        return self.reveal_round is not None


class SealedCommit(Frozen):
    """One of our timelocked commits the chain still holds sealed: the block that included it, its round."""

    block: int
    reveal_round: int


class OnChainWeights(Frozen):
    """Our row of the subnet's weight matrix and our sealed commits, all as the chain held them at ``block``.

    ``weights`` maps each dest uid to its stored u16 value (max-upscaled when set; a dest whose
    uid was deregistered since is kept with 0, as subtensor zeroes it in place); ``sealed`` are
    our commits the chain has neither opened nor dropped yet; ``drand_round`` is the latest drand
    round published by ``block``'s time, so a commit whose reveal round is at or below it is due;
    ``last_update`` is our ``LastUpdate`` (the block of our last weights or commit; 0: none).
    """

    block: int
    drand_round: int
    uid: int | None  # None when our hotkey is not registered
    weights: dict[int, int]
    sealed: tuple[SealedCommit, ...] = ()
    last_update: int = 0


class WeightRules(Frozen):
    """The subnet's hyperparameters that govern weight setting, read from chain."""

    tempo: int  # blocks between epochs
    weights_rate_limit: int  # blocks between two submissions from one hotkey
    weights_version: int  # the lowest version_key the chain accepts
    min_allowed_weights: int
    max_weight_share: float  # largest share one uid may receive (max_weights_limit / 65535)
    commit_reveal: bool  # submissions are drand-timelocked commits
    block_seconds: float  # seconds per block (12 on finney)
    reveal_period_epochs: int = 1  # epochs from a commit to its reveal


class ChainCommitment(Frozen):
    """A hotkey's commitment (the Commitments pallet) as the chain held it at block ``read_at``.

    ``text`` is the committed bytes as the SDK reads them (utf-8, else ``0x`` hex); ``block`` is
    where this version was published (each new commitment replaces the hotkey's last).
    """

    hotkey: str
    text: str
    block: int
    read_at: int


class Chain(Protocol):
    """The chain as the validator and miner use it; every call has a timeout.

    Transport failures raise ``neurons.errors.ChainUnavailable`` (retry on the next tick);
    chain refusals come back as a ``Submission`` with ``success=False``.
    """

    @property
    def hotkey(self) -> str:
        """Our own hotkey (ss58)."""
        ...

    @property
    def netuid(self) -> int:
        """The subnet this chain client works on."""
        ...

    async def snapshot(self) -> MetagraphSnapshot:
        """The metagraph at the current block."""
        ...

    async def block(self) -> int:
        """The current block number."""
        ...

    async def weight_rules(self) -> WeightRules:
        """The subnet's weight-setting hyperparameters (rate limit, tempo, version key...)."""
        ...

    async def clock(self) -> ChainClock:
        """The head block's timestamp and the block interval (the validator's clock check)."""
        ...

    async def set_weights(
        self, uids: Sequence[int], weights: Sequence[float], *, version_key: int
    ) -> WeightSubmission:
        """Submit a weight vector (plaintext or timelocked commit, as the subnet requires)."""
        ...

    async def weights_on_chain(self) -> OnChainWeights:
        """Our weights and our commits not yet opened, read at one block (the head's)."""
        ...

    async def serve(self, host: str, port: int) -> Submission:
        """Advertise ``host:port`` (an IP literal) as our endpoint on chain."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


AuthReason = Literal[
    "malformed",  # a btauth header is missing or unparseable
    "unsupported_crypto",  # X-Bittensor-Crypto present: only the default sr25519 is accepted
    "wrong_receiver",  # signed for another hotkey, or for none
    "stale",  # nonce outside the freshness window
    "bad_signature",  # signature does not verify against the claimed hotkey
    "replay",  # this (hotkey, nonce) was already accepted
    "unknown_hotkey",  # caller not registered on the subnet
    "no_permit",  # caller registered but holds no validator permit
    "low_stake",  # caller's stake is below the configured minimum
]
AUTH_REASONS: tuple[AuthReason, ...] = (
    "malformed",
    "unsupported_crypto",
    "wrong_receiver",
    "stale",
    "bad_signature",
    "replay",
    "unknown_hotkey",
    "no_permit",
    "low_stake",
)


class AuthFailure(NeuronError):
    """A signed request was refused; ``reason`` is one of ``AUTH_REASONS`` (safe to return)."""

    def __init__(self, reason: AuthReason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason: AuthReason = reason


Admission = Callable[[str], AuthReason | None]
"""Decides whether an authenticated hotkey may call us: None admits, a reason refuses."""


def validator_admission(snapshot: MetagraphSnapshot, *, min_stake: float = 0.0) -> Admission:
    """An admission rule from one metagraph snapshot: registered, validator permit, enough stake.

    The subnet owner's hotkey is admitted without permit or stake, as subtensor lets it set
    weights without either.

    Args:
        snapshot: the metagraph the decision is taken against (take one per request or per sync).
        min_stake: minimum total stake (alpha) a caller must hold.

    Returns:
        A function mapping a caller hotkey to None (admit) or the reason it is refused.
    """
    by_hotkey = {neuron.hotkey: neuron for neuron in snapshot.neurons}

    def admit(hotkey: str) -> AuthReason | None:
        neuron = by_hotkey.get(hotkey)
        if neuron is None:
            return "unknown_hotkey"
        if hotkey == snapshot.owner_hotkey:
            return None
        if not neuron.validator_permit:
            return "no_permit"
        if neuron.stake < min_stake:
            return "low_stake"
        return None

    return admit
