from __future__ import annotations

import json

from arena.types import Trajectory
from judging.axis import axis_check, axis_for_miner, classify_axis, template_signature
from tests.judging.factory import Episode, good_shop_episode

# (query, search terms the model would choose, id it settles on)
CASES = [
    ("I need Nike running shoes for men, size 42.", ["nike pegasus running"], "1001"),
    ("Looking for a bronze crash cymbal, 16 inch.", ["crash cymbal", "zildjian crash cymbal bronze"], "2002"),
    ("I want a violin bow with horsetail hair.", ["violin bow horsetail"], "2003"),
    ("Chili powder in a one kilo bag please.", ["chili powder", "chili powder 1 kilo"], "4001"),
    ("A stainless steel sponge holder for my sink.", ["sponge holder stainless"], "3001"),
    ("Battery powered calculator, orange colour.", ["calculator orange", "basic calculator battery"], "5003"),
]


def harness_episode(query: str, narrate: bool) -> Episode:
    """A fixed pipeline: search the query verbatim, view the top three, recommend the first."""
    ep = Episode(query)
    ep.step("Searching the catalog for the request now." if narrate else None, ("find_product", {"q": query}))
    rows = json.loads(ep.messages[-1].content or "[]")
    top = [r["product_id"] for r in rows[:3]] or ["1001"]
    ep.step(
        "Checking the top candidates in detail." if narrate else None,
        ("view_product_information", {"product_ids": ",".join(top)}),
    )
    ep.step(
        "Recommending the best match to the user." if narrate else None,
        ("recommend_product", {"product_ids": top[0]}),
    )
    ep.step(None, ("terminate", {"status": "success"}))
    return ep


def model_episode(query: str, terms: list[str], pick: str) -> Episode:
    """An agent whose reasoning chooses each query and reads each result."""
    ep = Episode(query)
    ep.step(
        f"The user wants: {query} A short query should work: '{terms[0]}'.", ("find_product", {"q": terms[0]})
    )
    for term in terms[1:]:
        rows = json.loads(ep.messages[-1].content or "[]")
        first = rows[0] if rows else {"product_id": "none", "title": "nothing"}
        ep.step(
            f"The top hit {first['product_id']} ({first['title']}) is not specific enough; "
            f"I will narrow the search to '{term}'.",
            ("find_product", {"q": term}),
        )
    rows = json.loads(ep.messages[-1].content or "[]")
    others = [r["product_id"] for r in rows if r["product_id"] != pick][:1]
    chosen = next((r for r in rows if r["product_id"] == pick), {"title": "?", "price": 0})
    ep.step(
        f"{pick} ({chosen['title']}) at {chosen['price']} matches; I should compare it against "
        f"{', '.join(others) or 'nothing else'} by viewing {pick}.",
        ("view_product_information", {"product_ids": pick}),
    )
    ep.step(
        f"{pick} has the right attributes, better than {', '.join(others) or 'the rest'}. "
        f"Recommending {pick}.",
        ("recommend_product", {"product_ids": pick}),
    )
    ep.step("Done.", ("terminate", {"status": "success"}))
    return ep


def test_model_driven_trajectories_are_axis_a() -> None:
    set_a = [model_episode(*case).trajectory() for case in CASES]
    assert [classify_axis(t).label for t in set_a] == ["A"] * len(CASES)
    verdict = axis_for_miner(set_a)
    assert verdict.label == "A" and verdict.evidence["template"] is None


def test_narrating_harness_is_axis_b() -> None:
    set_b = [harness_episode(q, narrate=True).trajectory() for q, _, _ in CASES]
    verdicts = [classify_axis(t) for t in set_b]
    assert {v.label for v in verdicts} == {"B"}
    assert all(v.evidence["verbatim_query_searches"] == 1 for v in verdicts)
    assert axis_for_miner(set_b).label == "B"


def test_silent_harness_is_unknown_alone_but_b_as_a_set() -> None:
    set_b = [harness_episode(q, narrate=False).trajectory() for q, _, _ in CASES]
    assert {classify_axis(t).label for t in set_b} == {"unknown"}
    verdict = axis_for_miner(set_b)
    assert verdict.label == "B"
    assert verdict.evidence["template"].startswith(
        "find_product(q=query) > view_product_information(ids=top)"
    )


def test_template_needs_enough_trajectories() -> None:
    set_b = [harness_episode(q, narrate=False).trajectory() for q, _, _ in CASES[:4]]
    assert axis_for_miner(set_b).label == "unknown"


def test_repeated_narration_counts_as_template() -> None:
    ep = Episode("nike running shoes")
    for _ in range(3):
        ep.step("Let me search the nike running catalogue again.", ("find_product", {"q": "nike running"}))
    verdict = classify_axis(ep.trajectory())
    assert verdict.evidence["kinds"] == {"driven": 1, "narrated": 2}
    assert verdict.label == "mixed"


def test_attested_nonces_decide() -> None:
    ep = good_shop_episode()
    traj = ep.trajectory()
    valid = [e.model_copy(update={"nonce_status": "valid"}) for e in ep.log]
    assert classify_axis(traj, valid).label == "A" and classify_axis(traj, valid).evidence["attested"]
    half = valid[:2] + ep.log[2:]
    assert classify_axis(traj, half).label == "mixed"


def test_hidden_calls_demote_a_to_mixed() -> None:
    traj = good_shop_episode().trajectory()
    assert classify_axis(traj).label == "A"
    assert classify_axis(traj, hidden_calls=1).label == "mixed"


def test_template_signature_tracks_argument_provenance() -> None:
    harness = harness_episode(CASES[0][0], narrate=False).trajectory()
    assert template_signature(harness) == (
        "find_product(q=query) > view_product_information(ids=top) > recommend_product(ids=top) > terminate()"
    )
    model = model_episode(*CASES[1]).trajectory()
    assert "q=subset" in template_signature(model) or "q=free" in template_signature(model)


def test_no_steps_is_unknown_and_check_is_unscored() -> None:
    ep = Episode("q")
    ep.say("hello")
    verdict = classify_axis(Trajectory.model_validate(ep.trajectory().to_wire()))
    assert verdict.label == "unknown"
    assert axis_check(verdict).value is None
