"""The reasoning judge's prompt: the episode rendered as untrusted data, bounded by construction."""

from __future__ import annotations

import json

from arena.types import FunctionCall, Message, ToolCall, Trajectory
from judging.reasoning_prompt import MAX_EPISODE_CHARS, build_messages, prompt_template, render_trajectory
from tests.judging.factory import good_shop_episode, shop_task


def trajectory(messages: list[Message]) -> Trajectory:
    head = [Message(role="system", content="shop"), Message(role="user", content="a red tent")]
    return Trajectory(task_id="t-x", episode_id="ep-1", miner_hotkey="hk", messages=(*head, *messages))


def turns(n: int, text: str = "thinking about tents") -> list[Message]:
    messages: list[Message] = []
    for i in range(n // 2):
        call = ToolCall(id=f"c{i}", function=FunctionCall(name="find_product", arguments='{"q": "tent"}'))
        messages.append(Message(role="assistant", reasoning_content=f"{text} {i}", tool_calls=(call,)))
        messages.append(Message(role="tool", tool_call_id=f"c{i}", content='[{"product_id": "1"}]'))
    return messages


def test_ten_thousand_messages_render_within_the_bound_keeping_both_ends() -> None:
    rendered = render_trajectory(trajectory(turns(10_000)))
    assert len(rendered) <= MAX_EPISODE_CHARS
    rows = json.loads(rendered)
    assert rows[0]["role"] == "user" and rows[1]["reasoning"] == "thinking about tents 0"
    assert rows[-1]["role"] == "tool" and rows[-2]["reasoning"] == "thinking about tents 4999"
    (cut,) = [row for row in rows if "cut" in row]
    assert cut["cut"].endswith("messages not shown") and "thinking" not in cut["cut"]


def test_text_that_escaping_lengthens_is_bounded_after_the_escape() -> None:
    # Every '<' becomes six characters once escaped: the bound is on what the judge reads.
    rendered = render_trajectory(trajectory(turns(400, text="<" * 3000)))
    assert len(rendered) <= MAX_EPISODE_CHARS and "<" not in rendered


def test_one_message_with_a_thousand_calls_is_bounded() -> None:
    calls = tuple(
        ToolCall(id=f"call-{'x' * 500}-{i}", function=FunctionCall(name="n" * 500, arguments="{}"))
        for i in range(1000)
    )
    one = Message(role="assistant", content="c" * 50_000, tool_calls=calls)
    rendered = render_trajectory(trajectory([one]))
    assert len(rendered) <= MAX_EPISODE_CHARS
    (row,) = [r for r in json.loads(rendered) if r["role"] == "assistant"]
    assert len(row["tool_calls"]) < 20 and row["tool_calls"][-1] == {"cut": "992 more calls not shown"}


def test_the_whole_prompt_is_bounded() -> None:
    messages = build_messages(shop_task(), trajectory(turns(10_000, text="y" * 4000)))
    fixed = len(prompt_template()) + len(shop_task().query) + 200
    assert sum(len(m["content"]) for m in messages) <= MAX_EPISODE_CHARS + fixed


def test_an_ordinary_episode_is_rendered_whole() -> None:
    rendered = render_trajectory(good_shop_episode().trajectory())
    assert "cut" not in rendered
    assert len(json.loads(rendered)) == len(good_shop_episode().trajectory().messages) - 1  # no system
