"""The weights pass on the local chain: ordering, burn, hotkey keying, cadence, refusals, records, metrics,
the chain's weight limit, and commit-reveal (commit, reveal at its round, verification, a missing reveal)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from bittensor import timelock
from prometheus_client import REGISTRY
from sqlalchemy.orm import Session, sessionmaker

from judging.scores import ScorePolicy
from judging.types import Judgment, OutcomeScores, Versions
from neurons.chain.chaintypes import WeightRules
from neurons.chain.client import BittensorChain
from neurons.chain.local.records import Outcome
from neurons.chain.local.sdk import LocalSdkSubstrate
from neurons.chain.local.state import LocalChain, read_commits, read_extrinsics, read_weights, replace_neuron
from neurons.chain.local.substrate import LocalCall
from neurons.chain.wallets import register_wallet
from neurons.errors import ChainUnavailable
from neurons.validator.weights import cap_shares, plan_weights, weight_limit_warning, weights_pass
from storage import repository
from storage.records import EpisodeRecord
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.rig import make_sessions
from tests.storage.factories import T0, make_task

POLICY = ScorePolicy(window=16, burn_share=0.1)


def store_scores(sessions: sessionmaker[Session], scores: Mapping[str, Sequence[float]]) -> None:
    """Store one judged episode per score, for each hotkey."""
    task = make_task(1)
    with sessions() as session:
        repository.save_tasks(session, tasks=[task])
        for hotkey, values in scores.items():
            for i, value in enumerate(values):
                episode_id = f"ep-{hotkey[:10]}-{i}"
                judgment = Judgment(
                    task_id=task.task_id,
                    episode_id=episode_id,
                    miner_hotkey=hotkey,
                    success=value >= 0.5,
                    score=value,
                    outcome=OutcomeScores(rule=value, gt=0.0, product=1.0),
                    checks=(),
                    versions=Versions(scorer="test"),
                )
                episode = EpisodeRecord(
                    episode_id=episode_id,
                    task_id=task.task_id,
                    miner_hotkey=hotkey,
                    validator_hotkey="5V",
                    started_at=T0,
                    finished_at=T0,
                    end="completed",
                )
                repository.save_judged(
                    session, episode=episode, trajectory=None, tool_log=(), judgment=judgment
                )


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    return make_sessions(tmp_path)


def gauge(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


async def test_weights_land_on_chain_in_score_order_with_the_burn_to_the_owner(
    make_net: Callable[..., LocalNet], sessions: sessionmaker[Session]
) -> None:
    net = make_net(commit_reveal=False)
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10, net.hotkey("miner2"): [0.3] * 10})
    chain = net.chain("validator")
    outcome = await weights_pass(chain, sessions, POLICY)
    assert outcome.result == "submitted" and outcome.submission is not None and outcome.submission.success
    assert outcome.plan is not None and abs(sum(outcome.plan.weights) - 1.0) < 1e-9
    on_chain = read_weights(net.path)[1]
    assert on_chain[2] > on_chain[3] > 0  # miner1 (uid 2) above miner2 (uid 3)
    assert on_chain[0] > 0  # the owner's burn
    with sessions() as session:
        last = repository.last_successful_weights(session)
        assert last is not None and last.uids == outcome.plan.uids and last.block == outcome.submission.block
        assert {s.hotkey for s in repository.latest_scores(session)} == {
            net.hotkey("miner1"),
            net.hotkey("miner2"),
        }
    assert gauge("arena_weights_last_success_block") == outcome.submission.block
    assert gauge("arena_miner_weight", uid="2") == pytest.approx(
        dict(zip(outcome.plan.uids, outcome.plan.weights, strict=True))[2]
    )
    assert gauge("arena_miner_score", uid="3") == pytest.approx(
        outcome.plan.standings[net.hotkey("miner2")].lower
    )


async def test_a_fresh_database_sends_no_burn_only_vector_and_submits_once_scores_exist(
    net: LocalNet, sessions: sessionmaker[Session]
) -> None:
    """Issue 27, item 8: with no score stored the first pass sent 100% to the burn uid, then the
    cadence held the first scored vector back a whole tempo."""
    chain = net.chain("validator")

    first = await weights_pass(chain, sessions, POLICY)
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10})  # the first round is judged
    net.clock.advance(12 * 7)  # past the rate limit, well inside the tempo
    second = await weights_pass(chain, sessions, POLICY)

    assert first.result == "no_scores" and first.submission is None
    assert len(read_extrinsics(net.path)) == 1  # the second pass's
    assert second.result == "submitted" and second.plan is not None and 2 in second.plan.uids


async def test_scores_follow_hotkeys_not_uids(net: LocalNet, sessions: sessionmaker[Session]) -> None:
    store_scores(sessions, {net.hotkey("stranger"): [1.0] * 10, net.hotkey("miner2"): [0.5] * 10})
    snapshot = await net.chain("validator").snapshot()
    with sessions() as session:
        plan = plan_weights(session, snapshot, POLICY)
        again = plan_weights(session, snapshot, POLICY)
    assert plan == again  # deterministic
    assert plan is not None and set(plan.uids) == {0, 3}  # the unregistered stranger gets nothing


async def test_cadence_rate_limit_then_tempo(net: LocalNet, sessions: sessionmaker[Session]) -> None:
    store_scores(sessions, {net.hotkey("miner1"): [0.8] * 4})
    chain = net.chain("validator")
    assert (await weights_pass(chain, sessions, POLICY)).result == "submitted"
    assert (await weights_pass(chain, sessions, POLICY)).result == "rate_limited"
    net.clock.advance(12 * 7)  # past the rate limit (5 blocks after the including block), inside the tempo
    assert (await weights_pass(chain, sessions, POLICY)).result == "not_due"
    assert (await weights_pass(chain, sessions, POLICY, min_blocks=3)).result == "submitted"
    net.clock.advance(12 * 21)  # a tempo after the block that included it
    assert (await weights_pass(chain, sessions, POLICY)).result == "submitted"
    with sessions() as session:
        assert len(repository.weight_history(session)) == 3


async def test_a_refusal_is_recorded_and_counted(
    make_net: Callable[..., LocalNet], sessions: sessionmaker[Session]
) -> None:
    net = make_net(commit_reveal=False)
    store_scores(sessions, {net.hotkey("miner1"): [0.8] * 4})
    labels = {"result": "not_authorized"}
    before = REGISTRY.get_sample_value("arena_weight_submissions_total", labels) or 0.0
    outcome = await weights_pass(net.chain("miner2"), sessions, POLICY)  # miner2 holds no validator permit
    assert outcome.result == "submitted" and outcome.submission is not None
    assert not outcome.submission.success
    with sessions() as session:
        history = repository.weight_history(session)
        assert len(history) == 1 and not history[0].success and history[0].message
        assert repository.last_successful_weights(session) is None
    assert outcome.submission.code == "not_authorized"
    assert REGISTRY.get_sample_value("arena_weight_submissions_total", labels) == before + 1


async def test_an_outdated_version_key_is_not_submitted(
    make_net: object, sessions: sessionmaker[Session], caplog: pytest.LogCaptureFixture
) -> None:
    net = make_net(weights_version=10**9)  # type: ignore[operator]
    store_scores(sessions, {net.hotkey("miner1"): [0.8] * 4})
    with caplog.at_level(logging.ERROR, logger="neurons.validator.weights"):
        outcome = await weights_pass(net.chain("validator"), sessions, POLICY)
    assert outcome.result == "outdated_version" and outcome.submission is None
    assert read_weights(net.path) == {}
    assert "weights_skipped reason=outdated_version" in caplog.text


# ---------------------------------------------------------------------------- commit-reveal


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_commit_reveal_commits_reveals_at_the_round_and_verifies(
    net: LocalNet, sessions: sessionmaker[Session]
) -> None:
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10, net.hotkey("miner2"): [0.3] * 10})
    chain = net.chain("validator")
    revealed_before = counter("arena_weight_reveals_total", result="revealed")

    committed = await weights_pass(chain, sessions, POLICY)
    net.clock.advance(12 * 7)  # past the rate limit, before the reveal round
    early = await weights_pass(chain, sessions, POLICY)
    net.clock.advance(12 * 2 * 21)  # past the reveal round (two epochs of tempo 20)
    verified = await weights_pass(chain, sessions, POLICY, min_blocks=1000)

    submission = committed.submission
    assert committed.result == "submitted" and submission is not None and submission.committed
    [extrinsic] = read_extrinsics(net.path)
    assert extrinsic.call == "SubtensorModule.commit_timelocked_mechanism_weights"
    assert early.result == "not_due" and early.reveal is not None and early.reveal.status == "pending"
    assert verified.reveal is not None and verified.reveal.status == "revealed"
    # The chain opened the commit in its reveal epoch (the next one: reveal period 1, tempo 20),
    # at the first block of it made after the commit's drand round was published.
    [commit] = read_commits(net.path, clock=net.clock)
    published = timelock.reveal_time(submission.reveal_round or 0).timestamp()
    assert commit.reveal_at == pytest.approx(published, abs=5.0)  # the fake clock started at real time
    config = chain_config(net)
    opened = commit.revealed_block
    assert commit.status == "revealed" and opened is not None
    epoch_start = config.epoch_start(config.epoch_index(submission.block or 0) + 1)
    assert opened == max(epoch_start, config.first_block_at(commit.reveal_at)) < epoch_start + config.tempo
    assert config.block_time(opened) >= commit.reveal_at
    on_chain = read_weights(net.path, clock=net.clock)[1]
    assert on_chain[2] > on_chain[3] > 0 and on_chain[0] > 0
    with sessions() as session:
        [record] = repository.weight_history(session)
        assert record.reveal_round == submission.reveal_round
        assert (record.reveal_status, record.reveal_block) == ("revealed", verified.reveal.block)
    assert counter("arena_weight_reveals_total", result="revealed") == revealed_before + 1
    assert gauge("arena_weights_last_success_block") == verified.reveal.block


async def test_a_missing_reveal_is_counted_logged_and_resubmitted(
    net: LocalNet, sessions: sessionmaker[Session], caplog: pytest.LogCaptureFixture
) -> None:
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10})
    chain = net.chain("validator")
    missing_before = counter("arena_weight_reveals_total", result="missing")
    first = await weights_pass(chain, sessions, POLICY)
    # The permit is lost after the commit: the chain's reveal fails, silently.
    register_wallet(net.path, net.wallets["validator"], stake=1000.0, validator_permit=False)
    net.clock.advance(12 * 2 * 21)

    with caplog.at_level(logging.ERROR, logger="neurons.validator.reveals"):
        again = await weights_pass(chain, sessions, POLICY, min_blocks=1000)

    assert first.submission is not None and first.submission.committed
    assert again.reveal is not None and again.reveal.status == "missing"
    assert "weights_reveal_missing" in caplog.text
    assert counter("arena_weight_reveals_total", result="missing") == missing_before + 1
    # Resubmitted at once although min_blocks says not due; the new commit is the one pending now.
    assert again.result == "submitted" and again.submission is not None and again.submission.committed
    assert [(c.status, c.error) for c in read_commits(net.path, clock=net.clock)] == [
        ("failed", "NeuronNoValidatorPermit"),
        ("pending", None),
    ]
    assert read_weights(net.path, clock=net.clock) == {}
    with sessions() as session:
        assert [w.reveal_status for w in repository.weight_history(session)] == ["pending", "missing"]
        assert repository.last_successful_weights(session, landed=True) is None


async def test_a_commit_made_at_an_epochs_last_block_opens_where_the_sdk_timed_its_round(
    net: LocalNet, sessions: sessionmaker[Session]
) -> None:
    """Made while the head is an epoch's last block, the commit lands in the next epoch's first:
    the SDK times its round for that epoch (subtensor's stateful schedule, read from the chain)."""
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10})
    chain = net.chain("validator")
    config = chain_config(net)
    next_epoch = config.epoch_start(config.epoch_index(config.block_at(net.clock.now)) + 1)
    net.clock.now = config.block_time(next_epoch - 1) + 11.0  # late in the epoch's last block
    committed = await weights_pass(chain, sessions, POLICY)
    net.clock.advance(config.block_seconds * 3 * config.tempo)
    verified = await weights_pass(chain, sessions, POLICY, min_blocks=1000)

    assert committed.submission is not None and committed.submission.block == next_epoch
    [commit, *_] = read_commits(net.path, clock=net.clock)
    assert (commit.status, commit.error) == ("revealed", None)
    assert config.epoch_index(commit.revealed_block or 0) == config.epoch_index(next_epoch) + 1
    assert verified.reveal is not None and verified.reveal.status == "revealed"


