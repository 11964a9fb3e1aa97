"""The validator's self-check against the local chain: registered, permit or owner, reachable, clock."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from neurons.chain.chaintypes import ChainClock
from neurons.errors import ChainUnavailable
from neurons.validator.selfcheck import check_clock, offset_bounds, run_self_check
from tests.neurons.conftest import LocalNet


def gauge() -> float | None:
    return REGISTRY.get_sample_value("arena_validator_self_check_ok")


@pytest.mark.parametrize(
    ("name", "cause"),
    [("validator", None), ("owner", None), ("miner1", "no_permit"), ("stranger", "not_registered")],
)
async def test_identity_is_read_from_the_chain(net: LocalNet, name: str, cause: str | None) -> None:
    chain = net.chain(name)
    try:
        outcome = await run_self_check(chain, wall=net.clock)
    finally:
        await chain.close()
    assert outcome.cause == cause and outcome.ok is (cause is None)
    assert gauge() == (1.0 if cause is None else 0.0)
    if cause is not None:
        assert outcome.detail


@pytest.mark.parametrize(
    ("offset", "ok"), [(0.0, True), (1.5, True), (-1.5, True), (30.0, False), (-30.0, False)]
)
async def test_the_clock_is_checked_against_the_head_blocks_timestamp(
    net: LocalNet, offset: float, ok: bool
) -> None:
    chain = net.chain("validator")
    try:
        outcome = await run_self_check(chain, wall=lambda: net.clock() + offset)
    finally:
        await chain.close()
    assert outcome.ok is ok and (ok or outcome.cause == "clock_skew")


def test_one_reading_bounds_the_offset_to_one_block_and_never_accuses_a_good_clock() -> None:
    head = ChainClock(timestamp=1000.0, block_seconds=12.0)
    for since_block in (0.0, 5.0, 11.9):  # a clock exactly right, read anywhere within a block
        low, high = offset_bounds(head, 1000.0 + since_block)
        assert low <= 0.0 <= high
        assert check_clock(head, 1000.0 + since_block, 2.0).ok
    assert not check_clock(head, 1000.0 + 16.0, 2.0).ok  # at least 3 s ahead
    assert not check_clock(head, 1000.0 - 3.0, 2.0).ok  # before the head block was made


class Down:
    hotkey = "5Me"

    async def snapshot(self) -> None:
        raise ChainUnavailable("metagraph", "timeout", "no answer within 30s")


async def test_an_unreachable_chain_fails_the_check() -> None:
    outcome = await run_self_check(Down())  # type: ignore[arg-type]
    assert (outcome.ok, outcome.cause) == (False, "chain_unreachable") and "cannot be read" in outcome.detail
