"""Artifacts: a judged trace as a content-addressed JSON document signed by the validator."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json

import pytest
from sqlalchemy.orm import Session

from storage.artifacts import artifact, signed_payload, verify_artifact
from storage.errors import MissingRecord
from storage.repository import save_judged, save_tasks
from tests.storage.factories import VALIDATOR, make_task, make_trace

KEY = b"validator-secret"


def sign(payload: bytes) -> str:
    return hmac.new(KEY, payload, hashlib.sha256).hexdigest()


def verify(payload: bytes, signature: str, hotkey: str) -> bool:
    return hotkey == VALIDATOR and hmac.compare_digest(sign(payload), signature)


@pytest.fixture()
def episode_id(session: Session) -> str:
    task = make_task(1)
    save_tasks(session, tasks=[task])
    trace = make_trace(2, task=task)
    save_judged(
        session,
        episode=trace.episode,
        trajectory=trace.trajectory,
        tool_log=trace.tool_log,
        judgment=trace.judgment,
    )
    return trace.episode.episode_id


def test_artifact_bundles_the_whole_judged_trace(session: Session, episode_id: str) -> None:
    doc = artifact(session, episode_id=episode_id, sign=sign, validator_hotkey=VALIDATOR)
    assert doc["schema"] == "arena.artifact/1"
    assert doc["episode"]["episode_id"] == episode_id and doc["judgment"]["episode_id"] == episode_id
    assert len(doc["tool_log"]) == len(doc["trajectory"]["messages"]) // 2 - 1
    assert doc["versions"] == doc["judgment"]["versions"]
    assert doc["artifact_id"].startswith("a-") and doc["validator_hotkey"] == VALIDATOR
    assert doc["signature"] == sign(signed_payload(doc))
    # Content-addressed: the same trace gives the same document, and it survives JSON.
    again = artifact(session, episode_id=episode_id, sign=sign, validator_hotkey=VALIDATOR)
    assert again == doc
    assert verify_artifact(json.loads(json.dumps(doc)), verify=verify)


def test_tampering_breaks_the_artifact(session: Session, episode_id: str) -> None:
    doc = artifact(session, episode_id=episode_id, sign=sign, validator_hotkey=VALIDATOR)
    edited = copy.deepcopy(doc)
    edited["judgment"]["score"] = 1.0
    assert not verify_artifact(edited, verify=verify)
    readdressed = copy.deepcopy(doc)
    readdressed["validator_hotkey"] = "5Impostor"
    assert not verify_artifact(readdressed, verify=verify)
    assert not verify_artifact({k: v for k, v in doc.items() if k != "signature"}, verify=verify)


def test_unknown_episode_has_no_artifact(session: Session) -> None:
    with pytest.raises(MissingRecord):
        artifact(session, episode_id="ep-nope", sign=sign, validator_hotkey=VALIDATOR)