async def test_with_a_reveal_period_of_two_every_commit_is_checked(
    make_net: Callable[..., LocalNet], sessions: sessionmaker[Session]
) -> None:
    """Issue 27, item 3: a pass a tempo commits before the last commit opens, so only the newest
    was ever checked and the older ones were marked superseded unchecked (0 of 8 checked)."""
    net = make_net(reveal_period_epochs=2)
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10, net.hotkey("miner2"): [0.3] * 10})
    chain = net.chain("validator")
    revealed_before = counter("arena_weight_reveals_total", result="revealed")
    submitted = []
    for _ in range(8):
        outcome = await weights_pass(chain, sessions, POLICY)
        submitted.append(outcome.result)
        net.clock.advance(12 * 21)  # a tempo and a block
    for _ in range(3):  # the last commits open: passes that check and submit nothing new
        net.clock.advance(12 * 21)
        await weights_pass(chain, sessions, POLICY, min_blocks=10**6)

    assert submitted == ["submitted"] * 8
    assert {(c.status, c.error) for c in read_commits(net.path, clock=net.clock)} == {("revealed", None)}
    with sessions() as session:
        statuses = [w.reveal_status for w in repository.weight_history(session)]
    assert statuses == ["revealed"] * 8, statuses
    assert counter("arena_weight_reveals_total", result="revealed") == revealed_before + 8


