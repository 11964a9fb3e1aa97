"""How a batch command (``arena curate``, ``arena convert``) sets up its process: the collector's thresholds.

A batch run streams hundreds of thousands of short-lived pydantic models, dicts and lists
through one process that also holds a long-lived heap (an open index, task tables, the dedup
state). With CPython's default thresholds (700, 10, 10) the collector runs a young collection
every few hundred allocations and a full one whenever a quarter more objects have survived,
each full one walking the whole long-lived heap: measured with ``bench/conversion.py``'s
curation (2 cores, 20k products, 3,000 stored traces), that was about a third of the funnel's
CPU time (566 traces/s with the defaults, 845 with the thresholds below, 852 with the collector
off; with conversion 160 → 184), and the template writer 15% faster; the exported files are
byte-identical. The thresholds trade a bounded amount of memory (up to ``_YOUNG`` container
objects waiting in the young generation) for that time. Servers (validator, miner, tool
server) keep the defaults: their heaps and latency were measured with them.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)

_YOUNG = 50_000  # allocations between young collections (CPython's default: 700)
_MIDDLE = 20  # young collections per middle one (default 10)
_OLD = 20  # middle collections per full one, before the 25% survivor rule (default 10)


@contextmanager
def batch_collector() -> Iterator[None]:
    """Run the body with the collector's batch thresholds (the module docstring says why), then restore them.

    Restored, so a command run in another process's interpreter (a test's ``CliRunner``) leaves
    that process as it was.
    """
    before = gc.get_threshold()
    gc.set_threshold(_YOUNG, _MIDDLE, _OLD)
    logger.debug("gc_thresholds young=%d middle=%d old=%d", _YOUNG, _MIDDLE, _OLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


__all__ = ["batch_collector"]
