"""The one walk over a tool result: ids, titles, prices and the result order, for every reader."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from arena.types import ToolLogEntry, result_hash
from judging.facts import NOTHING, logged_facts, result_facts

PAGE = json.dumps(
    [
        {"product_id": "2", "title": "Tent Two", "price": 20},
        {"product_id": 1, "title": "Tent One", "price": 10.5, "shop": {"product_id": "9"}},
        {"product_id": True, "title": 3},
    ]
)


def test_a_search_page_shows_its_ids_in_order_with_titles_and_prices() -> None:
    facts = result_facts(PAGE)
    assert facts.ranked_ids == ("2", "1")  # a boolean is no id
    assert facts.product_ids == {"1", "2", "9"}
    assert facts.titles == {"Tent One", "Tent Two"}
    assert dict(facts.prices) == {"2": 20.0, "1": 10.5}


def test_text_that_is_not_json_or_too_deep_shows_nothing() -> None:
    assert result_facts("unknown product id 9") is NOTHING
    assert result_facts("[" * 100_000 + "]" * 100_000) is NOTHING


def test_the_log_shows_only_what_its_successful_calls_returned() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    entries = [
        ToolLogEntry(
            episode_id="e",
            seq=seq,
            tool="find_product",
            arguments={},
            result=result,
            result_hash=result_hash(result),
            status=status,
            started_at=t0,
            finished_at=t0,
        )
        for seq, (result, status) in enumerate(
            [(PAGE, "ok"), (json.dumps({"error": "x", "product_id": "7"}), "error")]
        )
    ]
    assert logged_facts(entries).product_ids == {"1", "2", "9"}
