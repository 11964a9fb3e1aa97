"""Typed causes: a judgment's unscored reasoning cause becomes ``{cause, detail}`` and a column.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Judgments stored before this revision kept why the reasoning check was unscored as one string,
``"<cause>: <detail>"`` (``reasoning.unscored_cause``), split again wherever it was read (and
matched with ``LIKE`` in SQL). From here the verdict says it in typed fields:

- ``reasoning.unscored`` is ``{"cause", "detail"}`` or null; a cause outside the known ones
  (``disabled``, ``skipped``, ``timeout``, ``error``, ``unparseable``) becomes ``error`` with
  the whole old text as its detail, so an unrecognised reason is treated as an outage (kept
  out of the weights), never as a score;
- the reasoning check's evidence carries the same ``unscored`` (and ``injection_flagged`` when
  true), the outcome check's evidence the outcome components (``scores``), as the judge now
  writes them;
- the new column ``judgments.reasoning_unscored`` holds the cause, for the weights query.

A judgment's content hash is its address, so each row's hash is recomputed over the new shape
(sha256 of the canonical JSON of every field but the hash, as ``judging.types`` computes it);
a row whose stored hash did not match its old content keeps that hash, so reading it still
fails loudly instead of being laundered. Self-contained on purpose (no import of our packages):
a migration is history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

CAUSES = ("disabled", "skipped", "timeout", "error", "unparseable")
BATCH = 500
_JUDGMENTS = sa.table(
    "judgments",
    sa.column("content_hash", sa.String()),
    sa.column("task_id", sa.String()),
    sa.column("episode_id", sa.String()),
    sa.column("miner_hotkey", sa.String()),
    sa.column("success", sa.Boolean()),
    sa.column("score", sa.Double()),
    sa.column("axis", sa.String()),
    sa.column("end_reason", sa.String()),
    sa.column("rejects", sa.JSON()),
    sa.column("checks", sa.JSON()),
    sa.column("outcome", sa.JSON()),
    sa.column("process", sa.JSON()),
    sa.column("reasoning", sa.JSON()),
    sa.column("versions", sa.JSON()),
    sa.column("hallucinated_product_ids", sa.JSON()),
    sa.column("fabricated_call_ids", sa.JSON()),
    sa.column("reasoning_unscored", sa.String()),
)
_DOCUMENT = (
    "task_id",
    "episode_id",
    "miner_hotkey",
    "success",
    "score",
    "axis",
    "rejects",
    "checks",
    "outcome",
    "process",
    "reasoning",
    "versions",
    "hallucinated_product_ids",
    "fabricated_call_ids",
)


def _content_hash(document: dict[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "j-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _document(row: sa.Row[Any]) -> dict[str, Any]:
    """The judgment as ``Judgment.model_dump(mode="json")`` gives it, less the hash."""
    values = row._mapping
    document = {name: values[name] for name in _DOCUMENT}
    document["end"] = values["end_reason"]
    return document


def _split(text: str | None) -> dict[str, str] | None:
    """The last reading of the old ``"<cause>: <detail>"`` string: into typed fields, once."""
    if text is None:
        return None
    cause, _, detail = text.partition(": ")
    if cause in CAUSES:
        return {"cause": cause, "detail": detail}
    return {"cause": "error", "detail": text}


def _to_typed(document: dict[str, Any]) -> str | None:
    reasoning = dict(document["reasoning"])
    unscored = _split(reasoning.pop("unscored_cause", None))
    reasoning["unscored"] = unscored
    document["reasoning"] = reasoning
    checks = []
    for check in document["checks"]:
        evidence = dict(check.get("evidence") or {})
        if check.get("name") == "reasoning" and "prompt_hash" in evidence:
            if unscored is not None:
                evidence["unscored"] = unscored
            if reasoning.get("injection_flagged"):
                evidence["injection_flagged"] = True
        if check.get("name") == "outcome" and {"success", "partial", "items"} <= evidence.keys():
            evidence.setdefault("scores", document["outcome"])
        checks.append({**check, "evidence": evidence})
    document["checks"] = checks
    return unscored["cause"] if unscored is not None else None


def _to_string(document: dict[str, Any]) -> str | None:
    reasoning = dict(document["reasoning"])
    unscored = reasoning.pop("unscored", None)
    reasoning["unscored_cause"] = (
        None
        if unscored is None
        else f"{unscored['cause']}: {unscored['detail']}"
        if unscored.get("detail")
        else unscored["cause"]
    )
    document["reasoning"] = reasoning
    checks = []
    for check in document["checks"]:
        evidence = dict(check.get("evidence") or {})
        if check.get("name") == "reasoning" and "prompt_hash" in evidence:
            evidence.pop("unscored", None)
            evidence.pop("injection_flagged", None)
        if check.get("name") == "outcome" and {"success", "partial", "items"} <= evidence.keys():
            evidence.pop("scores", None)
        checks.append({**check, "evidence": evidence})
    document["checks"] = checks
    return None


def _rewrite(transform: Callable[[dict[str, Any]], str | None]) -> None:
    """Apply ``transform`` to every judgment, recomputing each verified hash; ``BATCH`` rows in memory."""
    connection = op.get_bind()
    update = (
        _JUDGMENTS.update()
        .where(_JUDGMENTS.c.episode_id == sa.bindparam("episode"))
        .values(
            content_hash=sa.bindparam("new_hash"),
            reasoning=sa.bindparam("new_reasoning", type_=sa.JSON()),
            checks=sa.bindparam("new_checks", type_=sa.JSON()),
            reasoning_unscored=sa.bindparam("new_cause"),
        )
    )
    last = ""
    while True:
        rows = connection.execute(
            sa.select(_JUDGMENTS)
            .where(_JUDGMENTS.c.episode_id > last)  # episode ids are unique and never rewritten
            .order_by(_JUDGMENTS.c.episode_id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        batch = []
        for row in rows:
            document = _document(row)
            verified = _content_hash(document) == row.content_hash
            cause = transform(document)
            batch.append(
                {
                    "episode": row.episode_id,
                    "new_hash": _content_hash(document) if verified else row.content_hash,
                    "new_reasoning": document["reasoning"],
                    "new_checks": document["checks"],
                    "new_cause": cause,
                }
            )
        connection.execute(update, batch)
        last = rows[-1].episode_id


def upgrade() -> None:
    """Add ``judgments.reasoning_unscored`` and rewrite every judgment in the typed shape."""
    op.add_column("judgments", sa.Column("reasoning_unscored", sa.String(length=16), nullable=True))
    _rewrite(_to_typed)


def downgrade() -> None:
    """Back to the ``"<cause>: <detail>"`` string (hashes recomputed likewise) and drop the column."""
    _rewrite(_to_string)
    with op.batch_alter_table("judgments") as batch:
        batch.drop_column("reasoning_unscored")
