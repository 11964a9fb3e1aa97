"""A per-miner circuit breaker: after K consecutive failed queries a hotkey is skipped for a cool-down.

States per hotkey: closed (queries go out), open (skipped until the cool-down ends) and
half-open (one trial query goes out; success closes the circuit, failure opens it again for a
full cool-down). State lives in the validator's memory only: a restart gives every miner a
fresh start, which is the cheap and fair default.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]


@dataclass
class _Circuit:
    failures: int = 0
    open_until: float | None = None
    trial_in_flight: bool = False


class CircuitBreaker:
    """Consecutive-failure circuit breaker keyed by hotkey."""

    def __init__(
        self, *, threshold: int = 3, cooldown: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Configure the breaker.

        Args:
            threshold: consecutive failures that open a circuit (>= 1).
            cooldown: seconds an open circuit skips its hotkey before one trial is let through.
            clock: monotonic time source (tests pass a fake one).
        """
        if threshold < 1 or cooldown < 0:
            raise ValueError("threshold must be >= 1 and cooldown >= 0")
        self.threshold = threshold
        self.cooldown = cooldown
        self._clock = clock
        self._circuits: dict[str, _Circuit] = {}

    def state(self, hotkey: str) -> BreakerState:
        """The circuit's state for ``hotkey`` now."""
        circuit = self._circuits.get(hotkey)
        if circuit is None or circuit.open_until is None:
            return "closed"
        return "open" if self._clock() < circuit.open_until else "half_open"

    def allow(self, hotkey: str) -> bool:
        """Whether a query to ``hotkey`` may go out now; a half-open circuit admits one trial at a time."""
        state = self.state(hotkey)
        if state == "closed":
            return True
        if state == "open":
            return False
        circuit = self._circuits[hotkey]
        if circuit.trial_in_flight:
            return False
        circuit.trial_in_flight = True
        return True

    def record(self, hotkey: str, *, success: bool) -> None:
        """Record the outcome of a query that ``allow`` let through."""
        circuit = self._circuits.setdefault(hotkey, _Circuit())
        circuit.trial_in_flight = False
        if success:
            self._circuits.pop(hotkey, None)
            return
        circuit.failures += 1
        if circuit.open_until is not None or circuit.failures >= self.threshold:
            circuit.open_until = self._clock() + self.cooldown

    def abandon(self, hotkey: str) -> None:
        """Forget an in-flight trial that ended without an outcome (the caller was cancelled)."""
        circuit = self._circuits.get(hotkey)
        if circuit is not None:
            circuit.trial_in_flight = False

    def open_hotkeys(self) -> list[str]:
        """Hotkeys whose circuit is open right now (sorted)."""
        return sorted(hotkey for hotkey in self._circuits if self.state(hotkey) == "open")
