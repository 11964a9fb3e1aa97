"""The retry helper: which errors are transient, and how long it waits between tries."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from neurons.errors import ChainUnavailable
from neurons.validator.backoff import retry, transient
from storage.errors import ConflictError, MissingRecord, StorageError


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ChainUnavailable("metagraph", "timeout", "slow"), True),
        (StorageError("database is locked"), True),
        (OperationalError("select 1", {}, Exception("server closed the connection")), True),
        (ConflictError("other content"), False),
        (MissingRecord("no such task"), False),
        (ValueError("a bug"), False),
    ],
)
def test_transient(error: Exception, expected: bool) -> None:
    assert transient(error) is expected


async def test_waits_double_up_to_the_cap_and_the_last_error_is_raised() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def down() -> None:
        raise ChainUnavailable("block", "connection", "refused")

    with pytest.raises(ChainUnavailable):
        await retry(down, what="down", attempts=6, base_delay=1.0, max_delay=5.0, sleep=sleep)
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0]
