"""The validator's self-check: may it query miners at all? Registered, permitted, chain reachable, clock.

Miners refuse a validator whose own state is wrong (``no_permit``, ``unknown_hotkey``, ``stale``
for a clock off by more than their freshness window), and those refusals must never become
miner zeros. So before each round, and periodically, the validator checks itself against the
chain, and runs no round while the check fails (``neurons.validator.process``).

The clock is checked against the head block's timestamp (the Timestamp pallet's ``Now``). One
reading bounds our offset to an interval one block wide: the head block was made at or before
the true time, and the next one is not due before ``timestamp + block_seconds`` (plus a little
for propagation). The check fails only when the whole interval lies beyond ``max_clock_skew``,
so it never accuses a good clock; the quorum of miners' ``stale`` replies in a round
(``neurons.validator.rounds``) catches an offset smaller than a block.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from neurons import metrics
from neurons.chain.chaintypes import Chain, ChainClock, MetagraphSnapshot
from neurons.errors import ChainUnavailable

logger = logging.getLogger(__name__)

SelfCheckCause = Literal["chain_unreachable", "not_registered", "no_permit", "clock_skew"]
SELF_CHECK_CAUSES: tuple[SelfCheckCause, ...] = (
    "chain_unreachable",
    "not_registered",
    "no_permit",
    "clock_skew",
)

DEFAULT_MAX_CLOCK_SKEW = 2.0
"""Seconds: a miner accepts a nonce at most 2 s in its future (``docs/protocol.md``)."""
PROPAGATION_SECONDS = 1.0
"""How late a new block may reach us after its timestamp; widens the clock interval, never narrows it."""


@dataclass(frozen=True)
class SelfCheck:
    """The outcome: ``ok``, or the first failing ``cause`` with an operator-facing ``detail``."""

    ok: bool
    cause: SelfCheckCause | None = None
    detail: str = ""


def offset_bounds(clock: ChainClock, wall: float) -> tuple[float, float]:
    """The interval our clock's offset from chain time lies in (seconds; positive: we are ahead)."""
    since_head = wall - clock.timestamp
    return since_head - clock.block_seconds - PROPAGATION_SECONDS, since_head


def check_identity(snapshot: MetagraphSnapshot, hotkey: str) -> SelfCheck:
    """Registered on the subnet, and holding a validator permit or owning the subnet."""
    neuron = snapshot.by_hotkey(hotkey)
    if neuron is None:
        return SelfCheck(
            False, "not_registered", f"hotkey {hotkey} is not registered on subnet {snapshot.netuid}"
        )
    if not neuron.validator_permit and hotkey != snapshot.owner_hotkey:
        where = f"uid {neuron.uid} on subnet {snapshot.netuid}"
        return SelfCheck(False, "no_permit", f"{where} holds no validator permit (stake {neuron.stake:g})")
    return SelfCheck(True)


def check_clock(clock: ChainClock, wall: float, max_skew: float) -> SelfCheck:
    """Fail when our clock is provably more than ``max_skew`` seconds off the chain's."""
    low, high = offset_bounds(clock, wall)
    if low > max_skew:
        return SelfCheck(
            False, "clock_skew", f"the clock is at least {low:.1f}s ahead of the chain's block time"
        )
    if high < -max_skew:
        return SelfCheck(
            False, "clock_skew", f"the clock is at least {-high:.1f}s behind the chain's block time"
        )
    return SelfCheck(True)


async def run_self_check(
    chain: Chain, *, max_clock_skew: float = DEFAULT_MAX_CLOCK_SKEW, wall: Callable[[], float] = time.time
) -> SelfCheck:
    """Check ourselves against the chain; export and log the outcome (never raises for the chain)."""
    try:
        snapshot = await chain.snapshot()
        outcome = check_identity(snapshot, chain.hotkey)
        if outcome.ok:
            outcome = check_clock(await chain.clock(), wall(), max_clock_skew)
    except ChainUnavailable as exc:
        outcome = SelfCheck(False, "chain_unreachable", f"the chain cannot be read ({exc})")
    metrics.SELF_CHECK_OK.set(1 if outcome.ok else 0)
    if outcome.cause is not None:
        metrics.SELF_CHECK_FAILURES.labels(outcome.cause).inc()
        logger.error("self_check_failed cause=%s detail=%s", outcome.cause, outcome.detail)
    return outcome
