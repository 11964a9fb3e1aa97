"""Stored trajectories are bounded: over-long ones are cut deterministically, with markers."""

from __future__ import annotations

import json

from arena.types import FunctionCall, Message, ToolCall, Trajectory
from storage.bounds import MAX_CALLS, MAX_STORED_TRAJECTORY_CHARS, bounded_wire


def wire(*messages: Message) -> dict[str, object]:
    head = (Message(role="user", content="a tent"),)
    return Trajectory(task_id="t", episode_id="e", miner_hotkey="h", messages=(*head, *messages)).to_wire()


def test_within_the_bound_nothing_changes() -> None:
    small = wire(Message(role="assistant", content="fine"))
    assert bounded_wire(small) == (small, False)


def test_a_message_keeps_its_first_calls_and_says_how_many_were_cut() -> None:
    calls = tuple(
        ToolCall(
            id=f"c{i}", function=FunctionCall(name="find_product", arguments=json.dumps({"q": "x" * 3000}))
        )
        for i in range(200)
    )
    stored, truncated = bounded_wire(wire(Message(role="assistant", tool_calls=calls)))
    assert truncated and len(json.dumps(stored, ensure_ascii=False)) <= MAX_STORED_TRAJECTORY_CHARS
    message = Trajectory.model_validate(stored).messages[1]
    assert message.tool_calls is not None and len(message.tool_calls) == MAX_CALLS
    assert message.content == f"[{200 - MAX_CALLS} more calls cut: stored truncated]"


def test_the_cut_is_deterministic() -> None:
    long = wire(*(Message(role="assistant", content="y" * 2000) for _ in range(1000)))
    assert bounded_wire(long) == bounded_wire(long)
