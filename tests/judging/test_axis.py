from __future__ import annotations

import json

from arena.types import ToolLogEntry, Trajectory
from judging.axis import axis_for_miner, classify_axis, mechanical_views, template_signature
from tests.judging.factory import Episode, good_shop_episode

# (query, search terms, the id the task wants)
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


Step = tuple[str, tuple[str, dict[str, str]]]
# Hand-written reasoning, as a model would think about each task's data (no shared template).
MODEL_CASES: list[tuple[str, list[Step]]] = [
    (
        CASES[0][0],
        [
            (
                "Men's Nike runners in size 42: the Pegasus line is the men's daily trainer, "
                "so I'll query nike pegasus.",
                ("find_product", {"q": "nike pegasus"}),
            ),
            (
                "1001 is the Air Zoom Pegasus for men; 1002 is a women's Revolution, so I drop it. "
                "Need to confirm a 42 variant on 1001.",
                ("view_product_information", {"product_ids": "1001"}),
            ),
            (
                "Variant 1 of 1001 is size 42 in black, price 3200. That satisfies the size; "
                "recommending 1001.",
                ("recommend_product", {"product_ids": "1001"}),
            ),
        ],
    ),
    (
        CASES[1][0],
        [
            (
                "Two constraints: bronze alloy and a 16-inch crash. Start broad with crash cymbal.",
                ("find_product", {"q": "crash cymbal"}),
            ),
            (
                "Both 2001 Arborea and 2002 Zildjian are bronze crashes; only the Zildjian title mentions "
                "16 inch. Are there other 16-inch crashes? Narrowing to zildjian 16 inch.",
                ("find_product", {"q": "zildjian 16 inch"}),
            ),
            (
                "No other 16-inch crash came up (5001 is a 12 inch wheel). Viewing 2002 and 2001 to "
                "compare their sizes.",
                ("view_product_information", {"product_ids": "2002,2001"}),
            ),
            (
                "2002 has a 16 inch variant while 2001 lists no size options at all, so 2002 wins.",
                ("recommend_product", {"product_ids": "2002"}),
            ),
        ],
    ),
    (
        CASES[2][0],
        [
            (
                "Horsetail hair bows are made for violins; searching violin bow horsetail.",
                ("find_product", {"q": "violin bow horsetail"}),
            ),
            (
                "Only 2003 from Heart String matches: full size, horsetail hair, 256 pesos. No alternative "
                "appeared, so I'll check its variants.",
                ("view_product_information", {"product_ids": "2003"}),
            ),
            (
                "It offers 4/4 and 3/4 sizes, good for an adult player; 2003 it is.",
                ("recommend_product", {"product_ids": "2003"}),
            ),
        ],
    ),
    (
        CASES[3][0],
        [
            (
                "A one kilogram bag of chili powder. First try the plain product name, chili powder.",
                ("find_product", {"q": "chili powder"}),
            ),
            (
                "Three hits: 4001 Hyco 1 kilo bag, 4002 is only 500g, 4003 a 100g bottle. "
                "Only 4001 is a kilo; "
                "viewing it to confirm the packaging.",
                ("view_product_information", {"product_ids": "4001"}),
            ),
            (
                "packaging_type bag confirmed on 4001 at 390. Before settling, is there a cheaper kilo "
                "bag? Search chili powder 1 kilo.",
                ("find_product", {"q": "chili powder 1 kilo"}),
            ),
            (
                "Still only 4001 comes in a 1 kilo bag; 4002 and 4003 are lighter. Recommending 4001.",
                ("recommend_product", {"product_ids": "4001"}),
            ),
        ],
    ),
    (
        CASES[4][0],
        [
            (
                "Material matters here (stainless, not plastic). Query: sponge holder stainless.",
                ("find_product", {"q": "sponge holder stainless"}),
            ),
            (
                "3001 is a stainless steel sink caddy at 120, whereas 3004 uses a plastic suction cup. "
                "I'll open 3001.",
                ("view_product_information", {"product_ids": "3001"}),
            ),
            (
                "Stainless steel confirmed for 3001; the plastic 3004 is out. Recommending 3001.",
                ("recommend_product", {"product_ids": "3001"}),
            ),
        ],
    ),
    (
        CASES[5][0],
        [
            (
                "They want an orange calculator that runs on batteries; query calculator orange.",
                ("find_product", {"q": "calculator orange"}),
            ),
            (
                "5003 Basic Calculator Orange 12 Digit says battery powered in its title; "
                "I'd double check the "
                "power_source attribute.",
                ("view_product_information", {"product_ids": "5003"}),
            ),
            (
                "power_source battery and an orange color_family variant on 5003, so it fits both wishes.",
                ("recommend_product", {"product_ids": "5003"}),
            ),
        ],
    ),
]