async def test_a_drand_stall_makes_every_expired_commit_count_as_missing(
    make_net: Callable[..., LocalNet], sessions: sessionmaker[Session]
) -> None:
    """Issue 27, item 3: during a drand stall the commits expired on chain and none was counted."""
    net = make_net(pulse_delay=10**6)  # no pulse reaches the chain while the test runs
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10})
    chain = net.chain("validator")
    missing_before = counter("arena_weight_reveals_total", result="missing")
    for _ in range(6):
        await weights_pass(chain, sessions, POLICY)
        net.clock.advance(12 * 21)
    net.clock.advance(12 * 21 * 3)
    last = await weights_pass(chain, sessions, POLICY, min_blocks=10**6)

    commits = read_commits(net.path, clock=net.clock)
    with sessions() as session:
        statuses = [w.reveal_status for w in repository.weight_history(session)]
    expired = [c for c in commits if c.status == "expired"]
    assert len(expired) == 6 and {c.error for c in expired} == {"NoDrandPulse"}
    assert statuses[1:] == ["missing"] * 6  # the newest is the resubmission of the last pass
    assert counter("arena_weight_reveals_total", result="missing") == missing_before + 6
    assert last.result == "submitted"  # resubmitted at once


async def test_a_reveal_whose_dest_was_deregistered_since_is_revealed_not_resubmitted(
    net: LocalNet, sessions: sessionmaker[Session]
) -> None:
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10, net.hotkey("miner2"): [0.3] * 10})
    chain = net.chain("validator")
    committed = await weights_pass(chain, sessions, POLICY)
    net.clock.advance(12 * 2 * 21)  # past the reveal
    read_weights(net.path, clock=net.clock)  # the chain opens it
    replace_neuron(net.path, 3, net.hotkey("stranger"), "5Stranger", clock=net.clock)  # miner2's uid

    checked = await weights_pass(chain, sessions, POLICY, min_blocks=10**6)

    assert committed.submission is not None and committed.submission.committed
    assert read_weights(net.path, clock=net.clock)[1][3] == 0  # zeroed in place
    assert checked.reveal is not None and checked.reveal.status == "revealed"
    assert checked.result == "not_due"  # nothing resubmitted


