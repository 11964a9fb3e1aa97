"""Where the validator keeps what its episodes need again offline: its search index and its world packs.

A validator records both directories in its database at start-up (``record_paths``: absolute
paths on its machine, the newest start's win), so curating that database later (``arena curate
--db URL``) converts its traces against the index they were judged on and the packs they ran on
without being told where those are (``read_paths``). A database no validator opened since this
was added records nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.db import write_transaction
from storage.models import ValidatorPathRow

logger = logging.getLogger(__name__)

INDEX, WORLDS = "index", "worlds"


@dataclass(frozen=True)
class ValidatorPaths:
    """The directories a validator recorded (None: not recorded), and when."""

    index: Path | None = None
    worlds: Path | None = None
    recorded_at: datetime | None = None


def record_paths(session: Session, *, index: Path, worlds: Path, at: datetime) -> None:
    """Record the validator's search index and world pack directories (made absolute), replacing any."""
    paths = {INDEX: index, WORLDS: worlds}
    with write_transaction(session, what="validator paths"):
        for name, path in paths.items():
            session.merge(ValidatorPathRow(name=name, path=str(path.expanduser().absolute()), recorded_at=at))
    logger.info("validator_paths_recorded index=%s worlds=%s", index, worlds)


def read_paths(session: Session) -> ValidatorPaths:
    """The directories the validator recorded (``ValidatorPaths()`` where it recorded none)."""
    rows = {row.name: row for row in session.scalars(select(ValidatorPathRow))}
    if not rows:
        return ValidatorPaths()
    index, worlds = rows.get(INDEX), rows.get(WORLDS)
    return ValidatorPaths(
        index=Path(index.path) if index else None,
        worlds=Path(worlds.path) if worlds else None,
        recorded_at=max(row.recorded_at for row in rows.values()),
    )
