"""The per-miner circuit breaker on its own."""

from __future__ import annotations

import pytest

from neurons.validator.breaker import CircuitBreaker
from tests.neurons.conftest import FakeClock


def test_circuit_opens_only_after_consecutive_failures() -> None:
    breaker = CircuitBreaker(threshold=3, cooldown=10.0, clock=FakeClock())
    for _ in range(2):
        breaker.record("a", success=False)
    breaker.record("a", success=True)  # a success resets the count
    for _ in range(2):
        breaker.record("a", success=False)
    assert breaker.state("a") == "closed" and breaker.allow("a")
    breaker.record("a", success=False)
    assert breaker.state("a") == "open" and not breaker.allow("a")
    assert breaker.open_hotkeys() == ["a"]
    assert breaker.allow("b")  # other hotkeys are unaffected


def test_half_open_circuit_lets_one_trial_through() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(threshold=1, cooldown=10.0, clock=clock)
    breaker.record("a", success=False)
    clock.advance(10.0)
    assert breaker.state("a") == "half_open"
    assert breaker.allow("a")
    assert not breaker.allow("a")  # the trial is in flight
    breaker.record("a", success=False)
    assert breaker.state("a") == "open"  # one failed trial reopens for a full cool-down
    clock.advance(9.9)
    assert not breaker.allow("a")
    clock.advance(0.1)
    assert breaker.allow("a")
    breaker.record("a", success=True)
    assert breaker.state("a") == "closed" and breaker.allow("a") and breaker.allow("a")


def test_an_abandoned_trial_frees_the_half_open_slot() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(threshold=1, cooldown=1.0, clock=clock)
    breaker.record("a", success=False)
    clock.advance(1.0)
    assert breaker.allow("a")
    breaker.abandon("a")
    assert breaker.allow("a")


def test_breaker_refuses_nonsense_settings() -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(threshold=0)
