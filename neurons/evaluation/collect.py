"""Collect judged traces without a network: an eval run's samples, stored as a validator stores episodes.

``arena eval --db URL`` runs any agent (``scripted``, ``llm``, ``module:function``) over a task
file against the in-process tools, exactly as :mod:`neurons.evaluation.runner` does, and then
writes every judged sample into a database of the validator's schema: the episode, its tool log
and its judgment in one transaction each (``storage.repository.save_judged``), its task with it.
``arena curate --db URL`` then reads them like any validator's traces. Storing is idempotent: a
rerun stores only what is new, and an episode stored with other content is a conflict, reported.

Episodes carry no round (``round_id`` None) and the validator hotkey ``COLLECT_HOTKEY``; the
miner hotkey is the run's (``eval``). A sample's times come from the record (its end and its
elapsed seconds), so a rerun writes the same rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from arena.types import EPISODE_ENDS, EpisodeEnd, Task
from neurons.evaluation.records import (
    JUDGMENTS_FILE,
    SAMPLES_FILE,
    JudgmentRecord,
    SampleRecord,
    read_records,
)
from storage.errors import ConflictError
from storage.records import EpisodeRecord
from storage.repository import save_judged

logger = logging.getLogger(__name__)

COLLECT_HOTKEY = "collect"


@dataclass
class StoreReport:
    """What storing a run did: episodes written now, already stored, and skipped with a reason."""

    stored: int = 0
    already: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        """Count one sample left out, by reason."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def store_run(
    run_dir: Path,
    tasks: Sequence[Task],
    sessions: sessionmaker[Session],
    *,
    on_sample: Callable[[], None] | None = None,
) -> StoreReport:
    """Store every judged sample of ``run_dir`` whose task is among ``tasks``.

    Args:
        run_dir: an `arena eval` run directory.
        tasks: the run's tasks (stored with their first episode).
        sessions: a sessionmaker on a database at the current schema.
        on_sample: called after each sample (a progress bar).

    Returns:
        The counts; a sample without a judgment (not judged yet), without its end time (written
        by an older release) or in conflict with a stored episode is skipped and counted.
    """
    by_id = {task.task_id: task for task in tasks}
    samples = read_records(run_dir / SAMPLES_FILE, SampleRecord)
    judgments = read_records(run_dir / JUDGMENTS_FILE, JudgmentRecord)
    report = StoreReport()
    for key, sample in sorted(samples.items()):
        task = by_id.get(sample.task_id)
        judged = judgments.get(key)
        if task is None:
            report.skip("not_selected")
        elif judged is None:
            report.skip("not_judged")
        elif sample.finished_at is None:
            report.skip("no_end_time")
        else:
            episode = EpisodeRecord(
                episode_id=sample.episode_id,
                task_id=sample.task_id,
                miner_hotkey=judged.judgment.miner_hotkey,
                validator_hotkey=COLLECT_HOTKEY,
                started_at=sample.finished_at - timedelta(seconds=sample.elapsed_s),
                finished_at=sample.finished_at,
                end=_end(sample.end),
            )
            try:
                with sessions() as session:
                    written = save_judged(
                        session,
                        episode=episode,
                        trajectory=sample.trajectory,
                        tool_log=sample.log,
                        judgment=judged.judgment,
                        task=task,
                    )
            except ConflictError as exc:
                logger.warning("collect_conflict episode=%s error=%s", sample.episode_id, exc)
                report.skip("conflict")
            else:
                if written:
                    report.stored += 1
                else:
                    report.already += 1
        if on_sample is not None:
            on_sample()
    logger.info("collect_stored run=%s stored=%d already=%d skipped=%s", run_dir, report.stored,
                report.already, report.skipped)  # fmt: skip
    return report


def _end(value: str) -> EpisodeEnd:
    """The record's end as an episode end (an unknown one is the agent's error)."""
    return next((end for end in EPISODE_ENDS if end == value), "miner_error")
