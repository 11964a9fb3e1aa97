"""The validator's periodic jobs on APScheduler 3 (``AsyncIOScheduler``, in the app's event loop).

Every job runs through ``run_job``: transient failures (chain unreachable, database down) are
retried with backoff at this boundary, and anything still raising is caught here (the one
broad catch), logged with its traceback, and counted in ``arena_job_failures_total{job_name}``;
the job runs again on its next tick. A run cancelled by ``Scheduler.stop`` (shutdown) is logged
once at INFO (``job_cancelled``), never as a failure. A job never overlaps itself (``max_instances=1``) and
missed ticks collapse into one (``coalesce``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from neurons import metrics
from neurons.validator.backoff import retry

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """A periodic job: its name (the metric label), how often it runs, and what it runs.

    Attributes:
        name: ``job_name`` in metrics and logs.
        interval: seconds between the starts of two runs.
        run: the coroutine function to run.
        first_delay: seconds after the scheduler starts before the first run.
        attempts: tries per run for transient errors (1: no retry).
    """

    name: str
    interval: float
    run: Callable[[], Awaitable[object]]
    first_delay: float = 0.0
    attempts: int = 3


async def run_job(
    job: Job, *, base_delay: float = 2.0, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> bool:
    """Run one job once, through the retry helper; never raises (but lets cancellation through).

    Returns:
        True when the job finished, False when it raised (logged and counted).
    """
    started = time.monotonic()
    try:
        await retry(
            job.run, what=f"job {job.name}", attempts=job.attempts, base_delay=base_delay, sleep=sleep
        )
    except Exception:  # the one broad catch: a job's failure must never stop the process
        metrics.JOB_FAILURES.labels(job.name).inc()
        logger.exception("job_failed job=%s seconds=%.2f", job.name, time.monotonic() - started)
        return False
    logger.debug("job_done job=%s seconds=%.2f", job.name, time.monotonic() - started)
    return True


class Scheduler:
    """The running jobs: an ``AsyncIOScheduler`` in the current event loop, and the runs in flight.

    ``start()`` must be called from inside the loop (the app's lifespan); ``stop()`` cancels the
    runs in flight and waits for them, so nothing a job uses is closed under it.
    """

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.jobs = tuple(jobs)
        self._scheduler: AsyncIOScheduler | None = None
        self._running: set[asyncio.Task[Any]] = set()

    async def _tick(self, job: Job) -> bool:
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            return await run_job(job)
        except asyncio.CancelledError:
            # ``stop()`` (SIGTERM) cancelled the run: an end, not a failure. Raised on, APScheduler's
            # executor would log it as the job's exception, with a traceback, at ERROR. This is the
            # task's outermost frame, and ``stop()`` waits for it, so nothing is lost by ending here.
            logger.info("job_cancelled job=%s", job.name)
            return False
        finally:
            if task is not None:
                self._running.discard(task)

    def start(self) -> None:
        """Schedule every job (first runs after their ``first_delay``) and start ticking."""
        scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone=UTC)
        now = datetime.now(UTC)
        for job in self.jobs:
            scheduler.add_job(
                self._tick,
                "interval",
                args=[job],
                seconds=job.interval,
                id=job.name,
                name=job.name,
                next_run_time=now + timedelta(seconds=job.first_delay),
                max_instances=1,
                coalesce=True,
                # A busy loop may start a job late; a late run is better than a skipped one.
                misfire_grace_time=max(30, int(job.interval)),
            )
        scheduler.start()
        self._scheduler = scheduler
        logger.info("scheduler_started jobs=%s", ",".join(f"{j.name}/{j.interval:g}s" for j in self.jobs))

    async def stop(self) -> None:
        """Stop ticking, cancel the runs in flight and wait for them to finish."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        running = list(self._running)
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
            logger.info("scheduler_stopped cancelled=%d", len(running))
