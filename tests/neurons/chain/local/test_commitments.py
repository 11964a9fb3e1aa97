"""The local chain's Commitments pallet: set_commitment's rules, CommitmentOf and its history."""

from __future__ import annotations

from pathlib import Path

from neurons.chain.local.commitments import MAX_SPACE, MIN_SPACE
from neurons.chain.local.state import LocalChain, create_local_chain, read_extrinsics, register


class Clock:
    def __init__(self, now: float = 5_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _chain(tmp_path: Path, clock: Clock) -> LocalChain:
    create_local_chain(tmp_path / "c.db", 3, owner_hotkey="owner-hk", owner_coldkey="owner-ck", clock=clock)
    register(tmp_path / "c.db", "v", "cv", stake=10.0, validator_permit=True)
    return LocalChain(tmp_path / "c.db", clock=clock)


def _info(text: str) -> dict[str, object]:
    data = text.encode()
    return {"fields": [[{f"Raw{len(data)}": "0x" + data.hex()}]]}


def _commit(chain: LocalChain, signer: str, text: str, **params: object) -> str | None:
    call = {"netuid": 3, "info": _info(text), **params}
    return chain.dispatch(signer, "Commitments", "set_commitment", call).error


def test_a_commitment_replaces_the_last_and_each_version_stays_readable_at_its_block(tmp_path: Path) -> None:
    clock = Clock()
    chain = _chain(tmp_path, clock)
    assert chain.commitment("v") is None
    assert _commit(chain, "v", "first") is None
    first = chain.block() + 1  # a signed call lands in the next block
    assert chain.commitment("v") is None  # not made yet
    clock.now += chain.config.block_seconds * 3
    assert _commit(chain, "v", "second") is None
    clock.now += chain.config.block_seconds
    record = chain.commitment("v")
    assert record == {
        "deposit": 0,
        "block": first + 3,
        "info": {"fields": [{"Raw6": "0x" + b"second".hex()}]},
    }
    assert chain.commitment("v", first + 2) == {
        "deposit": 0,
        "block": first,
        "info": {"fields": [{"Raw5": "0x" + b"first".hex()}]},
    }
    assert chain.commitment("v", first - 1) is None
    assert [hotkey for hotkey, _ in chain.commitments()] == ["v"]
    assert [r.call for r in read_extrinsics(chain.path)] == ["Commitments.set_commitment"] * 2


def test_set_commitment_is_refused_as_the_pallet_refuses_it(tmp_path: Path) -> None:
    clock = Clock()
    chain = _chain(tmp_path, clock)
    assert _commit(chain, "stranger", "hi") == "AccountNotAllowedCommit"  # not registered
    assert _commit(chain, "v", "hi", netuid=4) == "AccountNotAllowedCommit"  # another subnet
    four = {"fields": [{"Raw1": "0x61"}] * 4}
    assert chain.dispatch("v", "Commitments", "set_commitment", {"netuid": 3, "info": four}).error == (
        "TooManyFieldsInCommitmentInfo"
    )
    lying = {"fields": [{"Raw9": "0x61"}]}  # the codec refuses it: no block, no nonce
    outcome = chain.dispatch("v", "Commitments", "set_commitment", {"netuid": 3, "info": lying})
    assert outcome.error == "BadCommitmentInfo" and not outcome.included
    # Each call uses at least MIN_SPACE bytes of the epoch's space.
    allowed = MAX_SPACE // MIN_SPACE
    assert [_commit(chain, "v", f"n{i}") for i in range(allowed)] == [None] * allowed
    assert _commit(chain, "v", "one too many") == "SpaceLimitExceeded"
    clock.now += chain.config.block_seconds * (
        chain.config.tempo + 1
    )  # the next epoch: the space is free again
    assert _commit(chain, "v", "again") is None
