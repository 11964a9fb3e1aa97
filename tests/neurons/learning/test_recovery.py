"""Recovery rows: a failed search replayed on the index, context only, before the row's own search."""

from __future__ import annotations

import json
import random
from typing import Any

from arena.index import SearchIndex
from arena.tools import ToolContext, run_tool
from neurons.learning.recovery import add_recoveries, with_recovery
from neurons.learning.rows import render_example
from tests.neurons.learning.test_rows import TOOLS, CharTokenizer, text_of


def search_row(ctx: ToolContext, arguments: Any) -> dict[str, Any]:
    found = run_tool("find_product", arguments, ctx).content
    call = {"id": "c1", "type": "function", "function": {"name": "find_product", "arguments": arguments}}
    return {
        "messages": [
            {"role": "system", "content": "Shop."},
            {"role": "user", "content": "nike running shoes"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": found},
        ],
        "tools": TOOLS,
    }


def test_the_failed_search_is_real_context_and_the_retry_is_taught(fixture_index: SearchIndex) -> None:
    ctx = ToolContext(index=fixture_index)
    row = search_row(ctx, {"q": "nike running shoes", "page": 1})
    out = with_recovery(row, ctx, random.Random(0))
    assert out is not None
    failed, empty = out["messages"][2], out["messages"][3]
    assert failed["weight"] == 0
    assert failed["tool_calls"][0]["function"]["arguments"]["price"].startswith("0-")
    replayed = run_tool("find_product", failed["tool_calls"][0]["function"]["arguments"], ctx)
    assert empty["content"] == replayed.content and json.loads(empty["content"]) == []
    assert empty["tool_call_id"] == failed["tool_calls"][0]["id"]
    assert out["messages"][4:] == row["messages"][2:]  # the row's own turns follow, unchanged
    example = render_example(out["messages"], TOOLS, CharTokenizer())
    taught = text_of(example.input_ids, example.assistant_masks, 1)
    assert taught.count("<tool_call>") == 1 and '"price"' not in taught  # only the retry carries loss


def test_a_string_call_stays_a_string(fixture_index: SearchIndex) -> None:
    ctx = ToolContext(index=fixture_index)
    out = with_recovery(search_row(ctx, json.dumps({"q": "nike", "page": 1})), ctx, random.Random(0))
    assert out is not None and isinstance(out["messages"][2]["tool_calls"][0]["function"]["arguments"], str)


def test_every_nth_row_and_rows_without_a_search_are_kept(fixture_index: SearchIndex) -> None:
    ctx = ToolContext(index=fixture_index)
    plain = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    searched = search_row(ctx, {"q": "nike", "page": 1})
    rows = [searched, searched, plain, plain]
    done = add_recoveries(rows, ctx, every=2, seed=1)
    assert (done.recovered, done.unchanged) == (1, 3)
    assert done.rows[0] == rows[0] and len(done.rows[1]["messages"]) == 6 and done.rows[3] == plain
    assert add_recoveries(rows, ctx, every=0, seed=1).recovered == 0
