"""The job wrapper (retry, broad catch, failure metric) and the scheduler in the running event loop."""

from __future__ import annotations

import asyncio
import logging

import pytest
from prometheus_client import REGISTRY

from neurons.errors import ChainUnavailable
from neurons.validator.scheduler import Job, Scheduler, run_job
from storage.errors import ConflictError, StorageError


def failures(name: str) -> float:
    return REGISTRY.get_sample_value("arena_job_failures_total", {"job_name": name}) or 0.0


class Flaky:
    """Fails with ``errors`` in turn, then succeeds; counts calls."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


async def no_sleep(seconds: float) -> None:
    waits.append(seconds)


waits: list[float] = []


async def test_transient_errors_are_retried_with_backoff() -> None:
    waits.clear()
    flaky = Flaky(ChainUnavailable("metagraph", "timeout", "slow"), StorageError("database is locked"))
    before = failures("flaky-ok")
    assert await run_job(Job("flaky-ok", 60, flaky, attempts=3), base_delay=2.0, sleep=no_sleep)
    assert flaky.calls == 3 and waits == [2.0, 4.0]
    assert failures("flaky-ok") == before


async def test_a_failing_job_is_logged_counted_and_survived(caplog: pytest.LogCaptureFixture) -> None:
    waits.clear()
    flaky = Flaky(ValueError("a bug"))
    before = failures("buggy")
    with caplog.at_level(logging.ERROR, logger="neurons.validator.scheduler"):
        assert not await run_job(Job("buggy", 60, flaky, attempts=3), sleep=no_sleep)
    assert flaky.calls == 1 and waits == []  # not worth a retry
    assert failures("buggy") == before + 1
    record = next(r for r in caplog.records if "job_failed job=buggy" in r.getMessage())
    assert record.exc_info is not None  # with its traceback


async def test_retries_end_and_logic_errors_are_not_retried() -> None:
    waits.clear()
    down = Flaky(*(ChainUnavailable("block", "connection", "refused") for _ in range(5)))
    assert not await run_job(Job("down", 60, down, attempts=3), sleep=no_sleep)
    assert down.calls == 3
    conflict = Flaky(ConflictError("stored with other content"))
    assert not await run_job(Job("conflict", 60, conflict, attempts=3), sleep=no_sleep)
    assert conflict.calls == 1


async def test_the_scheduler_runs_jobs_in_the_loop_and_stop_cancels_runs_in_flight() -> None:
    ticks: list[float] = []
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def tick() -> None:
        ticks.append(asyncio.get_running_loop().time())

    async def long_round() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    scheduler = Scheduler([Job("tick", 0.1, tick), Job("long", 3600, long_round, first_delay=0.05)])
    scheduler.start()
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0.35)
    await asyncio.wait_for(scheduler.stop(), 5)
    assert len(ticks) >= 2
    assert cancelled.is_set()
    count = len(ticks)
    await asyncio.sleep(0.25)
    assert len(ticks) == count  # stopped


async def test_a_run_cancelled_by_shutdown_is_logged_once_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 27, item 13: SIGTERM during a weights pass logged CancelledError with a traceback at
    ERROR (the scheduler's executor took the cancellation for the job's failure)."""
    started = asyncio.Event()

    async def weights() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = Scheduler([Job("weights", 3600, weights)])
    with caplog.at_level(logging.INFO):
        scheduler.start()
        await asyncio.wait_for(started.wait(), 5)
        await asyncio.wait_for(scheduler.stop(), 5)
        await asyncio.sleep(0.05)  # the executor's done-callback runs after the task ends

    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    assert any("job_cancelled job=weights" in r.getMessage() for r in caplog.records)
