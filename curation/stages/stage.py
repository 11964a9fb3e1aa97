"""What a per-trace stage decides: pass a trace on, set it aside into a stream of its own, or drop it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Streams a surviving trace can flow into: the imitation sets, or one of the files set aside.
Stream = Literal["main", "axis_b", "unscored"]
MAIN: Stream = "main"
AXIS_B: Stream = "axis_b"
UNSCORED: Stream = "unscored"


@dataclass(frozen=True)
class Gate:
    """A gate's decision on one trace: pass it on, set it aside into a stream of its own, or drop it.

    Attributes:
        action: ``pass``, ``aside`` or ``drop``.
        stream: where the trace goes on: ``MAIN`` when it passes, its file's stream when set aside.
        reason: why it is dropped (the funnel's drop reason); empty otherwise.
    """

    action: Literal["pass", "aside", "drop"]
    stream: Stream = MAIN
    reason: str = ""


PASS = Gate("pass")


def aside(stream: Stream) -> Gate:
    """Set the trace aside into ``stream``."""
    return Gate("aside", stream=stream)


def drop(reason: str) -> Gate:
    """Drop the trace for ``reason``."""
    return Gate("drop", reason=reason)
