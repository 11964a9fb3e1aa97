"""Conversions on several cores: worker processes that each open the converter once, results in order.

A conversion is pure CPU (the template writer never waits) and independent of every other, so
a batch run (``arena curate``, ``arena convert``) spreads it over worker processes. Each worker
opens its own converter from a :class:`ConverterSpec` (the index directory, the world packs,
the settings: what crosses a process boundary, where an open index and its SQLite handle do
not), once, at start. Work goes out in chunks (one pickle round trip per ``chunk`` traces) and
comes back in submission order, so a run on N workers writes what the run in-process writes,
byte for byte; at most ``window`` chunks are out at once, so memory stays bounded however many
traces stream through.

Workers are spawned, not forked: the parent holds open SQLite handles (the index, the
database) and may hold threads, neither of which survives a fork safely.

With one worker, or a converter that cannot cross a process (a teacher endpoint's client:
no spec), jobs run in the calling process: one code path either way. ``start_after`` defers
the workers until that many jobs have run in-process, so a run that needs few conversions
never pays for starting them (about half a second of CPU each): curation converts only what
dedup keeps, which is not known until the walk.
"""

from __future__ import annotations

import concurrent.futures
import gc
import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from curation.conversion.convert import Converter, ConverterSpec

logger = logging.getLogger(__name__)

_In = TypeVar("_In")
_Out = TypeVar("_Out")
Job = Callable[[Converter, _In], _Out]
"""What a worker runs per item: a module-level function (it is pickled by name), converter first."""

CHUNK = 16  # items per round trip: the pickling overhead shared, a chunk still a few ms of work
START_AFTER = 1024  # jobs run in-process before workers start: their start (~1.7 s wall for two) is ~500 jobs


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Workers:
    """How many conversion processes a run uses, and after how many jobs done in-process they start."""

    count: int = 1
    start_after: int = 0

    @classmethod
    def given(cls, count: int) -> Workers:
        """A command's ``--workers``: 0 is one per core, started once the run has shown it needs them."""
        return cls(available_cores(), START_AFTER) if count == 0 else cls(count)


IN_PROCESS = Workers()  # the default: every job in the calling process

# One worker process's state, set by ``_start`` when the process starts (never at import).
_worker: dict[str, Any] = {}


def _start(spec: ConverterSpec, job: Job[Any, Any], gc_threshold: tuple[int, ...] | None) -> None:
    if gc_threshold is not None:
        gc.set_threshold(*gc_threshold)
    _worker["converter"] = spec.open()
    _worker["job"] = job


def _run_chunk(items: list[Any]) -> list[Any]:
    converter, job = _worker["converter"], _worker["job"]
    return [job(converter, item) for item in items]


class _Chunk:
    """Items sent together, and their future once sent."""

    __slots__ = ("items", "future")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.future: concurrent.futures.Future[list[Any]] | None = None


class ConversionPool(Generic[_In, _Out]):
    """Runs ``job(converter, item)`` per submitted item, on worker processes or in this one; values in order.

    ``workers.count`` > 1 starts that many processes once ``workers.start_after`` jobs have run here, each
    opening ``converter.spec`` (so the converter must come from ``ConverterSpec.open``);
    otherwise jobs run here, on ``converter``.

    Two kinds of slot go in, in the caller's order: ``submit(item)`` (a job to run) and
    ``add(value)`` (a value the caller has already, such as a trace that needs no conversion).
    ``ready()`` yields the values from the front for as long as more than ``window`` slots wait
    (so at most that many items are held, however many stream in); ``rest()`` yields the others
    at the end. Use as a context manager: leaving it stops the workers.
    """

    def __init__(
        self,
        job: Job[_In, _Out],
        *,
        converter: Converter | None,
        workers: Workers = IN_PROCESS,
        gc_threshold: tuple[int, ...] | None = None,
        chunk: int = CHUNK,
    ) -> None:
        self.spec = converter.spec if converter is not None else None
        if workers.count > 1 and self.spec is None:
            raise ValueError("worker processes need a converter opened from a ConverterSpec")
        self.job, self.converter, self.workers, self.chunk = job, converter, max(1, workers.count), chunk
        self.window = 0  # slots held before ``ready`` yields: none while jobs run here
        self.start_after, self.ran_here = workers.start_after, 0
        self._gc_threshold = gc_threshold
        self._slots: deque[tuple[_Chunk | None, int, Any]] = deque()  # (chunk, place, value)
        self._filling = _Chunk()
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        if self.workers > 1 and self.start_after <= 0:
            self._start_workers()

    def _start_workers(self) -> None:
        assert self.spec is not None  # checked when the pool was made
        self._executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=partial(_start, self.spec, self.job, self._gc_threshold),
        )
        self.window = self.workers * self.chunk * 4
        logger.info("conversion_pool workers=%d chunk=%d after=%d", self.workers, self.chunk, self.ran_here)

    def __enter__(self) -> ConversionPool[_In, _Out]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (chunks still queued are abandoned)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def add(self, value: _Out) -> None:
        """A slot whose value is known already."""
        self._slots.append((None, 0, value))

    def submit(self, item: _In) -> None:
        """A slot whose value is ``job(converter, item)``: run now in-process, else queued for a worker."""
        if self._executor is None and self.workers > 1 and self.ran_here >= self.start_after:
            self._start_workers()
        if self._executor is None:
            assert self.converter is not None
            self._slots.append((None, 0, self.job(self.converter, item)))
            self.ran_here += 1
            return
        self._slots.append((self._filling, len(self._filling.items), None))
        self._filling.items.append(item)
        if len(self._filling.items) >= self.chunk:
            self._send()

    def ready(self) -> Iterator[_Out]:
        """The values at the front, while more than ``window`` slots wait (waiting for workers if need be).

        Raises:
            BrokenProcessPool: a worker died (out of memory, killed); what a job raised otherwise.
        """
        while len(self._slots) > self.window:
            yield self._take()

    def rest(self) -> Iterator[_Out]:
        """Every value still waiting, in order (the last partial chunk is sent first)."""
        self._send()
        while self._slots:
            yield self._take()

    def _take(self) -> _Out:
        chunk, place, value = self._slots.popleft()
        if chunk is not None:
            if chunk.future is None:
                self._send()
            assert chunk.future is not None
            value = chunk.future.result()[place]
        out: _Out = value
        return out

    def _send(self) -> None:
        chunk, self._filling = self._filling, _Chunk()
        if chunk.items and self._executor is not None:
            chunk.future = self._executor.submit(_run_chunk, chunk.items)


__all__ = [
    "CHUNK",
    "IN_PROCESS",
    "START_AFTER",
    "ConversionPool",
    "Job",
    "Workers",
    "available_cores",
]
