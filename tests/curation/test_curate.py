"""The curation funnel, stage by stage, on planted traces; then the whole funnel on SQLite and PostgreSQL."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from arena.clusters import AUDIT_NEAR_DUP_THRESHOLD, NEAR_DUP_THRESHOLD
from arena.types import Message, Task
from arena.wording import jaccard, shingles
from curation.chat import MESSAGE_KEYS, ChatRecord, normalise
from curation.config import CurationConfig
from curation.curate import Curation, curate
from curation.errors import CurationError, SplitLeakError
from curation.funnel import Funnel
from curation.labels import positive
from curation.rewards import turn_rewards
from curation.signature import strategy
from curation.stages.axis import axis_route, converts
from curation.stages.dedup import dedup
from curation.stages.hard_rejects import hard_reject
from curation.stages.ranking import structural_score
from curation.stages.reasoning_gate import reasoning_gate
from curation.stages.split import split_of
from curation.stages.stage import AXIS_B, MAIN, PASS, UNSCORED, TraceContext, aside, drop
from curation.workspace import Row, Workspace
from judging.types import ProcessStats
from storage.records import JudgedTrace
from tests.curation import planted
from tests.curation.planted import judged, store, task, trace, with_messages

# ------------------------------------------------------------------ normalise


def test_normalise_gives_the_canonical_chat_schema() -> None:
    t = task(1)
    record = normalise(judged(trace(1, t), t))
    assert isinstance(record, ChatRecord)
    assert all(tuple(m) == MESSAGE_KEYS for m in record.messages)
    assert [m["role"] for m in record.prompt] == ["system", "user"]
    assert record.prompt[1]["content"] == t.query
    first_call = record.completion[0]
    assert first_call["content"] == "" and first_call["reasoning_content"] == "I call find_product."
    arguments = first_call["tool_calls"][0]["function"]["arguments"]
    assert arguments == {"q": t.gold[0].titles[0].lower(), "page": 1}  # a dict, not a JSON string
    tool = record.completion[1]
    assert tool["role"] == "tool" and tool["name"] == "find_product" and tool["tool_call_id"] == "c1-0"
    assert {s["function"]["name"] for s in record.tools} >= {"find_product", "recommend_product"}


def _drop(tr: planted.Trace, t: planted.Task | None = None) -> str:
    t = t or task(1)
    result = normalise(judged(tr, t))
    assert isinstance(result, str), "expected a drop"
    return result


def _messages(tr: planted.Trace) -> list[Message]:
    assert tr.trajectory is not None
    return list(tr.trajectory.messages)


def test_normalise_drops_each_malformed_shape() -> None:
    t = task(1)
    base = trace(1, t)
    msgs = _messages(base)
    call = msgs[2].tool_calls[0]  # type: ignore[index]
    bad_args = call.model_copy(update={"function": call.function.model_copy(update={"arguments": "[1, 2]"})})
    unknown = call.model_copy(update={"function": call.function.model_copy(update={"name": "buy_now"})})
    cases = {
        "no_trajectory": trace(1, t, answered=False),
        "prompt_mismatch": trace(1, t, user="Ignore the task; say hi."),
        "extra_user_turn": trace(1, t, extra=[Message(role="user", content="Please call a tool.")]),
        "unknown_tool": with_messages(
            base, [*msgs[:2], msgs[2].model_copy(update={"tool_calls": (unknown,)}), *msgs[3:]]
        ),
        "bad_arguments": with_messages(
            base, [*msgs[:2], msgs[2].model_copy(update={"tool_calls": (bad_args,)}), *msgs[3:]]
        ),
        "duplicate_call_id": with_messages(base, [*msgs[:4], msgs[2], msgs[3], *msgs[4:]]),
        "orphan_tool_message": with_messages(base, [*msgs[:2], msgs[3], *msgs[4:]]),
        "unanswered_tool_call": with_messages(base, [*msgs[:3], *msgs[4:]]),
        "no_assistant_turn": with_messages(base, msgs[:2]),
    }
    for reason, tr in cases.items():
        assert _drop(tr, t) == reason, reason
    unknown_toolset = trace(1, t, toolset="no-such-set")
    assert _drop(unknown_toolset, t) == "unknown_toolset"


def test_normalise_accepts_a_prompt_without_system_message() -> None:
    t = task(2)
    record = normalise(judged(trace(2, t, system=None), t))
    assert isinstance(record, ChatRecord) and record.prompt_length == 1


# ------------------------------------------------------------------ hard_rejects, reasoning_gate, axis


def test_hard_rejects() -> None:
    t, context = task(1), TraceContext(CurationConfig())
    assert hard_reject(judged(trace(1, t), t), context) == PASS
    rejected = judged(trace(1, t, rejects=["recommend_not_once"]), t)
    assert hard_reject(rejected, context) == drop("reject:recommend_not_once")
    assert hard_reject(judged(trace(1, t, fabricated=["c1-0"]), t), context) == drop("fabricated")
    assert hard_reject(judged(trace(1, t, end="timeout"), t), context) == drop("end:timeout")


def test_reasoning_gate_threshold_unscored_policies_and_injection() -> None:
    t = task(1)
    context = TraceContext(CurationConfig(min_reasoning=0.6))
    assert reasoning_gate(judged(trace(1, t, reasoning=0.6), t), context) == PASS
    assert reasoning_gate(judged(trace(1, t, reasoning=0.59), t), context) == drop("below_min_reasoning")
    injected = judged(trace(1, t, reasoning=0.9, injection=True), t)
    assert reasoning_gate(injected, context) == drop("injection_flagged")
    unscored = judged(trace(1, t, reasoning=None), t)
    assert reasoning_gate(unscored, context) == PASS  # the default keeps it: unscored is not zero
    assert reasoning_gate(unscored, TraceContext(CurationConfig(unscored="drop"))) == drop("unscored")
    assert reasoning_gate(unscored, TraceContext(CurationConfig(unscored="separate"))) == aside(UNSCORED)


def _labelled(t: Task, label: str) -> JudgedTrace:
    return judged(trace(1, t, axis=label), t)


def test_axis_route() -> None:
    t, context = task(1), TraceContext(CurationConfig())
    assert axis_route(_labelled(t, "A"), context) == PASS
    assert axis_route(_labelled(t, "B"), context) == aside(AXIS_B)
    assert axis_route(_labelled(t, "mixed"), context) == drop("axis_mixed")
    unknown_taken = TraceContext(CurationConfig(axes=("A", "unknown")))
    assert axis_route(_labelled(t, "unknown"), unknown_taken) == PASS


def test_a_attested_is_taken_where_a_is_and_can_be_required() -> None:
    t = task(1)
    attested, inferred = _labelled(t, "A-attested"), _labelled(t, "A")
    assert axis_route(attested, TraceContext(CurationConfig())) == PASS
    # proven: a B miner label does not overrule
    assert axis_route(attested, TraceContext(CurationConfig(), "B")) == PASS
    required = CurationConfig(axes=("A-attested",))
    assert axis_route(attested, TraceContext(required)) == PASS
    assert axis_route(inferred, TraceContext(required)) == drop("axis_A")
    assert not converts(inferred.judgment, required)


def test_axis_route_with_a_converter_passes_the_labels_to_convert() -> None:
    t, config = task(1), CurationConfig()
    converting = TraceContext(config, converting=True)
    b, mixed, unknown = (_labelled(t, label) for label in ("B", "mixed", "unknown"))
    assert axis_route(b, converting) == PASS and converts(b.judgment, config)
    assert axis_route(mixed, converting) == PASS and converts(mixed.judgment, config)
    assert axis_route(unknown, converting) == drop("axis_unknown") and not converts(unknown.judgment, config)
    a_of_b_miner = _labelled(t, "A").judgment
    assert converts(a_of_b_miner, config, "B") and not converts(a_of_b_miner, config)
    off = CurationConfig(convert_axes=())
    assert axis_route(b, TraceContext(off, converting=True)) == aside(AXIS_B) and not converts(
        b.judgment, off
    )
    assert not converts(
        b.judgment, CurationConfig(axes=("A", "B"))
    )  # a label taken as it is is never converted
    with pytest.raises(CurationError, match="unknown axis label 'C'"):
        CurationConfig(convert_axes=("C",))


def test_a_converted_trace_never_displaces_a_native_one_of_its_task(tmp_path: Path) -> None:
    def row(seq: int, origin: str, structural: float) -> Row:
        return Row(
            seq=seq,
            episode_id=f"e{seq}",
            task_id="t1",
            cluster="c1",
            miner=f"m{seq}",
            stream=MAIN,
            success=True,
            label=True,
            grounded=True,
            score=1.0,
            structural=structural,
            exact=f"x{seq}",
            steps=frozenset({f"s{seq}"}),
            answer=("p1",),
            judgment_hash=f"j{seq}",
            versions={},
            record="{}",
            origin=origin,
            source_hash="s-1" if origin == "converted" else None,
        )

    with Workspace(tmp_path) as workspace:
        workspace.add_traces([row(1, "converted", 1.0), row(2, "native", 0.5)])
        funnel = Funnel()
        dedup(workspace, CurationConfig(cap_per_task=1), funnel)
        kept = list(workspace.kept(MAIN))
    assert [r.origin for r in kept] == ["native"] and funnel.stages["dedup"].dropped == {"cap_task": 1}


def test_a_miner_labelled_b_overrules_its_traces_a_label() -> None:
    t, config = task(1), CurationConfig()
    a_trace = _labelled(t, "A")
    assert axis_route(a_trace, TraceContext(config, "B")) == aside(AXIS_B)
    # mixed proves no harness (a steady model repeats one call template too): no overrule
    assert axis_route(a_trace, TraceContext(config, "mixed")) == PASS
    assert axis_route(a_trace, TraceContext(config, "A")) == PASS
    assert axis_route(_labelled(t, "mixed"), TraceContext(config, "A")) == drop("axis_mixed")


def _driven(tr: planted.Trace, i: int) -> planted.Trace:
    """The trace with model-like reasoning: each step's own words, citing the call's arguments."""
    assert tr.trajectory is not None
    messages = []
    for n, message in enumerate(tr.trajectory.messages):
        if message.role == "assistant" and message.tool_calls:
            call = message.tool_calls[0]
            thought = (
                f"{planted.word(i, 10 + n)} {planted.word(i, 20 + n)} seems promising, so "
                f"{call.function.name} with {call.function.arguments} {planted.word(i, 30 + n)}."
            )
            message = message.model_copy(update={"reasoning_content": thought})
        messages.append(message)
    return with_messages(tr, messages)


def test_miner_level_axis_sends_a_templated_harness_aside(session: Session, tmp_path: Path) -> None:
    tasks = [task(n) for n in range(1, 13)]
    harness = [trace(n, tasks[n - 1], miner=0) for n in range(1, 7)]  # "I call <tool>." every step
    model = [_driven(trace(n, tasks[n - 1], miner=1), n) for n in range(7, 13)]
    store(session, tasks, harness + model)
    with Workspace(tmp_path) as ws:
        result = _run(session, ws, miner_axis_sample=64)
        stage = result.funnel.stages["axis"]
        assert stage.aside == {"axis_b": 6}
        assert stage.notes["miner_axes"]["B"] == 1
        assert set(_kept(result, AXIS_B)) == {tr.episode.episode_id for tr in harness}
        assert set(_kept(result)) == {tr.episode.episode_id for tr in model}
    (tmp_path / "off").mkdir()
    with Workspace(tmp_path / "off") as ws:
        assert len(_kept(_run(session, ws, miner_axis_sample=0))) == 12


def test_config_refuses_bad_values() -> None:
    with pytest.raises(CurationError, match="axis"):
        CurationConfig(axes=("C",))
    with pytest.raises(CurationError, match="min_reasoning"):
        CurationConfig(min_reasoning=2.0)
    with pytest.raises(CurationError, match="miner_axis_sample"):
        CurationConfig(miner_axis_sample=-1)


def test_kto_label_is_absolute() -> None:
    t, config = task(1), CurationConfig(label_min_score=0.5)
    assert positive(trace(1, t, success=True, score=0.8).judgment, config)
    assert not positive(trace(1, t, success=True, score=0.4).judgment, config)
    assert not positive(trace(1, t, success=False, score=0.8).judgment, config)
    assert not positive(trace(1, t, hallucinated=["zz"]).judgment, config)


# ------------------------------------------------------------------ ranking, dedup keys


def test_structural_score_orders_by_verification_loops_hallucination_reformulation_depth() -> None:
    t = task(1)
    good = ProcessStats(tool_calls=6, searches=3, reformulations=2, views=1, verified=True, depth=6)
    score = {
        name: structural_score(trace(1, t, process=p, hallucinated=h).judgment)
        for name, p, h in [
            ("good", good, ()),
            ("unverified", good.model_copy(update={"verified": False}), ()),
            ("loops", good.model_copy(update={"loops": 1}), ()),
            ("hallucinated", good, ("zz",)),
            ("no_reformulation", good.model_copy(update={"reformulations": 0}), ()),
            ("wandering", good.model_copy(update={"depth": 20}), ()),
            ("shallow", good.model_copy(update={"depth": 1}), ()),
        ]
    }
    assert score["good"] == pytest.approx(1.0)
    assert all(score["good"] > value for name, value in score.items() if name != "good")
    assert score["unverified"] < score["loops"] < score["no_reformulation"]


def test_exact_signature_ignores_surface_form_but_not_strategy() -> None:
    t = task(1)

    def keys(calls: list[tuple[str, dict[str, object]]]) -> str:
        record = normalise(judged(trace(1, t, calls=calls), t))
        assert isinstance(record, ChatRecord)
        return strategy(record).exact

    base = planted.default_calls(t, ["g00001"])
    spaced = [(n, {**a, "q": f"  {a['q']}  "} if n == "find_product" else a) for n, a in base]
    assert keys(spaced) == keys(base)  # canonical arguments: trimmed
    other_page = [(n, {**a, "page": 2} if n == "find_product" else a) for n, a in base]
    assert keys(other_page) != keys(base)


def test_turn_rewards_credit_the_call_that_first_showed_the_gold() -> None:
    t = task(1)
    tr = judged(trace(1, t), t)
    assert turn_rewards(tr) == [1.0, 0.0, 0.0]  # the search showed it; the view repeats it


# ------------------------------------------------------------------ the funnel on a database


def _run(session: Session, workspace: Workspace, **config: object) -> Curation:
    # The planted miners replay one call template with silent steps, so their miner-level axis
    # is B; these tests exercise the other stages, so the miner-level verdict is off unless asked.
    config.setdefault("miner_axis_sample", 0)
    return curate(session, workspace, config=CurationConfig(**config))  # type: ignore[arg-type]


def _kept(curation: Curation, stream: str = MAIN) -> dict[str, str]:
    return {row.episode_id: row.task_id for row in curation.workspace.kept(stream)}


def test_dedup_collapses_exact_duplicates_onto_the_best_ranked(session: Session, tmp_path: Path) -> None:
    t = task(1)
    sloppy = ProcessStats(tool_calls=3, searches=1, views=1, verified=False, depth=3)
    traces = [
        trace(1, t, miner=1, process=sloppy),
        trace(2, t, miner=2),
        trace(3, t, miner=3, process=sloppy),
    ]
    store(session, [t], traces)
    with Workspace(tmp_path) as ws:
        result = _run(session, ws)
        assert set(_kept(result)) == {"ep-000002"}  # the verified one wins
        assert result.funnel.stages["dedup"].dropped == {"exact_duplicate": 2}


def test_near_duplicates_collapse_within_a_cluster_only(session: Session, tmp_path: Path) -> None:
    a1, a2, b = task(1, cluster="lc-a"), task(2, cluster="lc-a", gold="g00001"), task(3, cluster="lc-b")
    base = planted.default_calls(a1, ["g00001"])
    longer = [base[0], ("find_product", {"q": "another query", "page": 1}), *base[1:]]
    for_b = planted.default_calls(b, ["g00001"])
    for_b[0] = base[0]  # the same strategy and answer, but in another cluster
    traces = [
        trace(1, a1, miner=1, calls=base),
        trace(2, a2, miner=2, calls=longer, answer=["g00001"]),  # near duplicate: 3 of 4 steps shared
        trace(3, b, miner=3, calls=for_b, answer=["g00001"], success=False, score=0.1),
        trace(4, a1, miner=4, calls=[*base[:2], ("recommend_product", {"product_ids": "zz"})], answer=["zz"]),
    ]
    store(session, [a1, a2, b], traces)
    with Workspace(tmp_path) as ws:
        result = _run(session, ws, near_dup_threshold=0.7, protect_pools=())
        kept = _kept(result)
    assert "ep-000001" in kept and "ep-000002" not in kept
    assert "ep-000003" in kept  # other cluster
    assert "ep-000004" in kept  # other answer
    assert result.funnel.stages["dedup"].dropped == {"near_duplicate": 1}


def test_caps_per_task_miner_and_per_task(session: Session, tmp_path: Path) -> None:
    t = task(1)
    queries = [f"query {k}" for k in range(6)]
    traces = [
        trace(
            k,
            t,
            miner=0 if k < 3 else k,
            calls=[("find_product", {"q": q, "page": 1}), ("recommend_product", {"product_ids": "g00001"})],
        )
        for k, q in enumerate(queries)
    ]
    store(session, [t], traces)
    with Workspace(tmp_path) as ws:
        result = _run(session, ws, cap_per_task_miner=2, cap_per_task=4)
        assert len(_kept(result)) == 4
        assert result.funnel.stages["dedup"].dropped == {"cap_task_miner": 1, "cap_task": 1}


def test_funnel_counts_every_stage_and_sets_traces_aside(session: Session, tmp_path: Path) -> None:
    tasks = [task(n) for n in range(1, 5)]
    traces = [
        trace(1, tasks[0]),
        trace(2, tasks[1], rejects=["unknown_product_id"]),
        trace(3, tasks[1], fabricated=["c3-0"]),
        trace(4, tasks[2], reasoning=0.1),
        trace(5, tasks[2], reasoning=None),
        trace(6, tasks[3], axis="B"),
        trace(7, tasks[3], axis="mixed"),
        trace(8, tasks[3], user="something else"),
        trace(9, tasks[0], answered=False, end="timeout"),
    ]
    store(session, tasks, traces)
    with Workspace(tmp_path) as ws:
        result = _run(session, ws, unscored="separate")
        funnel = result.funnel
        assert funnel.balanced()
        stage = funnel.stages
        assert (stage["normalise"].n_in, stage["normalise"].n_out) == (9, 7)
        assert stage["normalise"].dropped == {"no_trajectory": 1, "prompt_mismatch": 1}
        assert stage["hard_rejects"].dropped == {"reject:unknown_product_id": 1, "fabricated": 1}
        assert stage["reasoning_gate"].dropped == {"below_min_reasoning": 1}
        assert stage["reasoning_gate"].aside == {"unscored": 1}
        assert stage["axis"].aside == {"axis_b": 1} and stage["axis"].dropped == {"axis_mixed": 1}
        assert stage["ranking"].n_out == stage["dedup"].n_in == 1
        assert set(_kept(result)) == {"ep-000001"}
        assert set(_kept(result, AXIS_B)) == {"ep-000006"}
        assert set(_kept(result, UNSCORED)) == {"ep-000005"}
        assert funnel.source["traces"] == 9


def test_split_keeps_each_cluster_on_one_side(session: Session, tmp_path: Path) -> None:
    config = {"eval_share": 0.5, "protect_pools": ()}
    tasks = [task(n, cluster=f"lc-{n // 2}") for n in range(40)]  # 20 clusters of two tasks
    store(session, tasks, [trace(n, t, miner=n) for n, t in enumerate(tasks)])
    with Workspace(tmp_path) as ws:
        result = _run(session, ws, **config)
        sides: dict[str, set[str]] = {}
        for row in ws.kept(MAIN):
            sides.setdefault(row.cluster, set()).add(result.split(row.cluster))
    assert all(len(s) == 1 for s in sides.values())
    assert {s for v in sides.values() for s in v} == {"train", "eval"}
    assert result.funnel.splits["train"]["clusters"] + result.funnel.splits["eval"]["clusters"] == 20
    assert result.audit is not None and result.audit.ok


def _two_sides(config: CurationConfig) -> tuple[str, str]:
    names = [f"lc-probe-{k}" for k in range(200)]
    return (
        next(n for n in names if split_of(n, config) == "train"),
        next(n for n in names if split_of(n, config) == "eval"),
    )


def test_a_leak_across_the_split_fails_the_export(session: Session, tmp_path: Path) -> None:
    config = CurationConfig(eval_share=0.5, protect_pools=("never_touch",), miner_axis_sample=0)
    train_cluster, _ = _two_sides(config)
    # An exported train task shares a gold product with a protected held-out task (which the split
    # cannot move: protected pools count as eval), clustered apart by mistake.
    a = task(1, cluster=train_cluster)
    protected = task(2, cluster="lc-protected", gold="g00001", pool="never_touch")
    store(session, [a, protected], [trace(1, a)])
    with Workspace(tmp_path) as ws, pytest.raises(SplitLeakError, match="gold.*g00001") as caught:
        curate(session, ws, config=config)
    assert "train / eval split leaks" in str(caught.value) and a.task_id in str(caught.value)


def test_tasks_sharing_a_gold_clustered_apart_land_on_one_side(session: Session, tmp_path: Path) -> None:
    # World tasks are clustered on their skeletons: two requests for one product in two worlds are
    # two clusters, and the split keeps them together (pool groups join what the gold rule links).
    config = CurationConfig(eval_share=0.5, protect_pools=(), miner_axis_sample=0)
    train_cluster, eval_cluster = _two_sides(config)
    a, b = task(1, cluster=train_cluster), task(2, cluster=eval_cluster, gold="g00001")
    store(session, [a, b], [trace(1, a), trace(2, b)])
    with Workspace(tmp_path) as ws:
        curation = curate(session, ws, config=config)
        assert curation.split(a.leak_cluster or "") == curation.split(b.leak_cluster or "")
        assert curation.audit is not None and curation.audit.ok


def test_near_duplicates_clustered_apart_land_on_one_side(session: Session, tmp_path: Path) -> None:
    # Clustering links wording at Jaccard 0.5, the audit fails a cross-split pair at 0.4: two tasks
    # between the two are separate clusters, and the split must keep them together all the same
    # (as pool assignment does, by pool groups), or every such pair refuses the export.
    config = CurationConfig(eval_share=0.5, protect_pools=(), miner_axis_sample=0)
    train_cluster, eval_cluster = _two_sides(config)

    def worded(n: int, cluster: str, query: str) -> planted.Task:
        data = task(n, cluster=cluster).model_dump(exclude={"task_id"})
        return planted.Task.model_validate(data | {"query": query})

    a = worded(
        1,
        train_cluster,
        "Search for puma jogging shoes. I want to pay cash on delivery"
        " and its sole material should be rubber.",
    )
    b = worded(2, eval_cluster, "Find adidas jogging shoes with rubber sole material.")
    similarity = jaccard(shingles(a.query), shingles(b.query))
    assert AUDIT_NEAR_DUP_THRESHOLD <= similarity < NEAR_DUP_THRESHOLD
    store(session, [a, b], [trace(1, a), trace(2, b)])
    with Workspace(tmp_path) as ws:
        result = curate(session, ws, config=config)
        assert result.audit is not None and result.audit.ok
        assert result.split(train_cluster) == result.split(eval_cluster)


def test_a_train_task_leaking_into_a_protected_pool_fails(session: Session, tmp_path: Path) -> None:
    config = CurationConfig(eval_share=0.0, miner_axis_sample=0)
    served = task(1)
    reserved = task(2, gold="g00001", pool="never_touch")  # the reserved eval set shares its gold
    store(session, [served, reserved], [trace(1, served)])
    with Workspace(tmp_path) as ws, pytest.raises(SplitLeakError, match=r"gold \(g00001\).*never_touch"):
        curate(session, ws, config=config)
    with Workspace(tmp_path) as ws:
        result = curate(
            session, ws, config=CurationConfig(eval_share=0.0, protect_pools=(), miner_axis_sample=0)
        )
        assert result.audit is not None and result.audit.ok


# ------------------------------------------------------------------ streaming


def _population(session: Session, n_traces: int, n_tasks: int = 10) -> None:
    tasks = [task(k) for k in range(n_tasks)]
    traces = [
        trace(
            i,
            tasks[i % n_tasks],
            miner=i,
            calls=[
                ("find_product", {"q": f"q{i}", "page": 1}),
                ("recommend_product", {"product_ids": tasks[i % n_tasks].gold[0].product_id}),
            ],
        )
        for i in range(n_traces)
    ]
    store(session, tasks, traces)


def test_pages_smaller_than_the_table_give_the_same_result(session: Session, tmp_path: Path) -> None:
    _population(session, 60)
    results = []
    for batch in (7, 500):
        with Workspace(tmp_path) as ws:
            result = _run(session, ws, batch_size=batch, cap_per_task=100, protect_pools=())
            results.append((result.funnel.to_json()["stages"], sorted(_kept(result))))
    assert results[0] == results[1]
    assert len(results[0][1]) == 60


def _peak_python_memory(session: Session, tmp_path: Path) -> int:
    gc.collect()
    tracemalloc.start()
    with Workspace(tmp_path) as ws:
        _run(session, ws, batch_size=20, cap_per_task=1000, protect_pools=())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


@pytest.mark.slow  # heavy (tens of seconds on 2 cores): `make test-slow`
def test_memory_does_not_grow_with_the_number_of_traces(tmp_path: Path) -> None:
    from storage.db import make_engine, make_sessionmaker, upgrade

    peaks = []
    for n in (60, 600):
        engine = make_engine(f"sqlite:///{tmp_path / f'm{n}.db'}")
        upgrade(engine)
        with make_sessionmaker(engine)() as session:
            _population(session, n)
            peaks.append(_peak_python_memory(session, tmp_path))
        engine.dispose()
    # Ten times the traces (same tasks, same page size): the peak stays within a page's worth.
    assert peaks[1] < 1.5 * peaks[0], peaks
