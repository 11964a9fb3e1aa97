"""A funnel stage (``Stage``), and what a per-trace stage decides: pass a trace on, aside, or drop it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from curation.config import CurationConfig
from judging.types import Axis
from storage.records import JudgedTrace

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


@dataclass(frozen=True)
class TraceContext:
    """What a per-trace stage sees beside the trace.

    Attributes:
        config: the run's settings.
        miner_axis: the axis the trace's miner is labelled with across its recent trajectories
            (``judging.axis.axis_for_miner``), or None where that verdict is off.
        converting: the run has a converter (a search index), so the labels to convert go on.
    """

    config: CurationConfig
    miner_axis: Axis | None = None
    converting: bool = False


TraceGate = Callable[[JudgedTrace, TraceContext], Gate]


@dataclass(frozen=True)
class Stage:
    """One stage of the funnel, as ``funnel.json`` names and describes it.

    Attributes:
        name: its key in ``funnel.json``, the funnel's counts and the metrics.
        description: one line on what it does (``funnel.json`` and the dataset card).
        gate: a per-trace stage's decision on one trace, run by the driver in list order over
            every trace still in the main stream (``curation.curate``); None for the stages the
            driver runs itself: ``normalise`` (first, it makes the record the others read),
            ``ranking`` (the survivor's score), ``convert`` and ``dedup`` (the walk over the
            workspace, ``curation.stages.dedup``) and ``split`` (once the walk is done).
    """

    name: str
    description: str
    gate: TraceGate | None = None
