"""The miner's metagraph: the last good snapshot, refreshed in the background, never on a request's path.

A chain read can take its whole timeout (30 s), longer than a signed request stays fresh (10 s),
so a refresh inline in a request turned every cache expiry or slow RPC into valid requests
refused as ``stale``. ``MetagraphCache.run`` refreshes every ``refresh_interval`` instead; a
request is admitted against the last good snapshot while it is younger than ``max_age``, and
refused with ``metagraph_expired`` past it (``metagraph_unavailable`` before the first read):
reasons about this miner's view of the chain, never ``stale``, which is about the request's clock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Literal

from neurons import metrics
from neurons.chain.chaintypes import MetagraphSnapshot
from neurons.errors import ChainUnavailable, NeuronError

logger = logging.getLogger(__name__)

MIN_REFRESH_SECONDS = 0.05  # the refresher's floor, whatever the settings say


MetagraphUnusableReason = Literal["metagraph_unavailable", "metagraph_expired"]


class MetagraphUnusable(NeuronError):
    """No snapshot to admit callers with: none read yet, or the last good one is too old."""

    def __init__(self, reason: MetagraphUnusableReason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason: MetagraphUnusableReason = reason
        self.detail = detail


class MetagraphCache:
    """The last good metagraph snapshot, refreshed in the background every ``refresh_interval`` seconds.

    ``run()`` is the refresher (started by the app's lifespan after a first ``refresh()``);
    requests read ``current()``, which never waits for the chain. A failed refresh keeps the
    previous snapshot (logged) and is retried sooner, after ``retry_interval``.
    """

    def __init__(
        self,
        fetch: Callable[[], Awaitable[MetagraphSnapshot]],
        *,
        refresh_interval: float,
        max_age: float,
        retry_interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Serve snapshots from ``fetch`` (e.g. ``chain.snapshot``); ``clock`` measures their age."""
        self._fetch = fetch
        self.refresh_interval = max(MIN_REFRESH_SECONDS, refresh_interval)
        self.retry_interval = max(MIN_REFRESH_SECONDS, min(retry_interval, self.refresh_interval))
        self.max_age = max_age
        self._clock = clock
        self._snapshot: MetagraphSnapshot | None = None
        self._fetched_at = 0.0

    def age(self) -> float | None:
        """Seconds since the last good snapshot was read, None before the first."""
        return None if self._snapshot is None else self._clock() - self._fetched_at

    def current(self) -> MetagraphSnapshot:
        """The last good snapshot, if younger than ``max_age``.

        Raises:
            MetagraphUnusable: none was read yet, or the last one is older than ``max_age``.
        """
        age = self.age()
        if self._snapshot is None or age is None:
            raise MetagraphUnusable("metagraph_unavailable", "the miner has not read the metagraph yet")
        if age > self.max_age:
            detail = f"the miner's last metagraph (block {self._snapshot.block}) is {age:.0f}s old"
            raise MetagraphUnusable("metagraph_expired", f"{detail}, over {self.max_age:g}s")
        return self._snapshot

    async def refresh(self) -> bool:
        """Read the metagraph once; True on success (a failure keeps the previous snapshot)."""
        try:
            snapshot = await self._fetch()
        except ChainUnavailable as exc:
            block = self._snapshot.block if self._snapshot is not None else None
            logger.warning("metagraph_refresh_failed kind=%s using_block=%s", exc.kind, block)
            return False
        self._snapshot, self._fetched_at = snapshot, self._clock()
        metrics.METAGRAPH_SYNC_TIMESTAMP.set(time.time())
        metrics.CHAIN_BLOCK.set(snapshot.block)
        return True

    async def run(self) -> None:
        """Refresh forever: every ``refresh_interval``, or ``retry_interval`` after a failure.

        The first refresh comes one interval after the start (the app reads once before serving).
        """
        ok = self._snapshot is not None
        while True:
            await asyncio.sleep(self.refresh_interval if ok else self.retry_interval)
            try:
                ok = await self.refresh()
            except Exception:  # a bug must not stop the refresher: log it and retry
                logger.exception("metagraph_refresh_crashed")
                ok = False
