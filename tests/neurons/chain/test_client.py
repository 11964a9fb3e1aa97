"""The chain adapter through the real bittensor SDK, with the local chain injected as its substrate."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

import bittensor as bt
import pytest
from bittensor import http_auth

from neurons.chain.chaintypes import AuthFailure, validator_admission
from neurons.chain.client import BittensorChain, open_chain
from neurons.chain.local.records import Outcome
from neurons.chain.local.sdk import LocalSdkSubstrate
from neurons.chain.local.state import LocalChain, read_commits, read_extrinsics, read_weights
from neurons.chain.local.substrate import LocalCall
from neurons.chain.signing import make_nonce_store, sign_request, verify_request
from neurons.chain.wallets import load_wallet
from neurons.errors import ChainUnavailable, LocalChainError
from tests.neurons.conftest import NETUID, LocalNet

U16_MAX = 65535


def quantised(weights: list[float]) -> list[int]:
    """The SDK's documented quantisation: max-upscale to u16, round, drop zeros."""
    top = max(weights)
    return [round(w / top * U16_MAX) for w in weights if round(w / top * U16_MAX) > 0]


# ---------------------------------------------------------------------------- metagraph


async def test_snapshot_decodes_the_subnet(net: LocalNet) -> None:
    snapshot = await net.chain("validator").snapshot()

    assert snapshot.netuid == NETUID
    assert [n.uid for n in snapshot.neurons] == [0, 1, 2, 3]
    assert [n.hotkey for n in snapshot.neurons] == [
        net.hotkey(name) for name in ("owner", "validator", "miner1", "miner2")
    ]
    assert snapshot.neurons[1].coldkey == net.wallets["validator"].coldkeypub.ss58_address
    assert [n.stake for n in snapshot.neurons] == [0.0, 1000.0, 10.0, 0.0]
    assert [n.validator_permit for n in snapshot.neurons] == [False, True, False, False]
    assert all(n.endpoint is None and n.last_update == 0 for n in snapshot.neurons)
    assert snapshot.owner_uid == 0 and snapshot.owner_hotkey == net.hotkey("owner")
    assert snapshot.block == await net.chain("miner1").block()


async def test_blocks_advance_with_wall_time(net: LocalNet) -> None:
    chain = net.chain("validator")
    first = await chain.block()
    net.clock.advance(12.0 * 3)
    assert await chain.block() == first + 3
    assert (await chain.snapshot()).block == first + 3


async def test_a_block_hash_is_read_only_once_the_block_exists(net: LocalNet) -> None:
    chain = net.chain("validator")
    head = await chain.block()
    assert await chain.block_hash(head + 2) is None  # not produced yet: no seed can come from it
    past = await chain.block_hash(head)
    assert past is not None and past.startswith("0x") and len(past) == 2 + 64
    assert await net.chain("miner1").block_hash(head) == past  # every client reads the same hash
    net.clock.advance(12.0 * 2)
    future = await chain.block_hash(head + 2)
    assert future is not None and future != past


class _Unfinal(LocalSdkSubstrate):
    """A node whose finality lags its best head by three blocks (as GRANDPA lags on finney)."""

    async def finalized_block_number(self) -> int:
        return await self.block_number() - 3


async def test_a_seed_block_hash_is_read_only_once_the_block_is_final(net: LocalNet) -> None:
    substrate = _Unfinal(LocalChain(net.path, clock=net.clock))
    chain = BittensorChain(substrate, net.wallets["validator"], NETUID, connect=False)
    net.clock.advance(12.0 * 10)
    head = await chain.block()
    # A block the best head holds but finality does not may still be reorganised away: two
    # validators could then seed different worlds from one round.
    assert await chain.block_hash(head) is None
    assert await chain.block_hash(head - 2) is None
    assert await chain.block_hash(head - 3) == await substrate.block_hash(head - 3)


