"""Round secrets: the hash chain, the commitment text on chain, and what a reveal proves."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from arena.world.commitment import (
    CHAIN_LENGTH,
    Commitment,
    SecretChain,
    decode,
    encode,
    parse_commitment,
    step,
    steps,
)

KEY = b"k" * 32


def test_the_chain_is_the_documented_function_and_runs_backwards() -> None:
    chain = SecretChain(KEY, netuid=11, anchor_round=100)
    top = hmac.new(
        KEY, b"arena.round-secret/1" + (11).to_bytes(2, "big") + (100).to_bytes(8, "big"), hashlib.sha256
    ).digest()
    assert step(top) == hashlib.sha256(b"arena.round-secret-step/1" + top).digest()
    last = 100 + CHAIN_LENGTH
    assert chain.secret(last) == top and chain.secret(last - 2) == step(step(top))
    assert chain.anchor() == steps(top, CHAIN_LENGTH)
    assert step(chain.secret(101)) == chain.anchor()  # the first round after the anchor
    assert chain.secret(105) == step(chain.secret(106))  # an earlier secret follows from a later one
    assert len({chain.secret(k) for k in range(101, 111)}) == 10
    for outside in (100, 99, last + 1):
        assert not chain.covers(outside)
        with pytest.raises(ValueError, match="not on the chain"):
            chain.secret(outside)
    # Another key, subnet or anchor round is another chain.
    others = {
        SecretChain(b"K" * 32, 11, 100).anchor(),
        SecretChain(KEY, 12, 100).anchor(),
        SecretChain(KEY, 11, 101).anchor(),
    }
    assert chain.anchor() not in others and len(others) == 3
    assert "k" * 8 not in repr(chain)


def test_a_commitment_round_trips_through_its_text_and_fits_one_raw_field() -> None:
    chain = SecretChain(KEY, netuid=11, anchor_round=9_999_000_000)
    anchored = chain.commitment()
    assert parse_commitment(anchored.text()) == anchored and anchored.revealed_round is None
    revealed = chain.commitment(revealed_round=9_999_000_007)
    text = revealed.text()
    assert text.startswith("sa1 9999000000 ") and len(text.encode("ascii")) == 113 <= 128
    assert parse_commitment(text) == revealed
    assert decode(encode(b"\x00" * 32)) == b"\x00" * 32
    for bad in (
        "",
        "sa1",
        "sa2 1 " + encode(KEY),
        "sa1 01 " + encode(KEY),
        f"sa1 1 {encode(KEY)} 2",
        "x" * 200,
    ):
        assert parse_commitment(bad) is None
    assert parse_commitment("sa1 1 " + encode(KEY)[:-1] + "_") is None  # not the encoding of 32 bytes


def test_a_reveal_proves_every_earlier_round_and_no_later_one() -> None:
    chain = SecretChain(KEY, netuid=11, anchor_round=20)
    record = parse_commitment(chain.commitment(revealed_round=25).text())
    assert record is not None and record.reveal_holds()
    assert [record.secret(k) for k in range(21, 26)] == [chain.secret(k) for k in range(21, 26)]
    assert record.secret(26) is None and record.secret(20) is None  # the future stays hidden
    forged = Commitment(20, chain.anchor(), 25, b"\x07" * 32)
    assert not forged.reveal_holds() and forged.secret(23) is None
    other = Commitment(20, SecretChain(b"K" * 32, 11, 20).anchor(), 25, chain.secret(25))
    assert not other.reveal_holds()  # a reveal must hash down to the anchor it was committed with
    assert Commitment(20, chain.anchor()).secret(21) is None  # nothing revealed yet
