"""The weights pass on the local chain: ordering, burn, hotkey keying, cadence, refusals, records, metrics."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from sqlalchemy.orm import Session, sessionmaker

from judging.scores import ScorePolicy
from judging.types import Judgment, OutcomeScores, Versions
from neurons.chain.local.state import read_weights
from neurons.validator.weights import plan_weights, weights_pass
from storage import repository
from storage.records import EpisodeRecord
from tests.neurons.conftest import LocalNet
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
    net: LocalNet, sessions: sessionmaker[Session]
) -> None:
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
    net.clock.advance(12 * 6)  # past the rate limit (5 blocks), inside the tempo (20)
    assert (await weights_pass(chain, sessions, POLICY)).result == "not_due"
    assert (await weights_pass(chain, sessions, POLICY, min_blocks=3)).result == "submitted"
    net.clock.advance(12 * 20)
    assert (await weights_pass(chain, sessions, POLICY)).result == "submitted"
    with sessions() as session:
        assert len(repository.weight_history(session)) == 3


async def test_a_refusal_is_recorded_and_counted(net: LocalNet, sessions: sessionmaker[Session]) -> None:
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
