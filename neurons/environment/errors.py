"""The environment's errors: a refused reset (unknown task, full) or an unknown session.

A bad tool call, a call after the episode ended or past its budget is never one of these: it is a
tool error in the observation (``neurons.environment.session``).
"""

from __future__ import annotations

from neurons.errors import NeuronError


class EnvError(NeuronError):
    """The environment cannot do what was asked: the request names nothing it has, or it is full."""


class UnknownTask(EnvError):
    """A reset names a task id the environment's tasks do not hold."""


class UnknownSession(EnvError):
    """A step or state names a session that is not open here (never opened, closed or expired)."""


class EnvFull(EnvError):
    """A reset would open more sessions than the environment's bound allows."""
