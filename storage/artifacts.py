"""Artifacts: one judged trace as a content-addressed JSON document signed by the validator.

The document (schema ``arena.artifact/1``) bundles the task, the episode, the trajectory, the
tool server's log and the judgment with its versions. ``artifact_id`` addresses that body;
the signature covers the body, the id and the signer's hotkey (``signed_payload``). Storage
never holds keys: the caller passes a ``sign`` callable (the neurons pass the wallet's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.orm import Session

from arena.types import canonical_json, content_hash
from storage.errors import MissingRecord
from storage.records import JudgedTrace
from storage.traces import get_judged

ARTIFACT_SCHEMA = "arena.artifact/1"
# Keys of the signed envelope around the content-addressed body.
ENVELOPE = ("artifact_id", "validator_hotkey", "signature")


def artifact_body(trace: JudgedTrace) -> dict[str, Any]:
    """Return the content-addressed body of a trace's artifact (JSON-able, deterministic)."""
    return {
        "schema": ARTIFACT_SCHEMA,
        "task": trace.task.model_dump(mode="json"),
        "episode": trace.episode.model_dump(mode="json"),
        "trajectory": trace.trajectory.to_wire() if trace.trajectory is not None else None,
        "tool_log": [entry.model_dump(mode="json") for entry in trace.tool_log],
        "judgment": trace.judgment.model_dump(mode="json"),
        "versions": trace.judgment.versions.model_dump(mode="json"),
    }


def signed_payload(document: Mapping[str, Any]) -> bytes:
    """Return the bytes an artifact's signature covers: the canonical JSON of all but the signature."""
    return canonical_json({k: v for k, v in document.items() if k != "signature"}).encode("utf-8")


def artifact(
    session: Session, *, episode_id: str, sign: Callable[[bytes], str], validator_hotkey: str
) -> dict[str, Any]:
    """Bundle one judged episode as a signed, content-addressed artifact document.

    Args:
        session: a session.
        episode_id: the judged episode.
        sign: signs bytes with the validator's hotkey and returns the signature (e.g. hex).
        validator_hotkey: the ss58 address of the signing hotkey.

    Returns:
        The body (``artifact_body``) plus ``artifact_id`` (``a-`` + content hash of the body),
        ``validator_hotkey`` and ``signature``.

    Raises:
        MissingRecord: the episode is not stored or not judged.
    """
    trace = get_judged(session, episode_id=episode_id)
    if trace is None:
        raise MissingRecord(f"no judged episode {episode_id}")
    body = artifact_body(trace)
    document = {**body, "artifact_id": content_hash(body, prefix="a-"), "validator_hotkey": validator_hotkey}
    return {**document, "signature": sign(signed_payload(document))}


def verify_artifact(document: Mapping[str, Any], *, verify: Callable[[bytes, str, str], bool]) -> bool:
    """Check an artifact: its id addresses its body, and ``verify(payload, signature, hotkey)`` holds.

    Args:
        document: an artifact as ``artifact`` returned it (e.g. parsed back from JSON).
        verify: checks a signature over bytes for an ss58 hotkey (the neurons pass bittensor's).
    """
    body = {k: v for k, v in document.items() if k not in ENVELOPE}
    if document.get("artifact_id") != content_hash(body, prefix="a-"):
        return False
    signature, hotkey = document.get("signature"), document.get("validator_hotkey")
    if not isinstance(signature, str) or not isinstance(hotkey, str):
        return False
    return verify(signed_payload(document), signature, hotkey)