def model_episode(query: str, steps: list[Step]) -> Episode:
    """An agent whose reasoning chooses each query and reads each result."""
    ep = Episode(query)
    for thought, call in steps:
        ep.step(thought, call)
    ep.step("Done.", ("terminate", {"status": "success"}))
    return ep


def test_model_driven_trajectories_are_axis_a() -> None:
    set_a = [model_episode(*case).trajectory() for case in MODEL_CASES]
    assert [classify_axis(t).evidence.label for t in set_a] == ["A"] * len(MODEL_CASES)
    verdict = axis_for_miner(set_a)
    assert verdict.label == "A" and verdict.template is None


def test_a_model_with_one_fixed_strategy_is_mixed_as_a_set() -> None:
    # The precision limit, pinned: each trajectory reads as model-driven, but the same call
    # sequence on every task looks like a harness, so the miner is only "mixed".
    same = [MODEL_CASES[i] for i in (2, 4, 5)] * 2
    trajectories = [model_episode(*case).trajectory() for case in same]
    assert {classify_axis(t).evidence.label for t in trajectories} == {"A"}
    assert axis_for_miner(trajectories).label == "mixed"


def test_narrating_harness_is_axis_b() -> None:
    set_b = [harness_episode(q, narrate=True).trajectory() for q, _, _ in CASES]
    verdicts = [classify_axis(t).evidence for t in set_b]
    assert {v.label for v in verdicts} == {"B"}
    assert all(v.verbatim_query_searches == 1 for v in verdicts)
    assert axis_for_miner(set_b).label == "B"


def test_silent_harness_is_unknown_alone_but_b_as_a_set() -> None:
    set_b = [harness_episode(q, narrate=False).trajectory() for q, _, _ in CASES]
    assert {classify_axis(t).evidence.label for t in set_b} == {"unknown"}
    verdict = axis_for_miner(set_b)
    assert verdict.label == "B"
    assert verdict.template.startswith("find_product(q=query) > view_product_information()")


def restating_harness_episode(query: str, term: str) -> Episode:
    """A harness whose narration restates the arguments it chose (so each step reads as motivated)."""
    ep = Episode(query)
    ep.step(f'Searching for "{term}".', ("find_product", {"q": term}))
    rows = json.loads(ep.messages[-1].content or "[]")
    top = [r["product_id"] for r in rows[:3]] or ["1001"]
    ep.step(
        f"Checking the details of {', '.join(top)}.",
        ("view_product_information", {"product_ids": ",".join(top)}),
    )
    ep.step(f"Recommending {top[0]}, the best match.", ("recommend_product", {"product_ids": top[0]}))
    ep.step("Finished with status success.", ("terminate", {"status": "success"}))
    return ep


def test_harness_restating_its_arguments_is_b_as_a_set() -> None:
    set_b = [restating_harness_episode(q, terms[0]).trajectory() for q, terms, _ in CASES]
    # One by one, each step names its own arguments, so the trajectories read as model-driven...
    assert {classify_axis(t).evidence.label for t in set_b} <= {"A", "mixed"}
    # ...but across tasks the same sentences recur with other data filled in.
    verdict = axis_for_miner(set_b)
    assert verdict.label == "B" and verdict.narration_template_share == 1.0


def test_template_needs_enough_trajectories() -> None:
    set_b = [harness_episode(q, narrate=False).trajectory() for q, _, _ in CASES[:4]]
    assert axis_for_miner(set_b).label == "unknown"


def test_repeated_narration_counts_as_template() -> None:
    ep = Episode("nike running shoes")
    for _ in range(3):
        ep.step("Let me search the nike running catalogue again.", ("find_product", {"q": "nike running"}))
    verdict = classify_axis(ep.trajectory()).evidence
    assert verdict.kinds == {"driven": 1, "narrated": 2}
    assert verdict.label == "mixed"


def test_attested_nonces_decide() -> None:
    ep = good_shop_episode()
    traj = ep.trajectory()
    valid = [e.model_copy(update={"nonce_status": "valid"}) for e in ep.log]
    proven = classify_axis(traj, valid).evidence
    assert proven.label == "A-attested" and proven.attested
    half = valid[:2] + ep.log[2:]
    assert classify_axis(traj, half).evidence.label == "mixed"


def test_hidden_calls_demote_a_to_mixed() -> None:
    traj = good_shop_episode().trajectory()
    assert classify_axis(traj).evidence.label == "A"
    assert classify_axis(traj, hidden_calls=1).evidence.label == "mixed"


