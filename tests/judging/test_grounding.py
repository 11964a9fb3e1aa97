from __future__ import annotations

import json

from arena.types import Message, ToolLogEntry, Trajectory, result_hash
from judging.claims import find_claims
from judging.facts import result_facts
from judging.grounding import check_grounding
from tests.judging.factory import (
    T0,
    Checked,
    Episode,
    catalog,
    context,
    good_shop_episode,
    replace_message,
    tool_message_index,
)


def run(trajectory: Trajectory, log: list[ToolLogEntry]) -> Checked:
    return Checked(check_grounding(context(trajectory, log)))


def test_honest_trajectory_is_fully_grounded() -> None:
    ep = good_shop_episode()
    result = run(ep.trajectory(), ep.log)
    assert (
        result.fabricated_call_ids == ()
        and result.hidden_calls == ()
        and result.hallucinated_product_ids == ()
    )
    assert result.check.value == 1.0
    assert result.claims and all(c.correct for c in result.claims)


def test_fabricated_tool_result_is_caught() -> None:
    ep = good_shop_episode()
    traj = ep.trajectory()
    index = tool_message_index(traj, "call_1")
    rows = json.loads(traj.messages[index].content or "[]")
    rows[0]["price"] = 1.0  # the miner "improves" a price
    forged = Message(role="tool", tool_call_id="call_1", content=json.dumps(rows))
    result = run(replace_message(traj, index, forged), ep.log)
    assert result.fabricated_call_ids == ("call_1",)
    assert result.check.value == 0.0


def test_result_for_a_call_the_server_never_ran_is_fabricated() -> None:
    ep = good_shop_episode()
    result = run(ep.trajectory(), [e for e in ep.log if e.call_id != "call_2"])
    assert result.fabricated_call_ids == ("call_2",)


def test_result_attached_to_other_arguments_is_fabricated() -> None:
    ep = good_shop_episode()
    log = [
        e.model_copy(update={"arguments": {"q": "adidas"}}) if e.call_id == "call_1" else e for e in ep.log
    ]
    assert run(ep.trajectory(), log).fabricated_call_ids == ("call_1",)


def test_hidden_call_is_flagged() -> None:
    ep = good_shop_episode()
    content = json.dumps([])
    extra = ToolLogEntry(
        episode_id="ep-1",
        seq=99,
        call_id="secret",
        tool="find_product",
        arguments={"q": "answer key"},
        result=content,
        result_hash=result_hash(content),
        status="ok",
        started_at=T0,
        finished_at=T0,
    )
    result = run(ep.trajectory(), [*ep.log, extra])
    assert result.hidden_calls == ("secret",)
    assert result.fabricated_call_ids == ()
    assert result.check.value == 1 - 1 / (len(ep.log) + 1)


def test_log_without_call_ids_matches_by_content() -> None:
    ep = good_shop_episode()
    log = [e.model_copy(update={"call_id": None}) for e in ep.log]
    result = run(ep.trajectory(), log)
    assert result.fabricated_call_ids == () and result.hidden_calls == ()


def test_hash_only_log_entries_still_verify() -> None:
    ep = good_shop_episode()
    log = [e.model_copy(update={"result": ""}) for e in ep.log]
    assert run(ep.trajectory(), log).check.value == 1.0


def test_hallucinated_product_id() -> None:
    ep = Episode("q")
    ep.step("search", ("find_product", {"q": "cymbal"}))
    ep.step("I just know 5004 is right", ("recommend_product", {"product_ids": "5004"}))
    ep.step("bye", ("terminate", {}))
    result = run(ep.trajectory(), ep.log)
    assert result.hallucinated_product_ids == ("5004",)
    assert result.check.value == 0.0


def test_ids_seen_only_after_the_answer_do_not_ground_it() -> None:
    ep = Episode("q")
    ep.step("rec", ("recommend_product", {"product_ids": "1001"}))
    ep.step("now look", ("find_product", {"q": "nike pegasus"}))
    assert run(ep.trajectory(), ep.log).hallucinated_product_ids == ("1001",)


def test_ids_from_a_fabricated_result_do_not_ground_the_answer() -> None:
    ep = Episode("q")
    ep.step("search", ("find_product", {"q": "cymbal"}))
    ep.step("rec", ("recommend_product", {"product_ids": "5004"}))
    traj = ep.trajectory()
    index = tool_message_index(traj, "call_1")
    forged = Message(role="tool", tool_call_id="call_1", content=json.dumps([{"product_id": "5004"}]))
    result = run(replace_message(traj, index, forged), ep.log)
    assert result.hallucinated_product_ids == ("5004",) and result.fabricated_call_ids == ("call_1",)


def test_misquoted_price_lowers_grounding() -> None:
    ep = Episode("q")
    ep.step("search", ("find_product", {"q": "nike pegasus"}))
    ep.step("1001 costs 999 and is perfect.", ("recommend_product", {"product_ids": "1001"}))
    ep.step("bye", ("terminate", {}))
    result = run(ep.trajectory(), ep.log)
    wrong = [c for c in result.claims if not c.correct]
    assert [(c.product_id, c.stated, c.actual) for c in wrong] == [("1001", "999", "3200")]
    assert result.check.value == 0.0  # the only claim is wrong


def test_misquoted_attribute() -> None:
    products = catalog()
    claims = find_claims("1001 has color_family: green", {"1001": products["1001"]})
    assert [(c.key, c.correct) for c in claims] == [("color_family", False)]
    ok = find_claims("1001 has color_family: black, size: 42", {"1001": products["1001"]})
    assert [c.correct for c in ok] == [True, True]


def test_basket_figures_are_not_product_claims() -> None:
    products = catalog()
    claims = find_claims(
        "3001 plus 3003: the total is 180, after the voucher 140",
        {"3001": products["3001"], "3003": products["3003"]},
    )
    assert claims == []


def test_result_facts_walk_nested_json() -> None:
    content = json.dumps({"found": True, "products": [{"product_id": 7}, {"product_id": "8"}]})
    assert result_facts(content).product_ids == {"7", "8"}
    assert result_facts("unknown product id 9").product_ids == set()
