"""The round seed: which world a block falls in, and the seed from the seed block's hash and the secret."""

from __future__ import annotations

import hashlib

import pytest

from arena.world.seed import WorldRound, round_seed, world_round_at

HASH = "0x" + "ab" * 32
SECRET = bytes(range(32))


def test_a_block_falls_in_the_latest_world_whose_seed_block_exists() -> None:
    assert world_round_at(2, period=10, delay=3) is None  # no seed block yet
    assert world_round_at(3, period=10, delay=3) == WorldRound(index=0, start_block=0, seed_block=3)
    assert world_round_at(12, period=10, delay=3) == WorldRound(index=0, start_block=0, seed_block=3)
    assert world_round_at(13, period=10, delay=3) == WorldRound(index=1, start_block=10, seed_block=13)
    # Every block between two seed blocks lands on the same world, whatever the caller's cadence.
    assert {world_round_at(b, period=360, delay=3) for b in range(723, 1083)} == {
        WorldRound(index=2, start_block=720, seed_block=723)
    }
    for period, delay in ((0, 0), (5, 5), (5, -1)):
        with pytest.raises(ValueError):
            world_round_at(100, period=period, delay=delay)


def test_the_round_seed_is_the_documented_pure_function() -> None:
    head = b"arena.round-seed/2" + (11).to_bytes(2, "big") + (3).to_bytes(8, "big")
    expected = hashlib.sha256(head + SECRET + bytes.fromhex("ab" * 32)).digest()
    assert round_seed(HASH, netuid=11, round_index=3, secret=SECRET) == expected
    assert round_seed(HASH[2:], netuid=11, round_index=3, secret=SECRET) == expected  # 0x optional
    assert round_seed(bytes.fromhex("ab" * 32), netuid=11, round_index=3, secret=SECRET) == expected
    others = {
        round_seed(HASH, netuid=12, round_index=3, secret=SECRET),
        round_seed(HASH, netuid=11, round_index=4, secret=SECRET),
        round_seed("0x" + "ac" * 32, netuid=11, round_index=3, secret=SECRET),
        round_seed(HASH, netuid=11, round_index=3, secret=b"\x01" * 32),  # another validator's world
    }
    assert expected not in others and len(others) == 4


def test_a_round_seed_refuses_what_is_not_a_hash_or_out_of_range() -> None:
    for bad in ("", "0x", "0xzz"):
        with pytest.raises(ValueError):
            round_seed(bad, netuid=1, round_index=0, secret=SECRET)
    with pytest.raises(ValueError, match="out of range"):
        round_seed(HASH, netuid=1 << 16, round_index=0, secret=SECRET)
    with pytest.raises(ValueError, match="out of range"):
        round_seed(HASH, netuid=1, round_index=-1, secret=SECRET)
    with pytest.raises(ValueError, match="32 bytes"):
        round_seed(HASH, netuid=1, round_index=0, secret=b"short")
