"""Rounds, miner standings over time and weight submissions, on both databases."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from judging.scores import MinerStanding
from storage.errors import ConflictError, MissingRecord
from storage.records import WeightRecord
from storage.repository import (
    close_round,
    commit_recorded,
    confirm_submission,
    get_round,
    last_round,
    last_successful_weights,
    latest_scores,
    open_round,
    pending_reveals,
    record_reveal,
    record_scores,
    record_weight_submission,
    score_history,
    unconfirmed_submission,
    weight_history,
)
from tests.storage.factories import T0, VALIDATOR


def test_rounds_open_once_and_close_once(session: Session) -> None:
    assert last_round(session) is None
    assert open_round(
        session, round_id=1, validator_hotkey=VALIDATOR, started_at=T0, block=10, task_ids=["t-a"]
    )
    assert not open_round(
        session, round_id=1, validator_hotkey=VALIDATOR, started_at=T0, block=10, task_ids=["t-a"]
    )
    with pytest.raises(ConflictError):
        open_round(session, round_id=1, validator_hotkey=VALIDATOR, started_at=T0, block=10, task_ids=["t-b"])
    open_round(session, round_id=2, validator_hotkey=VALIDATOR, started_at=T0 + timedelta(minutes=5))
    assert close_round(session, round_id=1, closed_at=T0 + timedelta(minutes=1), stats={"episodes": 8})
    assert not close_round(session, round_id=1, closed_at=T0 + timedelta(minutes=9), stats={"episodes": 0})
    with pytest.raises(MissingRecord):
        close_round(session, round_id=42, closed_at=T0)
    first = get_round(session, round_id=1)
    assert first is not None
    assert first.task_ids == ("t-a",) and first.block == 10
    assert first.closed_at == T0 + timedelta(minutes=1) and first.stats == {"episodes": 8}
    latest = last_round(session)
    assert latest is not None and latest.round_id == 2 and latest.closed_at is None
    assert get_round(session, round_id=3) is None


def standing(hotkey: str, n: int, lower: float) -> MinerStanding:
    return MinerStanding(hotkey=hotkey, n=n, mean=lower + 0.1, lower=lower)


def test_scores_append_per_block_idempotently(session: Session) -> None:
    uids = {"hk-a": 1, "hk-b": 2}
    first = [standing("hk-a", 3, 0.2), standing("hk-b", 1, 0.05), standing("hk-gone", 4, 0.3)]
    assert record_scores(session, standings=first, hotkey_to_uid=uids, block=100, at=T0) == 3
    assert record_scores(session, standings=first, hotkey_to_uid=uids, block=100, at=T0) == 0
    later = [standing("hk-a", 4, 0.4)]
    assert (
        record_scores(session, standings=later, hotkey_to_uid=uids, block=200, at=T0 + timedelta(hours=1))
        == 1
    )
    latest = {s.hotkey: s for s in latest_scores(session)}
    assert latest["hk-a"].block == 200 and latest["hk-a"].lower == 0.4 and latest["hk-a"].uid == 1
    assert latest["hk-b"].block == 100 and latest["hk-gone"].uid is None
    assert [s.block for s in score_history(session, hotkey="hk-a")] == [200, 100]
    assert score_history(session, hotkey="hk-a", limit=1)[0].n == 4


def test_weight_submissions_and_the_last_accepted_one(session: Session) -> None:
    assert last_successful_weights(session) is None
    ok = WeightRecord(uids=(0, 3, 5), weights=(0.1, 0.6, 0.3), block=1000, success=True, message="", at=T0)
    failed = WeightRecord(
        uids=(0, 3), weights=(0.5, 0.5), block=None, success=False, message="too soon", version_key=7, at=T0
    )
    assert record_weight_submission(session, submission=ok)
    assert not record_weight_submission(session, submission=ok)
    assert record_weight_submission(
        session, submission=failed.model_copy(update={"at": T0 + timedelta(hours=1)})
    )
    assert last_successful_weights(session) == ok
    history = weight_history(session)
    assert [w.success for w in history] == [False, True] and history[0].message == "too soon"


def test_a_commit_keeps_its_reveal_round_until_its_reveal_is_checked(session: Session) -> None:
    commit = WeightRecord(
        uids=(0, 3),
        weights=(0.2, 0.8),
        block=100,
        success=True,
        at=T0,
        reveal_round=9001,
        reveal_status="pending",
    )
    newer = commit.model_copy(update={"block": 110, "reveal_round": 9002, "at": T0 + timedelta(minutes=2)})
    twin = commit.model_copy(update={"block": 105, "at": T0 + timedelta(minutes=1)})  # the same round

    assert record_weight_submission(session, submission=commit)
    assert pending_reveals(session) == [commit]
    assert last_successful_weights(session, landed=True) is None  # included, not yet on chain
    assert record_weight_submission(session, submission=twin)
    assert record_weight_submission(session, submission=newer)  # a newer commit settles nothing
    assert pending_reveals(session) == [commit, twin, newer]  # oldest first
    assert record_reveal(session, reveal_round=9001, commit_block=100, status="superseded", block=130)
    assert not record_reveal(session, reveal_round=9001, commit_block=100, status="revealed", block=131)
    assert record_reveal(session, reveal_round=9001, commit_block=105, status="revealed", block=130)
    assert record_reveal(session, reveal_round=9002, commit_block=110, status="revealed", block=140)

    assert pending_reveals(session) == []
    landed = last_successful_weights(session, landed=True)
    assert landed is not None and (landed.reveal_status, landed.reveal_block) == ("revealed", 140)
    assert [(w.block, w.reveal_status) for w in weight_history(session)] == [
        (110, "revealed"),
        (105, "revealed"),
        (100, "superseded"),
    ]
    assert not record_weight_submission(session, submission=newer)  # its identity ignores the outcome
    lost = newer.model_copy(update={"block": 200, "reveal_round": 9003, "at": T0 + timedelta(minutes=9)})
    record_weight_submission(session, submission=lost)
    record_reveal(session, reveal_round=9003, commit_block=200, status="missing", block=230)
    assert last_successful_weights(session) == landed  # a commit that never landed does not count


def test_an_unconfirmed_attempt_is_confirmed_once_as_landed(session: Session) -> None:
    attempt = WeightRecord(
        uids=(0, 3), weights=(0.2, 0.8), success=False, message="outcome unknown", at=T0,
        reveal_status="unconfirmed",
    )  # fmt: skip
    assert confirm_submission(session, block=50, reveal_round=7) is None  # none yet
    record_weight_submission(session, submission=attempt)

    assert unconfirmed_submission(session) == attempt
    assert last_successful_weights(session) is None
    assert not commit_recorded(session, block=120, reveal_round=9001)
    confirmed = confirm_submission(session, block=120, reveal_round=9001)

    assert confirmed is not None and (confirmed.success, confirmed.block) == (True, 120)
    assert confirmed.reveal_status == "pending" and pending_reveals(session) == [confirmed]
    assert commit_recorded(session, block=120, reveal_round=9001)
    assert unconfirmed_submission(session) is None
    assert last_successful_weights(session) == confirmed


def test_weight_records_refuse_bad_vectors() -> None:
    with pytest.raises(ValueError, match="uids but"):
        WeightRecord(uids=(1, 2), weights=(1.0,), success=True, at=T0)
    with pytest.raises(ValueError, match="finite"):
        WeightRecord(uids=(1,), weights=(-0.5,), success=True, at=T0)