class LandsThenHangs(LocalSdkSubstrate):
    """A node that includes the first extrinsic and never answers for it: the submit times out."""

    hung = False

    async def dispatch(
        self, call: LocalCall, signer: str, *, nonce: int, sealed: dict[str, Any] | None = None
    ) -> Outcome:
        outcome = await super().dispatch(call, signer, nonce=nonce, sealed=sealed)
        if not self.hung:
            self.hung = True
            await asyncio.Event().wait()
        return outcome


async def test_a_submit_that_timed_out_but_landed_is_recorded_and_its_reveal_checked(
    net: LocalNet, sessions: sessionmaker[Session]
) -> None:
    """Issue 27, item 8: the commit landed, nothing was recorded, the next pass committed again."""
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10})
    substrate = LandsThenHangs(LocalChain(net.path, clock=net.clock))
    chain = BittensorChain(substrate, net.wallets["validator"], NETUID, write_timeout=0.5, connect=False)

    with pytest.raises(ChainUnavailable):
        await weights_pass(chain, sessions, POLICY)
    net.clock.advance(12 * 7)  # past the rate limit
    again = await weights_pass(chain, sessions, POLICY)
    net.clock.advance(12 * 2 * 21)
    later = await weights_pass(chain, sessions, POLICY, min_blocks=10**6)

    [commit] = read_commits(net.path, clock=net.clock)
    assert again.result == "not_due"  # the landed commit counts: no second one
    assert later.reveal is not None and later.reveal.status == "revealed"
    with sessions() as session:
        [record] = repository.weight_history(session)
    assert (record.success, record.block, record.reveal_round) == (True, commit.block, commit.reveal_round)
    assert record.reveal_status == "revealed"


