from __future__ import annotations

from arena.index import SearchIndex
from arena.tools import ToolContext, run_tool
from arena.types import Message, Trajectory
from judging.config import JudgeConfig
from judging.format import check_format, estimate_tokens
from tests.judging.factory import (
    Checked,
    Episode,
    context,
    good_shop_episode,
    replace_message,
    tool_message_index,
)


def run(trajectory: Trajectory, budget: int = 10_000) -> Checked:
    return Checked(check_format(context(trajectory, config=JudgeConfig(token_budget=budget))))


def test_clean_trajectory_has_no_rejects() -> None:
    result = run(good_shop_episode().trajectory())
    assert result.rejects == ()
    assert result.check.value == 1.0


def test_tool_call_without_response_is_rejected() -> None:
    traj = good_shop_episode().trajectory()
    index = tool_message_index(traj, "call_1")
    messages = traj.messages[:index] + traj.messages[index + 1 :]
    result = run(traj.model_copy(update={"messages": messages}))
    assert result.rejects == ("unanswered_tool_call",)
    assert result.check.value == 0.0


def test_response_without_call_is_rejected() -> None:
    traj = good_shop_episode().trajectory()
    extra = Message(role="tool", tool_call_id="call_99", content="[]")
    result = run(traj.model_copy(update={"messages": (*traj.messages, extra)}))
    assert "unanswered_tool_call" in result.rejects


def test_response_after_the_next_assistant_turn_is_rejected() -> None:
    traj = good_shop_episode().trajectory()
    index = tool_message_index(traj, "call_1")
    moved = list(traj.messages)
    tool = moved.pop(index)
    moved.insert(index + 2, tool)  # after the next assistant message
    result = run(traj.model_copy(update={"messages": tuple(moved)}))
    assert "unanswered_tool_call" in result.rejects


def test_recommend_twice_is_rejected() -> None:
    ep = good_shop_episode()
    ep.step("again", ("recommend_product", {"product_ids": "1001,1002"}))
    ep.step("bye", ("terminate", {}))
    assert run(ep.trajectory()).rejects == ("recommend_not_once",)


def test_recommend_never_is_rejected() -> None:
    ep = Episode("q")
    ep.step("look", ("find_product", {"q": "nike"}))
    ep.step("stop", ("terminate", {}))
    assert run(ep.trajectory()).rejects == ("recommend_not_once",)


def test_unknown_product_id_is_rejected() -> None:
    ep = Episode("q")
    ep.step("look", ("find_product", {"q": "nike"}))
    ep.step("rec", ("recommend_product", {"product_ids": "1001,nope"}))
    ep.step("bye", ("terminate", {}))
    result = run(ep.trajectory())
    assert result.rejects == ("unknown_product_id",)
    assert "nope" in result.check.explanation


def test_unparseable_answer_is_unknown_product_id() -> None:
    ep = Episode("q")
    ep.step("rec", ("recommend_product", {}), raw_arguments={0: "{product_ids: 1001"})
    ep.step("bye", ("terminate", {}))
    result = run(ep.trajectory())
    assert "unknown_product_id" in result.rejects
    assert result.bad_steps[0].call_id == "call_1"


def test_too_long_is_rejected() -> None:
    traj = good_shop_episode().trajectory()
    tokens = estimate_tokens(traj)
    assert run(traj, budget=tokens).rejects == ()
    assert run(traj, budget=tokens - 1).rejects == ("too_long",)


def test_no_final_action_is_rejected() -> None:
    ep = Episode("q")
    ep.step("rec", ("recommend_product", {"product_ids": "1001"}))
    ep.step("one more look", ("find_product", {"q": "nike"}))
    assert run(ep.trajectory()).rejects == ("no_final_action",)


def test_no_tool_calls_at_all() -> None:
    ep = Episode("q")
    ep.say("I recommend 1001.")
    assert run(ep.trajectory()).rejects == ("recommend_not_once", "no_final_action")


def test_unknown_tool_lowers_per_step_value() -> None:
    ep = Episode("q")
    ep.step("peek", ("delete_catalog", {}))
    ep.step("rec", ("recommend_product", {"product_ids": "1001"}))
    ep.step("bye", ("terminate", {}))
    result = run(ep.trajectory())
    assert result.rejects == ()
    assert result.check.value == 2 / 3


def test_duplicate_call_id_is_rejected() -> None:
    traj = good_shop_episode().trajectory()
    index = next(i for i, m in enumerate(traj.messages) if m.role == "assistant" and m.tool_calls)
    call = traj.messages[index].tool_calls[0]  # type: ignore[index]
    second = next(
        i for i, m in enumerate(traj.messages) if i > index and m.role == "assistant" and m.tool_calls
    )
    dup = traj.messages[second].model_copy(update={"tool_calls": (call.model_copy(),)})
    result = run(replace_message(traj, second, dup))
    assert "unanswered_tool_call" in result.rejects


def test_empty_arguments_read_the_same_to_the_tool_server_and_the_format_check(
    fixture_index: SearchIndex,
) -> None:
    ctx = ToolContext(index=fixture_index)
    # The one rule: "" is {} everywhere. The tool server runs it as no arguments (so terminate
    # reports its missing status to the agent, as data), and the judge counts the step well formed.
    result = run_tool("terminate", "", ctx)
    assert result.error and result == run_tool("terminate", "{}", ctx)
    ep = Episode("q")
    ep.step("rec", ("recommend_product", {"product_ids": "1001"}))
    ep.step("bye", ("terminate", {}), raw_arguments={0: ""})
    check = check_format(context(ep.trajectory()))
    assert check.value == 1.0 and check.evidence.bad_steps == ()  # type: ignore[union-attr]


def test_a_trajectory_over_the_turn_cap_is_rejected() -> None:
    traj = good_shop_episode().trajectory()
    turns = len(traj.messages)
    at_cap = check_format(context(traj, config=JudgeConfig(max_turns=turns)))
    assert "too_many_turns" not in Checked(at_cap).rejects
    over = Checked(check_format(context(traj, config=JudgeConfig(max_turns=turns - 1))))
    assert over.rejects == ("too_many_turns",) and over.check.value == 0.0
    assert f"{turns} messages" in over.check.explanation


def test_the_default_turn_cap_is_tau2s_200_steps() -> None:
    assert JudgeConfig().max_turns == 200
