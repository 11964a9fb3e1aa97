"""One small retry helper for I/O boundaries: exponential backoff on the errors worth retrying."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.exc import OperationalError

from neurons.errors import ChainUnavailable
from storage.errors import ConflictError, MissingRecord, StorageError, UnstorableContent

logger = logging.getLogger(__name__)
T = TypeVar("T")


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` may go away on its own: the chain unreachable, the database busy or down.

    A storage conflict, a missing record or unstorable content is a logic error or bad data
    (retrying gives the same answer).
    """
    if isinstance(exc, ConflictError | MissingRecord | UnstorableContent):
        return False
    return isinstance(exc, ChainUnavailable | StorageError | OperationalError)


async def retry(
    operation: Callable[[], Awaitable[T]],
    *,
    what: str,
    attempts: int = 3,
    base_delay: float = 1.0,
    max_delay: float = 30.0,
    retry_if: Callable[[BaseException], bool] = transient,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``operation``, retrying transient failures with exponential backoff.

    Args:
        operation: the coroutine function to run (called afresh for each attempt).
        what: names the operation in log lines.
        attempts: tries in all (1 means no retry).
        base_delay: seconds before the second try; doubled for each further one.
        max_delay: the longest wait between two tries.
        retry_if: which exceptions are worth another try; anything else is raised at once.
        sleep: the wait (tests pass a fake).

    Raises:
        The last exception once the attempts are spent, or the first one not worth retrying.
    """
    attempt = 1
    while True:
        try:
            return await operation()
        except Exception as exc:
            if attempt >= attempts or not retry_if(exc):
                raise
            delay = min(max_delay, base_delay * 2 ** (attempt - 1))
            logger.warning(
                "retrying what=%s attempt=%d delay=%.1f error=%s", what, attempt, delay, type(exc).__name__
            )
            await sleep(delay)
            attempt += 1