async def test_plain_weights_that_timed_out_but_landed_are_confirmed_from_last_update(
    make_net: Callable[..., LocalNet], sessions: sessionmaker[Session]
) -> None:
    net = make_net(commit_reveal=False)
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10})
    substrate = LandsThenHangs(LocalChain(net.path, clock=net.clock))
    chain = BittensorChain(substrate, net.wallets["validator"], NETUID, write_timeout=0.5, connect=False)
    with pytest.raises(ChainUnavailable):
        await weights_pass(chain, sessions, POLICY)
    with sessions() as session:
        [attempt] = repository.weight_history(session)
    net.clock.advance(12 * 7)

    again = await weights_pass(chain, sessions, POLICY)

    [extrinsic] = read_extrinsics(net.path)
    assert (attempt.success, attempt.block, attempt.reveal_status) == (False, None, "unconfirmed")
    assert again.result == "not_due"
    with sessions() as session:
        [record] = repository.weight_history(session)
    assert (record.success, record.block, record.reveal_status) == (True, extrinsic.block, None)


def chain_config(net: LocalNet) -> Any:
    from neurons.chain.local.state import LocalChain

    return LocalChain(net.path, clock=net.clock).config


# ---------------------------------------------------------------------------- MaxWeightsLimit


def rules(max_share: float) -> WeightRules:
    return WeightRules(
        tempo=20,
        weights_rate_limit=5,
        weights_version=0,
        min_allowed_weights=1,
        max_weight_share=max_share,
        commit_reveal=True,
        block_seconds=12.0,
    )


def test_shares_over_the_chain_limit_are_capped_and_the_excess_spread_pro_rata() -> None:
    # 10 miners splitting half the emission by score, and a 50% burn (the red team's case).
    miners = tuple(0.5 * (i + 1) / 55 for i in range(10))
    capped = cap_shares((0.5, *miners), 0.2)

    assert capped is not None and sum(capped) == pytest.approx(1.0)
    assert capped[0] == pytest.approx(0.2)  # the burn is held at the limit...
    assert list(capped[1:]) == sorted(capped[1:]) and capped[1] < capped[-1]  # ...miners keep their order
    assert max(capped) <= 0.2 + 1e-12
    assert cap_shares((0.5, 0.5), 1.0) == (0.5, 0.5)
    assert cap_shares((0.9, 0.1), 0.3) is None  # two uids cannot each stay under 30%


async def test_a_weight_limit_below_the_maximum_is_honoured_not_left_to_the_sdk(
    make_net: Callable[..., LocalNet], sessions: sessionmaker[Session]
) -> None:
    net = make_net(commit_reveal=False, max_weights_limit=65535 * 45 // 100)  # 45%
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10, net.hotkey("miner2"): [0.3] * 10})
    policy = ScorePolicy(window=16, burn_share=0.5)

    outcome = await weights_pass(net.chain("validator"), sessions, policy)

    assert outcome.submission is not None and outcome.submission.success, outcome.submission
    weights = dict(zip(outcome.submission.uids, outcome.submission.weights, strict=True))
    assert weights[0] == pytest.approx(0.45, abs=1e-3) and weights[2] > weights[3]
    on_chain = read_weights(net.path)[1]
    total = sum(on_chain.values())
    # What landed is what was recorded: the SDK had nothing left to clip.
    assert {uid: v / total for uid, v in on_chain.items()} == pytest.approx(weights, abs=1e-4)


async def test_a_limit_no_vector_can_meet_is_refused_not_flattened(
    make_net: Callable[..., LocalNet], sessions: sessionmaker[Session], caplog: pytest.LogCaptureFixture
) -> None:
    net = make_net(commit_reveal=False, max_weights_limit=65535 // 4)  # 25%: needs 4 uids, we have 3
    store_scores(sessions, {net.hotkey("miner1"): [0.9] * 10, net.hotkey("miner2"): [0.3] * 10})

    with caplog.at_level(logging.ERROR, logger="neurons.validator.weights"):
        outcome = await weights_pass(net.chain("validator"), sessions, POLICY)

    assert outcome.result == "weight_limit" and outcome.submission is None
    assert "weights_skipped reason=weight_limit" in caplog.text
    assert read_extrinsics(net.path) == []


def test_the_start_up_warning_says_what_the_limit_does_to_the_policy() -> None:
    assert weight_limit_warning(rules(1.0), POLICY) is None
    warning = weight_limit_warning(rules(0.1), ScorePolicy(burn_share=0.5))
    assert warning is not None
    assert "caps every uid at 10.00%" in warning and "at least 10 uids" in warning
    assert "burn share 50% is cut to 10.00%" in warning
