"""Durability test helper: write judged episodes in a loop, printing each id once it is committed.

Run as ``python -m tests.storage.writer URL FIRST`` from the repository root; the database must
already hold the schema, task ``make_task(1)`` and round 1. It never stops by itself: the
durability test kills it with SIGKILL.
"""

from __future__ import annotations

import itertools
import sys

from storage.db import check_schema, make_engine, make_sessionmaker
from storage.repository import save_judged
from tests.storage.factories import make_task, make_trace


def main(argv: list[str]) -> None:
    url, first = argv[1], int(argv[2])
    engine = make_engine(url)
    check_schema(engine)
    task = make_task(1)
    with make_sessionmaker(engine)() as session:
        for i in itertools.count(first):
            trace = make_trace(i, task=task, round_id=1, answered=i % 7 != 0)
            save_judged(
                session,
                episode=trace.episode,
                trajectory=trace.trajectory,
                tool_log=trace.tool_log,
                judgment=trace.judgment,
            )
            print(trace.episode.episode_id, flush=True)


if __name__ == "__main__":
    main(sys.argv)
