from __future__ import annotations

import json

import pytest

from arena.oro_steps import load_trajectory, trajectory_from_oro
from judging.format import pairing_problems

QUERY = "Find dental elastics available with LazMall perks, priced above 10 PHP."


def oro_steps() -> list[dict[str, object]]:
    """Steps as ORO's agent template writes them (completion.message with results inline)."""
    rows = [{"product_id": "11", "shop_id": "s", "title": "Dental elastics", "price": 12.0}]
    return [
        {
            "completion": {
                "reasoning_content": "",
                "content": "<think>...</think>",
                "message": {
                    "think": "Search for dental elastics.",
                    "tool_call": [
                        {
                            "name": "find_product",
                            "parameters": {"q": "dental elastics"},
                            "tool_call_id": "abc",
                            "result": rows,
                        },
                    ],
                },
            },
            "extra_info": {"step": 1, "query": QUERY, "timestamp": 0},
        },
        {
            "completion": {
                "message": {
                    "think": "11 at 12 PHP fits.",
                    "tool_call": [
                        {
                            "name": "recommend_product",
                            "parameters": {"product_ids": "11"},
                            "tool_call_id": "def",
                            "result": "Having recommended the products to the user: 11.",
                        },
                        {
                            "name": "terminate",
                            "parameters": {},
                            "tool_call_id": "ghi",
                            "result": "The interaction has been completed with status: success",
                        },
                    ],
                    "response": "I recommend product 11.",
                },
            },
            "extra_info": {"step": 2, "query": QUERY},
        },
    ]


def test_oro_steps_become_openai_messages() -> None:
    traj = trajectory_from_oro(oro_steps(), task_id="t-1")
    roles = [m.role for m in traj.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "tool"]
    assert traj.messages[0].content == QUERY
    first = traj.messages[1]
    assert first.reasoning_content == "Search for dental elastics." and first.content is None
    assert first.tool_calls and json.loads(first.tool_calls[0].function.arguments) == {"q": "dental elastics"}
    assert json.loads(traj.messages[2].content or "")[0]["product_id"] == "11"
    assert traj.messages[3].content == "I recommend product 11."
    assert traj.messages[4].content == "Having recommended the products to the user: 11."
    assert pairing_problems(traj) == []


def test_bare_steps_with_obs_and_repeated_ids() -> None:
    steps = [
        {
            "think": "look",
            "tool_call": [{"name": "find_product", "parameters": {"q": "x"}, "tool_call_id": "same"}],
            "obs": [{"tool_call_id": "same", "results": []}],
        },
        {
            "think": "again",
            "tool_call": [{"name": "find_product", "parameters": {"q": "x"}, "tool_call_id": "same"}],
            "obs": [{"tool_call_id": "same", "results": []}],
        },
    ]
    traj = trajectory_from_oro(steps, task_id="t", query="q")
    assert [c.id for c in traj.tool_calls()] == ["same", "same#2"]
    assert pairing_problems(traj) == []


def test_missing_results_leave_calls_unanswered() -> None:
    steps = [{"think": "look", "tool_call": [{"name": "find_product", "parameters": {"q": "x"}}]}]
    traj = trajectory_from_oro(steps, task_id="t", query="q")
    assert pairing_problems(traj) == ["call call_1_0 has no tool message"]


def test_load_trajectory_accepts_each_form() -> None:
    wire = trajectory_from_oro(oro_steps(), task_id="t-1").to_wire()
    assert load_trajectory(wire).task_id == "t-1"
    assert load_trajectory(oro_steps(), task_id="t-2").task_id == "t-2"
    wrapped = {"task_id": "t-3", "episode_id": "e", "miner_hotkey": "hk", "steps": oro_steps()}
    loaded = load_trajectory(wrapped)
    assert (loaded.task_id, loaded.episode_id, loaded.miner_hotkey) == ("t-3", "e", "hk")


@pytest.mark.parametrize("bad", [{"foo": 1}, "text", [{"think": "x"}], [1]])
def test_load_trajectory_refuses_other_values(bad: object) -> None:
    with pytest.raises(ValueError):
        load_trajectory(bad)
