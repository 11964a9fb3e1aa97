"""The agent tools against a real index of the 20-product fixture catalog, with hand-computed expectations."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.index import SearchIndex
from arena.tools import (
    DEFAULT_TOOLSET,
    TOOLSETS,
    ToolContext,
    ToolKind,
    canonical_arguments,
    offers,
    run_tool,
    tool_kind,
    tool_names,
    tool_schemas,
)
from arena.types import ToolResult

RUNNING_BY_PRICE = ["1005", "1004", "1002", "1001", "1003"]  # 350, 450, 1800, 3200, 4500
RUNNING_BY_SOLD = ["1004", "1005", "1002", "1001", "1003"]  # 9800, 2100, 1200, 540, 300


@pytest.fixture
def ctx(fixture_index: SearchIndex) -> ToolContext:
    return ToolContext(index=fixture_index)


@pytest.fixture
def ctx2(fixture_index: SearchIndex) -> ToolContext:
    return ToolContext(index=fixture_index, toolset="arena-2")


def ok(result: ToolResult) -> Any:
    assert not result.error, result.content
    return json.loads(result.content)


def err(result: ToolResult) -> str:
    assert result.error, result.content
    message = json.loads(result.content)["error"]
    assert isinstance(message, str) and message
    return message


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [row["product_id"] for row in rows]


def search(ctx: ToolContext, **arguments: Any) -> list[dict[str, Any]]:
    rows = ok(run_tool("find_product", arguments, ctx))
    assert isinstance(rows, list)
    return rows


# --------------------------------------------------------------------------- find_product


def test_find_product_returns_only_the_search_fields(ctx: ToolContext) -> None:
    rows = search(ctx, q="cymbal", page=1)
    assert sorted(ids(rows)) == ["2001", "2002"]
    by_id = {row["product_id"]: row for row in rows}
    assert by_id["2002"] == {
        "product_id": "2002",
        "shop_id": "s4",
        "title": "Zildjian Crash Cymbal 16 inch Bronze",
        "price": 6100.0,
        "service": ["official", "freeShipping"],
        "sold_count": 40,
    }


def test_find_product_matches_any_query_word(ctx: ToolContext) -> None:
    # OR semantics: every product with "running" or "shoes" in title, sku values or attributes.
    assert sorted(ids(search(ctx, q="running shoes", page=1))) == sorted(RUNNING_BY_PRICE)


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("priceasc", RUNNING_BY_PRICE),
        ("pricedesc", RUNNING_BY_PRICE[::-1]),
        ("order", RUNNING_BY_SOLD),
    ],
)
def test_find_product_sorts(ctx: ToolContext, sort: str, expected: list[str]) -> None:
    assert ids(search(ctx, q="running shoes", page=1, sort=sort)) == expected


def test_find_product_default_sort_equals_no_sort(ctx: ToolContext) -> None:
    plain = search(ctx, q="running shoes", page=1)
    assert search(ctx, q="running shoes", page=1, sort="default") == plain
    assert search(ctx, q="running shoes", page=1, sort="") == plain


@pytest.mark.parametrize(
    ("price", "expected"),
    [
        ("400-2000", ["1004", "1002"]),
        ("-400", ["1005"]),
        ("3000-", ["1001", "1003"]),
        ("450-450", ["1004"]),
        (" 350 - 1800 ", ["1005", "1004", "1002"]),
        ("3200.5-4500.0", ["1003"]),
        ("", RUNNING_BY_PRICE),
        ("-", RUNNING_BY_PRICE),
    ],
)
def test_find_product_filters_by_price(ctx: ToolContext, price: str, expected: list[str]) -> None:
    assert ids(search(ctx, q="running shoes", page=1, price=price, sort="priceasc")) == expected


@pytest.mark.parametrize(
    ("service", "expected"),
    [
        ("COD", ["1005", "1004", "1002"]),
        ("official,COD", ["1002"]),
        (" freeShipping , official ", ["1001"]),
        ("flashsale", ["1003"]),
        ("default", RUNNING_BY_PRICE),
        ("COD,default", ["1005", "1004", "1002"]),
    ],
)
def test_find_product_filters_by_every_service(ctx: ToolContext, service: str, expected: list[str]) -> None:
    assert ids(search(ctx, q="running shoes", page=1, service=service, sort="priceasc")) == expected


def test_find_product_filters_by_shop(ctx: ToolContext) -> None:
    assert ids(search(ctx, q="running shoes", page=1, shop_id="s2", sort="priceasc")) == ["1004", "1003"]
    assert search(ctx, q="running shoes", page=1, shop_id="s9") == []
    assert ids(search(ctx, q="running shoes", page=1, shop_id="  ", sort="priceasc")) == RUNNING_BY_PRICE


def test_find_product_combines_filters(ctx: ToolContext) -> None:
    rows = search(ctx, q="running shoes", page=1, shop_id="s1", price="-2000", service="COD")
    assert ids(rows) == ["1002"]


def test_find_product_pages_hold_ten(ctx: ToolContext) -> None:
    # 11 matches: chili x3, sponge x2, wheel x2, bronze x2, calculator, violin.
    q = "chili sponge wheel bronze calculator violin"
    first = search(ctx, q=q, page=1, sort="priceasc")
    second = search(ctx, q=q, page=2, sort="priceasc")
    assert len(first) == 10
    assert ids(second) == ["2002"]  # the most expensive match
    assert [row["price"] for row in first] == sorted(row["price"] for row in first)
    assert search(ctx, q=q, page=3) == []


def test_find_product_page_may_be_a_string_of_digits(ctx: ToolContext) -> None:
    q = "chili sponge wheel bronze calculator violin"
    as_text = run_tool("find_product", {"q": q, "page": " 2 ", "sort": "priceasc"}, ctx)
    assert not as_text.error
    assert json.loads(as_text.content) == search(ctx, q=q, page=2, sort="priceasc")


def test_find_product_without_matches_is_an_empty_result(ctx: ToolContext) -> None:
    assert search(ctx, q="submarine", page=1) == []


@pytest.mark.parametrize(
    "q",
    ['title:(nike OR "', "running AND -shoes", "shoes^10 ~2 *", "(((", 'NOT "x', "' OR 1=1 --", "\\\\"],
)
def test_find_product_query_syntax_is_plain_text(ctx: ToolContext, q: str) -> None:
    result = run_tool("find_product", {"q": q, "page": 1}, ctx)
    assert not result.error
    assert isinstance(json.loads(result.content), list)


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"q": "shoes"}, "missing required argument 'page'"),
        ({"page": 1}, "missing required argument 'q'"),
        ({"q": "shoes", "page": 0}, "page"),
        ({"q": "shoes", "page": 6}, "less than or equal to 5"),
        ({"q": "shoes", "page": "one"}, "valid integer"),
        ({"q": "shoes", "page": "9"}, "less than or equal to 5"),
        ({"q": "shoes", "page": 1.0}, "valid integer"),
        ({"q": "shoes", "page": True}, "valid integer"),
        ({"q": "", "page": 1}, "must not be empty"),
        ({"q": "   ", "page": 1}, "must not be empty"),
        ({"q": "x" * 513, "page": 1}, "longer than 512"),
        ({"q": 7, "page": 1}, "valid string"),
        ({"q": "shoes", "page": 1, "limit": 5}, "unexpected argument 'limit'"),
        ({"q": "shoes", "page": 1, "sort": "relevance"}, "sort"),
        ({"q": "shoes", "page": 1, "price": "cheap"}, "low-high"),
        ({"q": "shoes", "page": 1, "price": "100"}, "low-high"),
        ({"q": "shoes", "page": 1, "price": "1e3-"}, "low-high"),
        ({"q": "shoes", "page": 1, "price": "-5-10"}, "low-high"),
        ({"q": "shoes", "page": 1, "price": "nan-100"}, "low-high"),
        ({"q": "shoes", "page": 1, "price": "500-100"}, "low price is above the high price"),
        ({"q": "shoes", "page": 1, "price": 100}, "valid string"),
        ({"q": "shoes", "page": 1, "service": "freeshipping"}, "unknown service 'freeshipping'"),
        ({"q": "shoes", "page": 1, "service": ["COD"]}, "valid string"),
        ({"q": "shoes", "page": 1, "shop_id": 12}, "valid string"),
    ],
)
def test_find_product_bad_arguments_are_error_results(
    ctx: ToolContext, arguments: dict[str, Any], fragment: str
) -> None:
    message = err(run_tool("find_product", arguments, ctx))
    assert message.startswith("invalid arguments for find_product")
    assert fragment in message


# --------------------------------------------------------------------------- argument strings and names


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ('{"q": "shoes", "page": 1', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"shoes"', "must be a JSON object"),
        ('{"q": "shoes", "page": NaN}', "not valid JSON"),
        ('{"q": "shoes", "page": Infinity}', "not valid JSON"),
        ("", "missing required argument"),
        ("[" * 5000 + "]" * 5000, "not valid JSON"),
        ('{"q": "' + "x" * 20_000 + '", "page": 1}', "longer than"),
    ],
)
def test_bad_argument_strings_are_error_results(ctx: ToolContext, arguments: str, fragment: str) -> None:
    assert fragment in err(run_tool("find_product", arguments, ctx))


def test_json_string_arguments_equal_object_arguments(ctx: ToolContext) -> None:
    as_text = run_tool("find_product", '{"q": "chili powder", "page": 1, "sort": "priceasc"}', ctx)
    as_object = run_tool("find_product", {"q": "chili powder", "page": 1, "sort": "priceasc"}, ctx)
    assert as_text == as_object
    assert ids(ok(as_text)) == ["4003", "4002", "4001"]


def test_unknown_tool_is_an_error_result_naming_the_tools(ctx: ToolContext) -> None:
    message = err(run_tool("buy_product", {"product_ids": "1001"}, ctx))
    assert "unknown tool 'buy_product'" in message
    assert "find_product" in message


def test_arena2_tools_are_unknown_in_the_default_set(ctx: ToolContext) -> None:
    assert ctx.toolset == DEFAULT_TOOLSET == "sb-1"
    assert "unknown tool" in err(run_tool("find_products_in_same_shop", {"shop_id": "s1"}, ctx))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from([t.name for t in TOOLSETS["arena-2"]] + ["nope"]),
    arguments=st.one_of(
        st.text(max_size=200),
        st.dictionaries(
            st.sampled_from(
                ["q", "page", "price", "service", "sort", "shop_id", "product_ids", "status", "x"]
            ),
            st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30)),
            max_size=6,
        ),
    ),
)
def test_run_tool_never_raises_on_agent_input(ctx2: ToolContext, name: str, arguments: Any) -> None:
    result = run_tool(name, arguments, ctx2)
    assert isinstance(json.loads(result.content), list | dict | str)


# --------------------------------------------------------------------------- view_product_information


def test_view_product_information_returns_details_in_request_order(ctx: ToolContext) -> None:
    rows = ok(run_tool("view_product_information", {"product_ids": " 2002, 1001,2002 ,"}, ctx))
    assert ids(rows) == ["2002", "1001"]
    assert rows[1] == {
        "product_id": "1001",
        "short_description": "Responsive cushioning.",
        "description": "Daily trainer with Zoom Air unit.",
        "sku_options": {
            "1": {"size": "42", "color_family": "black"},
            "2": {"size": "43", "color_family": "white"},
        },
        "attributes": {"brand": ["nike"], "activity_type": ["running"]},
    }


def test_view_product_information_reports_unknown_ids(ctx: ToolContext) -> None:
    rows = ok(run_tool("view_product_information", {"product_ids": "9999,3001"}, ctx))
    assert rows[0] == {"product_id": "9999", "error": "unknown product id"}
    assert rows[1]["product_id"] == "3001"
    assert "9999" in err(run_tool("view_product_information", {"product_ids": "9999,8888"}, ctx))


@pytest.mark.parametrize(
    ("product_ids", "fragment"),
    [
        ("", "at least one product id"),
        (" , ,", "at least one product id"),
        (",".join(str(i) for i in range(21)), "at most 20"),
        ("x" * 65, "longer than 64"),
        (1001, "valid string"),
    ],
)
def test_view_product_information_bad_ids(ctx: ToolContext, product_ids: Any, fragment: str) -> None:
    assert fragment in err(run_tool("view_product_information", {"product_ids": product_ids}, ctx))


# --------------------------------------------------------------------------- recommend_product, terminate


def test_recommend_product_acknowledges_the_answer_in_order(ctx: ToolContext) -> None:
    text = ok(run_tool("recommend_product", {"product_ids": "3002, 1001,3002"}, ctx))
    assert text == "Recommended to the user: 3002, 1001."
    # As in ShoppingBench, ids are not checked: the judge scores the answer.
    assert ok(run_tool("recommend_product", {"product_ids": "777"}, ctx)) == "Recommended to the user: 777."
    assert "at least one product id" in err(run_tool("recommend_product", {"product_ids": " "}, ctx))


def test_terminate_takes_success_or_failure(ctx: ToolContext) -> None:
    assert "success" in ok(run_tool("terminate", {"status": "success"}, ctx))
    assert "failure" in ok(run_tool("terminate", '{"status": "failure"}', ctx))
    assert "status" in err(run_tool("terminate", {"status": "done"}, ctx))
    assert "missing required argument 'status'" in err(run_tool("terminate", {}, ctx))


# --------------------------------------------------------------------------- arena-2 tools


def test_same_shop_lists_best_sellers_first(ctx2: ToolContext) -> None:
    rows = ok(run_tool("find_products_in_same_shop", {"shop_id": "s6"}, ctx2))
    assert ids(rows) == ["3003", "3001", "3002"]  # sold 1500, 800, 300
    assert set(rows[0]) == {"product_id", "shop_id", "title", "price", "service", "sold_count"}
    assert ok(run_tool("find_products_in_same_shop", {"shop_id": "s6", "page": 2}, ctx2)) == []


def test_same_shop_searches_within_the_shop(ctx2: ToolContext) -> None:
    assert ids(ok(run_tool("find_products_in_same_shop", {"shop_id": "s6", "q": "sponge"}, ctx2))) == ["3001"]
    both = ok(run_tool("find_products_in_same_shop", {"shop_id": "s1", "q": "running"}, ctx2))
    assert sorted(ids(both)) == ["1001", "1002"]


def test_same_shop_rejects_unknown_or_empty_shops(ctx2: ToolContext) -> None:
    assert "unknown shop_id: s404" in err(run_tool("find_products_in_same_shop", {"shop_id": "s404"}, ctx2))
    assert "must not be empty" in err(run_tool("find_products_in_same_shop", {"shop_id": " "}, ctx2))
    assert "less than or equal to 5" in err(
        run_tool("find_products_in_same_shop", {"shop_id": "s1", "page": 9}, ctx2)
    )


def voucher(ctx: ToolContext, **arguments: Any) -> Any:
    return run_tool("calculate_voucher", arguments, ctx)


def test_calculate_voucher_fixed_platform(ctx2: ToolContext) -> None:
    out = ok(
        voucher(
            ctx2,
            product_ids="1001,1003",
            voucher_type="platform",
            threshold=1000,
            discount_type="fixed",
            face_value=200,
        )
    )
    assert out["total"] == 7700.0
    assert out["shop_count"] == 2
    assert out["voucher_applies"] is True
    assert out["price_after_voucher"] == 7500.0
    assert out["products"] == [
        {"product_id": "1001", "shop_id": "s1", "price": 3200.0},
        {"product_id": "1003", "shop_id": "s2", "price": 4500.0},
    ]


def test_calculate_voucher_shop_voucher_needs_one_shop(ctx2: ToolContext) -> None:
    one_shop = ok(
        voucher(
            ctx2,
            product_ids="1001,1002",
            voucher_type="shop",
            threshold=1000,
            discount_type="fixed",
            face_value=200,
        )
    )
    assert one_shop["price_after_voucher"] == 4800.0
    two_shops = ok(
        voucher(
            ctx2,
            product_ids="1001,1003",
            voucher_type="shop",
            threshold=1000,
            discount_type="fixed",
            face_value=200,
        )
    )
    assert two_shops["voucher_applies"] is False
    assert two_shops["price_after_voucher"] == 7700.0
    assert "2 shops" in two_shops["reason"]


def test_calculate_voucher_percentage_is_capped(ctx2: ToolContext) -> None:
    capped = ok(
        voucher(
            ctx2,
            product_ids="1001,1002",
            voucher_type="platform",
            threshold=0,
            discount_type="percentage",
            discount=0.1,
            cap=300,
        )
    )
    assert capped["price_after_voucher"] == 4700.0  # 10% would be 500 off; the cap allows 300
    uncapped = ok(
        voucher(
            ctx2,
            product_ids="3001,3002",
            voucher_type="platform",
            threshold=0,
            discount_type="percentage",
            discount=0.1,
            cap=300,
        )
    )
    assert uncapped["price_after_voucher"] == 193.5  # (120 + 95) * 0.9


def test_calculate_voucher_below_threshold(ctx2: ToolContext) -> None:
    out = ok(
        voucher(
            ctx2,
            product_ids="5004",
            voucher_type="platform",
            threshold=31,
            discount_type="fixed",
            face_value=5,
        )
    )
    assert (out["voucher_applies"], out["price_after_voucher"]) == (False, 30.0)
    assert "below the threshold" in out["reason"]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"product_ids": "1001,9999"}, "unknown product ids: 9999"),
        ({"product_ids": "1001", "face_value": None}, "fixed voucher needs face_value"),
        ({"product_ids": "1001", "discount_type": "percentage", "discount": 1.5, "cap": 1}, "discount"),
        ({"product_ids": "1001", "discount_type": "percentage", "face_value": None, "cap": 10}, "percentage"),
        ({"product_ids": "1001", "threshold": -1}, "threshold"),
        ({"product_ids": "1001", "threshold": "100"}, "valid number"),
        ({"product_ids": "1001", "voucher_type": "store"}, "voucher_type"),
    ],
)
def test_calculate_voucher_bad_arguments(ctx2: ToolContext, arguments: dict[str, Any], fragment: str) -> None:
    base = {"voucher_type": "platform", "threshold": 100, "discount_type": "fixed", "face_value": 10}
    merged = {k: v for k, v in {**base, **arguments}.items() if v is not None}
    assert fragment in err(voucher(ctx2, **merged))


# --------------------------------------------------------------------------- schemas and canonical arguments


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_toolsets_have_shoppingbench_names() -> None:
    names = [s["function"]["name"] for s in tool_schemas()]
    assert names == ["find_product", "view_product_information", "recommend_product", "terminate"]
    wider = [s["function"]["name"] for s in tool_schemas("arena-2")]
    assert wider == [*names, "find_products_in_same_shop", "calculate_voucher"]


def test_find_product_schema_is_clean_openai() -> None:
    schema = tool_schemas()[0]
    assert schema["type"] == "function"
    params = schema["function"]["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["q", "page"]
    assert list(params["properties"]) == ["q", "page", "shop_id", "price", "sort", "service"]
    assert params["properties"]["sort"]["enum"] == ["priceasc", "pricedesc", "order", "default"]
    assert params["properties"]["page"] == {
        "type": "integer",
        "description": params["properties"]["page"]["description"],
        "minimum": 1,
        "maximum": 5,
    }
    assert params["properties"]["shop_id"]["type"] == "string"


@pytest.mark.parametrize("toolset", sorted(TOOLSETS))
def test_every_schema_is_plain_json_schema(toolset: str) -> None:
    for schema in tool_schemas(toolset):
        function = schema["function"]
        assert function["description"]
        assert not _keys(function["parameters"]) & {
            "title",
            "anyOf",
            "default",
            "$defs",
            "additionalProperties",
        }
        for name, spec in function["parameters"]["properties"].items():
            assert spec["type"] in {"string", "integer", "number"}, name
            assert spec["description"], name
        json.dumps(schema)


def test_terminate_schema_enumerates_status() -> None:
    params = tool_schemas()[3]["function"]["parameters"]
    assert params == {
        "type": "object",
        "properties": {
            "status": {
                "type": "string",
                "description": params["properties"]["status"]["description"],
                "enum": ["success", "failure"],
            }
        },
        "required": ["status"],
    }


def test_canonical_arguments_normalise_meaning() -> None:
    raw = '{"q": " shoes ", "page": 1, "sort": "default", "service": "COD, official", "price": "100.0-200"}'
    assert canonical_arguments("find_product", raw) == {
        "q": "shoes",
        "page": 1,
        "service": "official,COD",
        "price": "100-200",
    }
    assert canonical_arguments("view_product_information", {"product_ids": " 1, 2,1"}) == {
        "product_ids": "1,2"
    }
    assert canonical_arguments("find_products_in_same_shop", {"shop_id": "s1"}) == {
        "shop_id": "s1",
        "page": 1,
    }


def test_canonical_arguments_keep_invalid_input() -> None:
    assert canonical_arguments("find_product", {"q": "x", "page": 9}) == {"q": "x", "page": 9}
    assert canonical_arguments("find_product", "not json") == {"_raw": "not json"}
    assert canonical_arguments("nope", '{"a": 1}') == {"a": 1}


def test_canonical_arguments_run_the_same(ctx: ToolContext) -> None:
    raw = {"q": " running  shoes", "page": 1, "sort": "order", "service": "default", "price": "0-99999"}
    assert run_tool("find_product", canonical_arguments("find_product", raw), ctx) == run_tool(
        "find_product", raw, ctx
    )


def test_the_log_keeps_refused_arguments_as_encodable_text() -> None:
    from arena.tools import canonical_arguments

    kept = canonical_arguments("find_product", '{"q": "shoes \ud800"}')
    assert kept == {"_raw": '{"q": "shoes \\ud800"}'}
    json.dumps(kept, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("find_product", '{"q": " shoes ", "page": "2", "sort": "default"}'),
        ("find_product", '{"q": "shoes", "page": 9}'),
        ("find_product", "[1, 2]"),
        ("view_product_information", {"product_ids": "1001, 1001,"}),
        ("buy_product", '{"x": 1}'),
        ("find_product", '{"q": "shoes \ud800"}'),  # refused, and logged as encodable text
        (
            "find_products_in_same_shop",
            '{"product_id": "1001"}',
        ),  # not in sb-1
    ],
)
def test_run_call_is_run_tool_and_canonical_arguments_in_one_validation(
    ctx: ToolContext, name: str, arguments: str | dict[str, Any]
) -> None:
    from arena.tools import run_call

    result, canonical = run_call(name, arguments, ctx)
    assert result == run_tool(name, arguments, ctx)
    assert canonical == canonical_arguments(name, arguments)


def test_every_tool_has_a_kind_and_every_kind_a_tool() -> None:
    tools = {tool.name: tool.kind for tools in TOOLSETS.values() for tool in tools}
    assert tools == {
        "find_product": "search",
        "find_products_in_same_shop": "search",
        "view_product_information": "view",
        "recommend_product": "answer",
        "ask_user": "ask",
        "calculate_voucher": "compute",
        "terminate": "end",
    }
    assert set(tools.values()) == set(get_args(ToolKind))
    assert all(tool_kind(name) == kind for name, kind in tools.items())
    assert tool_kind("buy_now") is None


def test_kinds_name_their_tools_and_sets_offer_them() -> None:
    assert tool_names("answer", "end") == ("recommend_product", "terminate")
    assert tool_names("search") == ("find_product", "find_products_in_same_shop")
    assert offers("arena-3", "ask") and not offers(DEFAULT_TOOLSET, "ask")
    with pytest.raises(KeyError):
        offers("no-such-set", "ask")