def test_template_signature_tracks_argument_provenance() -> None:
    harness = harness_episode(CASES[0][0], narrate=False).trajectory()
    assert template_signature(harness) == (
        "find_product(q=query) > view_product_information() > recommend_product() > terminate()"
    )
    assert mechanical_views(harness) is True
    model = model_episode(*MODEL_CASES[1]).trajectory()
    assert template_signature(model).startswith(
        "find_product(q=subset) > find_product(q=free) > view_product_information()"
    )
    assert mechanical_views(model) is False  # it viewed 2002 before 2001, against the ranking


def test_no_steps_is_unknown_and_check_is_unscored() -> None:
    ep = Episode("q")
    ep.say("hello")
    check = classify_axis(Trajectory.model_validate(ep.trajectory().to_wire()))
    assert check.evidence.label == "unknown"
    assert check.value is None


def quitter_episode(query: str) -> Episode:
    """A miner that gives up at once: one search, then terminate, no answer (the demo's give_up agent)."""
    ep = Episode(query)
    ep.step("Searching for the request.", ("find_product", {"q": query[:100]}))
    ep.step("Nothing here looks right; giving up.", ("terminate", {"status": "failure"}))
    return ep


def test_a_quitter_is_degenerate_not_b() -> None:
    # No harness decision to learn from: one search and no answer is not evidence of a harness.
    trajectories = [quitter_episode(q).trajectory() for q, _, _ in CASES]
    checks = [classify_axis(t) for t in trajectories]
    assert {c.evidence.label for c in checks} == {"unknown"}
    assert all(c.evidence.degenerate and c.value is None for c in checks)
    assert axis_for_miner(trajectories).label == "unknown"
    # Mixed in with a narrating harness's trajectories, the quitter's do not change the verdict.
    harness = [harness_episode(q, narrate=True).trajectory() for q, _, _ in CASES]
    assert axis_for_miner(harness + trajectories).label == "B"


def test_a_trace_that_searched_and_answered_is_not_degenerate() -> None:
    check = classify_axis(harness_episode(CASES[0][0], narrate=True).trajectory())
    assert check.evidence.label == "B" and check.evidence.degenerate is None


FILLERS = ("Okay.", "Hmm, let me think.", "Right, moving on carefully.", "qzx vlorp 7731 brindle.")


def filler_harness_episode(query: str, term: str, pad: int) -> Episode:
    """The red team's harness: Python picks each call; its reasoning names the arguments, amid fillers."""
    ep = restating_harness_episode(query, term)
    filler = " ".join(FILLERS[(pad + k) % len(FILLERS)] for k in range(3))
    messages = [
        m.model_copy(update={"reasoning_content": f"{filler} {m.content}"}) if m.tool_calls else m
        for m in ep.messages
    ]
    ep.messages = messages
    return ep


def attested(ep: Episode) -> list[ToolLogEntry]:
    return [entry.model_copy(update={"nonce_status": "valid"}) for entry in ep.log]


def test_a_harness_with_filler_reasoning_is_never_a_attested() -> None:
    episodes = [filler_harness_episode(q, terms[0], pad) for pad, (q, terms, _) in enumerate(CASES)]
    labels = {classify_axis(ep.trajectory(), ep.log).evidence.label for ep in episodes}
    assert "A-attested" not in labels  # structure alone never proves A, whatever the text says
    verdict = axis_for_miner([ep.trajectory() for ep in episodes], [ep.log for ep in episodes])
    assert verdict.label != "A-attested"
    # Attesting some of its calls (a completion served for one of them) makes it mixed, not attested.
    ep = episodes[0]
    some = attested(ep)[:1] + ep.log[1:]
    assert classify_axis(ep.trajectory(), some).evidence.label == "mixed"


def test_every_call_attested_is_a_attested_and_the_miner_keeps_it() -> None:
    # A steady model repeating one strategy reads as "mixed" across tasks by structure; proven
    # call by call, it is A-attested, trajectory by trajectory and as a miner.
    same = [MODEL_CASES[i] for i in (2, 4, 5)] * 2
    episodes = [model_episode(*case) for case in same]
    checks = [classify_axis(ep.trajectory(), attested(ep)) for ep in episodes]
    assert {c.evidence.label for c in checks} == {"A-attested"} and {c.value for c in checks} == {1.0}
    assert axis_for_miner([ep.trajectory() for ep in episodes]).label == "mixed"
    verdict = axis_for_miner([ep.trajectory() for ep in episodes], [attested(ep) for ep in episodes])
    assert verdict.label == "A-attested"
