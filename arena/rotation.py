"""Round rotation: which held_out tasks a round serves, and retiring what was served.

A round's draw is keyed by ``HMAC-SHA256(secret, "arena.round/1:<round>")``: reproducible by
the operator who holds the validator's secret, unpredictable to miners who do not. Held_out
tasks are ordered by ``HMAC(round key, task_id)`` and taken in that order, at most one per leak
cluster, so one round never serves two tasks that leak each other. After the round, every task
served to any miner is retired together with its whole pool group (its leak cluster and the
clusters that near-duplicate it at the audit's threshold, see ``arena.pools``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Iterable, Sequence

from arena.pools import cluster_key, pool_groups
from arena.types import Task

logger = logging.getLogger(__name__)

_ROUND_LABEL = b"arena.round/1:"


def round_key(secret: bytes, round_number: int) -> bytes:
    """Derive a round's draw key from the validator's secret and the round number.

    Raises:
        ValueError: the secret is empty or the round number is negative.
    """
    if not secret:
        raise ValueError("the round secret must not be empty")
    if round_number < 0:
        raise ValueError(f"round number must be >= 0, got {round_number}")
    return hmac.new(secret, _ROUND_LABEL + str(round_number).encode(), hashlib.sha256).digest()


def draw_round(tasks: Sequence[Task], *, secret: bytes, round_number: int, n: int) -> list[Task]:
    """Draw up to ``n`` held_out tasks for a round, at most one per leak cluster.

    Args:
        tasks: every known task (only those in the held_out pool are candidates).
        secret: the validator's secret (never shared with miners).
        round_number: the round being drawn.
        n: how many tasks to draw; fewer come back when held_out has fewer clusters.

    Raises:
        ValueError: empty secret, negative round number or negative ``n``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    key = round_key(secret, round_number)
    candidates = [t for t in tasks if t.pool == "held_out"]
    candidates.sort(key=lambda t: hmac.new(key, t.task_id.encode(), hashlib.sha256).digest())
    drawn: list[Task] = []
    clusters: set[str] = set()
    for task in candidates:
        if len(drawn) >= n:
            break
        cluster = cluster_key(task)
        if cluster in clusters:
            continue
        clusters.add(cluster)
        drawn.append(task)
    logger.info("round_drawn round=%d tasks=%d held_out=%d", round_number, len(drawn), len(candidates))
    return drawn


def retire(tasks: Sequence[Task], served_task_ids: Iterable[str]) -> list[Task]:
    """Retire every served task together with its whole pool group (whatever pool it was in).

    Unknown served ids are logged and ignored (they cannot leak a task this set does not hold).
    """
    by_id = {t.task_id: t for t in tasks}
    served = set(served_task_ids)
    unknown = served - by_id.keys()
    if unknown:
        logger.warning("retire_unknown_tasks count=%d", len(unknown))
    out = list(tasks)
    burned = 0
    for members in pool_groups(tasks).values():
        if not any(tasks[i].task_id in served for i in members):
            continue
        burned += 1
        for i in members:
            if out[i].pool != "retired":
                out[i] = out[i].model_copy(update={"pool": "retired"})
    logger.info("retired groups=%d served=%d", burned, len(served))
    return out
