"""The batch commands' collector thresholds: set for the body, restored after, even on an error."""

from __future__ import annotations

import gc

import pytest

from neurons.batch import batch_collector


def test_the_thresholds_are_raised_for_the_body_and_restored_after() -> None:
    before = gc.get_threshold()
    with batch_collector():
        young, middle, old = gc.get_threshold()
        assert young > before[0] and middle >= before[1] and old >= before[2]
    assert gc.get_threshold() == before


def test_the_thresholds_are_restored_when_the_body_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), batch_collector():
        raise RuntimeError("a failing command")
    assert gc.get_threshold() == before
