"""The miner's metagraph cache: the last good snapshot, its max age, refreshes that fail or bring news."""

from __future__ import annotations

import pytest

from neurons.chain.chaintypes import MetagraphSnapshot
from neurons.chain.wallets import register_wallet
from neurons.errors import ChainUnavailable
from neurons.miner.metagraph import MetagraphCache, MetagraphUnusable
from tests.neurons.conftest import FakeClock, LocalNet


async def test_the_last_good_snapshot_admits_until_its_max_age_then_expires_with_its_own_reason(
    net: LocalNet,
) -> None:
    clock = FakeClock()
    snapshot = await net.chain("miner1").snapshot()
    answers: list[MetagraphSnapshot | Exception] = [snapshot, ChainUnavailable("metagraph", "timeout", "x")]

    async def fetch() -> MetagraphSnapshot:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    cache = MetagraphCache(fetch, refresh_interval=30.0, max_age=300.0, clock=clock)
    with pytest.raises(MetagraphUnusable) as none_yet:
        cache.current()
    assert await cache.refresh()
    clock.advance(31.0)
    assert not await cache.refresh()  # the chain is down: the previous snapshot is kept
    assert cache.current() is snapshot and cache.age() == 31.0
    clock.advance(270.0)
    with pytest.raises(MetagraphUnusable) as expired:
        cache.current()

    assert none_yet.value.reason == "metagraph_unavailable"
    assert expired.value.reason == "metagraph_expired" and "301s old" in expired.value.detail
    assert not answers


async def test_a_newly_registered_validator_is_admitted_after_the_next_refresh(net: LocalNet) -> None:
    clock = FakeClock()
    chain = net.chain("miner1")
    cache = MetagraphCache(chain.snapshot, refresh_interval=30.0, max_age=300.0, clock=clock)
    await cache.refresh()
    before = cache.current()
    register_wallet(net.path, net.wallets["stranger"], stake=100.0, validator_permit=True)
    assert cache.current().by_hotkey(net.hotkey("stranger")) is None
    await cache.refresh()
    assert cache.current().by_hotkey(net.hotkey("stranger")) is not None
    assert before.by_hotkey(net.hotkey("stranger")) is None