async def test_a_commitment_is_published_through_the_sdk_and_read_at_any_block(net: LocalNet) -> None:
    chain = net.chain("validator")
    assert await chain.commitment(chain.hotkey) is None
    first = await chain.set_commitment("sa1 first")
    assert first.success and first.block is not None
    net.clock.advance(12.0 * 2)
    second = await chain.set_commitment("sa1 second")
    assert second.success and second.block == first.block + 2
    net.clock.advance(12.0)  # the block it lands in is made
    now = await net.chain("miner1").commitment(chain.hotkey)  # anyone reads it
    assert now is not None and (now.text, now.block) == ("sa1 second", second.block)
    then = await chain.commitment(chain.hotkey, block=first.block + 1)  # as an archive node answers
    assert then is not None and (then.text, then.block, then.read_at) == (
        "sa1 first",
        first.block,
        first.block + 1,
    )
    assert await chain.commitment(chain.hotkey, block=first.block - 1) is None
    refused = await net.chain("stranger").set_commitment("sa1 not registered")
    assert not refused.success and refused.code == "not_authorized"  # the SDK classes AccountNotAllowedCommit
    with pytest.raises(ValueError, match="128 bytes"):
        await chain.set_commitment("x" * 129)


async def test_weight_rules_are_read_from_chain(make_net: Callable[..., LocalNet]) -> None:
    net = make_net(
        tempo=30, weights_rate_limit=7, weights_version=3, min_allowed_weights=2, reveal_period_epochs=2
    )

    rules = await net.chain("validator").weight_rules()

    assert (rules.tempo, rules.weights_rate_limit, rules.weights_version) == (30, 7, 3)
    assert rules.min_allowed_weights == 2 and rules.max_weight_share == 1.0
    assert rules.commit_reveal and rules.block_seconds == 12.0  # on by default, as on finney
    assert rules.reveal_period_epochs == 2


async def test_served_endpoint_appears_in_the_metagraph(net: LocalNet) -> None:
    miner = net.chain("miner1")

    served = await miner.serve("203.0.113.7", 8091)
    again = await miner.serve("203.0.113.7", 8091)

    assert served.success and served.block is not None
    assert again.success and again.message == "already served"
    assert len(read_extrinsics(net.path, call="SubtensorModule.serve_axon")) == 1
    neuron = (await miner.snapshot()).by_hotkey(net.hotkey("miner1"))
    assert neuron is not None and neuron.endpoint == "http://203.0.113.7:8091"


async def test_serve_refuses_a_hostname_and_an_unregistered_hotkey(net: LocalNet) -> None:
    refused = await net.chain("miner1").serve("localhost", 8091)
    stranger = await net.chain("stranger").serve("10.0.0.5", 8091)

    assert not refused.success and refused.code == "invalid_argument"
    assert not stranger.success and stranger.code == "not_registered"


async def test_a_loopback_axon_is_refused_by_the_pool_unless_the_local_network_is_in_use(
    make_net: Callable[..., LocalNet],
) -> None:
    refused = await make_net(loopback_axons=False).chain("miner1").serve("127.0.0.1", 8091)
    on_one_host = make_net(loopback_axons=True)
    served = await on_one_host.chain("miner1").serve("127.0.0.1", 8091)

    assert not refused.success and refused.block is None and refused.code == "invalid_argument"
    assert served.success
    neuron = (await on_one_host.chain("miner1").snapshot()).by_hotkey(on_one_host.hotkey("miner1"))
    assert neuron is not None and neuron.endpoint == "http://127.0.0.1:8091"


async def test_serving_inside_the_rate_limit_never_reaches_a_block(make_net: Callable[..., LocalNet]) -> None:
    net = make_net(serving_rate_limit=50)
    miner = net.chain("miner1")
    first = await miner.serve("203.0.113.7", 8091)

    moved = await miner.serve("203.0.113.8", 8091)
    net.clock.advance(12.0 * 50)
    later = await miner.serve("203.0.113.8", 8091)

    assert first.success and later.success, later.message
    assert not moved.success and moved.code == "rate_limited" and moved.block is None
    assert len(read_extrinsics(net.path)) == 2  # the refusal is in no block and took no nonce


# ---------------------------------------------------------------------------- weights


async def test_set_weights_lands_the_sdk_quantised_vector(make_net: Callable[..., LocalNet]) -> None:
    net = make_net(commit_reveal=False)
    weights = [0.2, 0.5, 0.3]

    submission = await net.chain("validator").set_weights([0, 2, 3], weights, version_key=0)

    assert submission.success, submission.message
    assert submission.block == await net.chain("validator").block() + 1  # the block after the head
    assert submission.uids == (0, 2, 3) and submission.weights == (0.2, 0.5, 0.3)
    assert read_weights(net.path) == {1: dict(zip([0, 2, 3], quantised(weights), strict=True))}
    snapshot = await net.chain("validator").snapshot()
    assert snapshot.neurons[1].last_update == submission.block


async def test_weights_above_max_weight_limit_are_clipped_by_the_sdk(
    make_net: Callable[..., LocalNet],
) -> None:
    net = make_net(max_weights_limit=U16_MAX // 2, commit_reveal=False)

    submission = await net.chain("validator").set_weights([0, 2, 3], [0.9, 0.05, 0.05], version_key=0)

    assert submission.success, submission.message
    stored = read_weights(net.path)[1]
    # The chain accepted it: the largest share is within the limit after the SDK's clip.
    assert max(stored.values()) / sum(stored.values()) <= (U16_MAX // 2) / U16_MAX + 1e-4


async def test_second_set_weights_inside_the_rate_limit_is_refused_not_raised(
    make_net: Callable[..., LocalNet],
) -> None:
    net = make_net(weights_rate_limit=10, commit_reveal=False)
    chain = net.chain("validator")
    first = await chain.set_weights([2, 3], [1.0, 1.0], version_key=0)  # lands in the block after the head
    net.clock.advance(12.0 * 10)  # 9 blocks after it

    second = await chain.set_weights([2, 3], [1.0, 0.0], version_key=0)

    assert first.success
    assert not second.success and second.code == "rate_limited" and "rate limit" in second.message
    assert second.weights == (1.0, 0.0)
    assert read_weights(net.path) == {1: {2: U16_MAX, 3: U16_MAX}}  # the first vector still stands
    net.clock.advance(12.0)
    third = await chain.set_weights([2, 3], [1.0, 0.5], version_key=0)
    assert third.success
    assert read_weights(net.path) == {1: {2: U16_MAX, 3: round(U16_MAX / 2)}}


async def test_unregistered_hotkey_is_refused(net: LocalNet) -> None:
    submission = await net.chain("stranger").set_weights([2], [1.0], version_key=0)

    assert not submission.success and submission.code == "not_registered"
    assert read_extrinsics(net.path) == []  # caught by the SDK's pre-flight, nothing was signed


async def test_too_few_weights_are_refused(make_net: Callable[..., LocalNet]) -> None:
    net = make_net(min_allowed_weights=3)

    submission = await net.chain("validator").set_weights([2, 3, 0], [1.0, 1.0, 0.0], version_key=0)

    assert not submission.success and submission.code == "invalid_argument"
    assert "at least 3 weights" in submission.message
    assert read_weights(net.path) == {}


async def test_weights_without_a_validator_permit_are_refused_on_chain(
    make_net: Callable[..., LocalNet],
) -> None:
    net = make_net(commit_reveal=False)
    submission = await net.chain("miner1").set_weights([2, 3], [0.5, 0.5], version_key=0)

    assert not submission.success and submission.code == "not_authorized"
    [record] = read_extrinsics(net.path)
    assert record.error == "NeuronNoValidatorPermit" and record.signer == net.hotkey("miner1")


async def test_version_key_is_passed_through_and_checked_on_chain(make_net: Callable[..., LocalNet]) -> None:
    net = make_net(weights_version=5, weights_rate_limit=0, commit_reveal=False)
    chain = net.chain("validator")

    old = await chain.set_weights([2, 3], [1.0, 1.0], version_key=4)
    new = await chain.set_weights([2, 3], [1.0, 1.0], version_key=7)

    assert not old.success and old.code == "invalid_argument"
    assert new.success and new.version_key == 7
    records = read_extrinsics(net.path, call="SubtensorModule.set_mechanism_weights")
    assert [(r.params["version_key"], r.error) for r in records] == [
        (4, "IncorrectWeightVersionKey"),
        (7, None),
    ]


async def test_commit_reveal_subnet_gets_a_timelocked_commit_revealed_at_its_round(net: LocalNet) -> None:
    chain = net.chain("validator")

    submission = await chain.set_weights([0, 2, 3], [0.2, 0.5, 0.3], version_key=0)
    sealed = await chain.weights_on_chain()
    net.clock.advance(12.0 * 2 * 21)  # two epochs of tempo 20: past the reveal round
    opened = await chain.weights_on_chain()

    assert submission.success and submission.committed, submission.message
    assert isinstance(submission.reveal_round, int) and submission.reveal_round > sealed.drand_round
    [record] = read_extrinsics(net.path)
    assert record.call == "SubtensorModule.commit_timelocked_mechanism_weights"
    assert record.params["reveal_round"] == submission.reveal_round
    assert len(record.params["commit"]) > 100  # the encrypted payload, not the plain vector
    assert sealed.weights == {} and [c.reveal_round for c in sealed.sealed] == [submission.reveal_round]
    assert [c.block for c in sealed.sealed] == [submission.block] and sealed.last_update == submission.block
    assert opened.drand_round >= submission.reveal_round and opened.sealed == ()
    # The revealed vector is the one a plain submission would have stored.
    assert opened.weights == dict(zip([0, 2, 3], quantised([0.2, 0.5, 0.3]), strict=True))
    [commit] = read_commits(net.path, clock=net.clock)
    assert commit.status == "revealed" and commit.revealed_block is not None
    assert commit.revealed_block > (submission.block or 0)


@pytest.mark.parametrize("reveal_period", [1, 2])
async def test_a_commit_at_any_block_of_three_epochs_opens_where_the_sdk_timed_it(
    make_net: Callable[..., LocalNet], reveal_period: int
) -> None:
    """The probe of issue 27: commit at every block of three epochs (12 s blocks), early and late in
    each block; the SDK times every round by the chain's epoch schedule, so none expires."""
    net = make_net(weights_rate_limit=0, reveal_period_epochs=reveal_period)
    chain = net.chain("validator")
    config = LocalChain(net.path, clock=net.clock).config
    start = config.block_at(net.clock.now) + 1
    committed = []
    for block in range(start, start + 3 * config.tempo):
        net.clock.now = config.block_time(block) + (0.5 if block % 2 else 11.5)
        submission = await chain.set_weights([0, 2, 3], [0.2, 0.5, 0.3], version_key=0)
        assert submission.success and submission.committed, submission.message
        committed.append(submission)
    net.clock.advance(12.0 * (reveal_period + 2) * config.tempo)

    commits = read_commits(net.path, clock=net.clock)

    assert len(commits) == 3 * config.tempo
    assert [c.block for c in commits] == [s.block for s in committed]
    assert [(c.block, c.status, c.error) for c in commits if c.status != "revealed"] == []


class TickingClock:
    """Wall time that moves ``tick`` seconds each time it is read, once started: time passes mid-read."""

    def __init__(self, now: float) -> None:
        self.now, self.tick = now, 0.0

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


async def test_our_weights_commits_and_the_drand_round_are_read_at_one_block(net: LocalNet) -> None:
    """Issue 27, item 8: the head, our row, our sealed commits and the time were read at different
    blocks, so a reveal landing mid-read showed a commit gone and its weights not yet there."""
    config = LocalChain(net.path).config
    clock = TickingClock(net.clock.now)
    chain = open_chain(
        "local",
        NETUID,
        wallet_name="validator",
        wallet_hotkey="default",
        wallet_path=net.wallets_dir,
        local_chain_path=net.path,
        clock=clock,
    )
    submission = await chain.set_weights([0, 2, 3], [0.2, 0.5, 0.3], version_key=0)
    [commit] = read_commits(net.path, clock=clock)
    opens = config.first_block_at(commit.reveal_at)
    clock.now = config.block_time(opens) - 1.0  # a second before the block that opens it
    clock.tick = 0.25

    seen = await chain.weights_on_chain()

    assert submission.success and submission.committed
    stamp = config.block_time(seen.block)
    assert seen.drand_round == bt.timelock.current_round(stamp)  # the time of the block read
    sealed = submission.reveal_round in [c.reveal_round for c in seen.sealed]
    assert sealed == (seen.weights == {})  # sealed and no weights, or opened and its weights
    assert sealed == (seen.block < opens)  # as the chain stood at the block read


async def test_malformed_weight_vectors_are_a_caller_bug(net: LocalNet) -> None:
    chain = net.chain("validator")
    with pytest.raises(ValueError):
        await chain.set_weights([1, 2], [1.0], version_key=0)
    with pytest.raises(ValueError):
        await chain.set_weights([1, 2], [1.0, float("nan")], version_key=0)


# ---------------------------------------------------------------------------- processes and failures


async def test_two_processes_share_one_local_chain(net: LocalNet, tmp_path: Any) -> None:
    chain = net.chain("validator")
    before = await chain.snapshot()
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from neurons.chain.wallets import create_wallet, register_wallet
        wallet = create_wallet(Path({str(tmp_path)!r}) / "w", "late")
        print(register_wallet(Path({str(net.path)!r}), wallet, stake=3.0, validator_permit=True))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )

    after = await chain.snapshot()
    assert int(done.stdout.strip()) == len(before.neurons)
    late = load_wallet("late", "default", tmp_path / "w")
    neuron = after.by_hotkey(late.hotkeypub.ss58_address)
    assert neuron is not None and neuron.stake == 3.0 and neuron.validator_permit


class HungSubstrate(LocalSdkSubstrate):
    """A substrate whose node never answers."""

    async def runtime_call(
        self, api: str, method: str, params: list[Any], block_hash: str | None = None
    ) -> Any:
        await asyncio.Event().wait()

    async def block_number(self) -> int:
        await asyncio.Event().wait()
        return 0


async def test_a_hung_node_times_out_with_a_typed_error(net: LocalNet) -> None:
    substrate = HungSubstrate(LocalChain(net.path))
    chain = BittensorChain(
        substrate, net.wallets["validator"], NETUID, read_timeout=0.2, write_timeout=0.2, connect=False
    )

    with pytest.raises(ChainUnavailable) as failure:
        await chain.snapshot()
    with pytest.raises(ChainUnavailable):
        await chain.set_weights([2], [1.0], version_key=0)

    assert failure.value.kind == "timeout" and failure.value.call == "metagraph"
    assert chain.errors == {"metagraph": 1, "set_weights": 1}


class NeverIncludes(LocalSdkSubstrate):
    """A node that takes the first extrinsic (its nonce is signed and cached) and never answers."""

    hung = False

    async def dispatch(
        self, call: LocalCall, signer: str, *, nonce: int, sealed: dict[str, Any] | None = None
    ) -> Outcome:
        if not self.hung:
            self.hung = True
            await asyncio.Event().wait()
        return await super().dispatch(call, signer, nonce=nonce, sealed=sealed)


async def test_a_submit_cut_off_by_its_timeout_leaves_no_future_nonce(
    make_net: Callable[..., LocalNet],
) -> None:
    net = make_net(commit_reveal=False, weights_rate_limit=0)
    substrate = NeverIncludes(LocalChain(net.path, clock=net.clock))
    chain = BittensorChain(substrate, net.wallets["validator"], NETUID, write_timeout=0.5, connect=False)

    with pytest.raises(ChainUnavailable) as cut_off:
        await chain.set_weights([2, 3], [1.0, 1.0], version_key=0)
    after = await chain.set_weights([2, 3], [1.0, 1.0], version_key=0)

    assert cut_off.value.kind == "timeout"
    # The SDK's cache held the hung call's nonce; left there, this call would carry a future one.
    assert after.success, after.message
    assert [r.error for r in read_extrinsics(net.path)] == [None]


async def test_an_unreachable_node_is_a_typed_error(net: LocalNet) -> None:
    substrate = bt.RpcSubstrate("ws://127.0.0.1:9", fallback_endpoints=[], archive_endpoints=[])
    chain = BittensorChain(
        substrate, net.wallets["validator"], NETUID, network="ws://127.0.0.1:9", read_timeout=5.0
    )

    with pytest.raises(ChainUnavailable) as failure:
        await chain.block()

    assert failure.value.kind in ("connection", "timeout")
    assert chain.errors["block"] == 1


def test_a_chain_file_of_another_subnet_or_none_is_refused(net: LocalNet, tmp_path: Any) -> None:
    options = {"wallet_name": "validator", "wallet_hotkey": "default", "wallet_path": net.wallets_dir}
    with pytest.raises(LocalChainError):
        open_chain("local", NETUID + 1, local_chain_path=net.path, **options)
    with pytest.raises(LocalChainError):
        open_chain("local", NETUID, local_chain_path=tmp_path / "absent.db", **options)
    assert not (tmp_path / "absent.db").exists()
    with pytest.raises(ValueError):
        open_chain("local", NETUID, **options)
    with pytest.raises(FileNotFoundError):
        open_chain("local", NETUID, local_chain_path=net.path, **{**options, "wallet_name": "nobody"})


# ---------------------------------------------------------------------------- signed requests

BODY = b'{"task": "find a kettle"}'


def signed(
    net: LocalNet, sender: str = "validator", *, receiver: str = "miner1", body: bytes = BODY
) -> dict[str, str]:
    return sign_request(
        net.wallets[sender], method="POST", path="/v1/tasks", body=body, receiver=net.hotkey(receiver)
    )


def verify(net: LocalNet, headers: dict[str, str], store: Any, *, body: bytes = BODY, **options: Any) -> str:
    return verify_request(
        headers,
        body,
        method="POST",
        path="/v1/tasks",
        self_hotkey=net.hotkey("miner1"),
        nonce_store=store,
        **options,
    )


def reason_of(call: Callable[[], object]) -> str:
    with pytest.raises(AuthFailure) as failure:
        call()
    return failure.value.reason


def test_a_signed_request_verifies(net: LocalNet, tmp_path: Any) -> None:
    store = make_nonce_store(tmp_path / "nonces.db")
    assert verify(net, signed(net), store) == net.hotkey("validator")


def test_each_auth_failure_has_its_reason(net: LocalNet) -> None:
    store = make_nonce_store()
    headers = signed(net)
    stale = http_auth.sign(
        net.wallets["validator"].hotkey,
        method="POST",
        path="/v1/tasks",
        body=BODY,
        receiver_ss58=net.hotkey("miner1"),
        nonce_ns=time.time_ns() - 60 * 10**9,
    )
    unsigned = {k: v for k, v in headers.items() if k != http_auth.HEADER_SIGNATURE}

    assert reason_of(lambda: verify(net, headers, store, body=BODY + b" ")) == "bad_signature"
    assert reason_of(lambda: verify(net, stale, store)) == "stale"
    assert reason_of(lambda: verify(net, signed(net, receiver="miner2"), store)) == "wrong_receiver"
    assert reason_of(lambda: verify(net, unsigned, store)) == "malformed"
    assert (
        reason_of(lambda: verify(net, {**headers, http_auth.HEADER_CRYPTO: "ed25519"}, store))
        == "unsupported_crypto"
    )
    assert verify(net, headers, store) == net.hotkey("validator")
    assert reason_of(lambda: verify(net, headers, store)) == "replay"


async def test_admission_refuses_unknown_unpermitted_and_poor_callers(net: LocalNet) -> None:
    store = make_nonce_store()
    admit = validator_admission(await net.chain("miner1").snapshot(), min_stake=100.0)

    assert reason_of(lambda: verify(net, signed(net, "stranger"), store, admit=admit)) == "unknown_hotkey"
    assert reason_of(lambda: verify(net, signed(net, "miner2"), store, admit=admit)) == "no_permit"
    assert verify(net, signed(net, "validator"), store, admit=admit) == net.hotkey("validator")
    poorer = validator_admission(await net.chain("miner1").snapshot(), min_stake=5000.0)
    assert reason_of(lambda: verify(net, signed(net, "validator"), store, admit=poorer)) == "low_stake"
    # The owner sets weights without permit or stake on chain, so miners admit it the same way.
    assert verify(net, signed(net, "owner"), store, admit=poorer) == net.hotkey("owner")


def test_a_refused_caller_does_not_burn_its_nonce(net: LocalNet) -> None:
    store = make_nonce_store()
    headers = signed(net)

    assert reason_of(lambda: verify(net, headers, store, body=b"tampered")) == "bad_signature"
    assert reason_of(lambda: verify(net, headers, store, admit=lambda hotkey: "no_permit")) == "no_permit"
    assert verify(net, headers, store) == net.hotkey("validator")
