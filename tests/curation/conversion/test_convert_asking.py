"""World traces with ask_user turns convert: facts from the shopper's answers, re-judged with the profile."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.index import SearchIndex
from arena.types import FunctionCall, Message, ToolCall, ToolLogEntry
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.types import HeldAttribute, ShopperProfile, WorldPack
from curation.conversion.convert import Converter, convert, convert_judged
from curation.conversion.facts import FactTable, as_number, digit_tokens, task_facts
from curation.conversion.results import Conversion, Converted, Dropped
from curation.conversion.step import Step
from curation.conversion.teacher import TeacherWriter
from curation.conversion.verify import unsupported
from judging.judge import JudgeConfig, judge_rules
from judging.types import ShopperEvidence
from judging.world import AtAnswer, WorldJudging
from storage.records import JudgedTrace
from tests.curation.conversion.world import ASKING_TOOLSET, asking_traces

_QUOTED = re.compile(r"\"([^\"]*)\"")
# Where the template writer attributes constraints to the shopper (curation.conversion.phrases.HEARD_JOIN).
_HEARD = re.compile(
    r"(?:from the shopper's answer|the shopper added) ([^.;]+)|plus ([^.;]+), as the shopper said"
)


@pytest.fixture(scope="module")
def pack(world_base: SearchIndex) -> WorldPack:
    return compile_world("convert-asking", world_base)


@pytest.fixture(scope="module")
def world(world_base: SearchIndex, pack: WorldPack) -> WorldJudging:
    return WorldJudging.over(pack, world_base)


@pytest.fixture(scope="module")
def overlay(world: WorldJudging) -> WorldOverlay:
    return world.overlay


@pytest.fixture(scope="module")
def profiles(pack: WorldPack) -> dict[str, ShopperProfile]:
    return {wt.task.task_id: wt.profile for wt in pack.tasks}


@pytest.fixture(scope="module")
def asking(world: WorldJudging) -> list[JudgedTrace]:
    """The scripted agent's episodes on arena-3, those that asked the shopper."""
    traces = asking_traces(world)
    asked = [t for t in traces if any(e.tool == "ask_user" for e in t.tool_log)]
    assert asked, "the scripted agent asks on single-item requests without a budget"
    return asked


def _converter(base: SearchIndex, world: WorldJudging) -> Converter:
    return Converter(index=base, worlds={world.pack_hash: world}.get)


def _with_profile(world: WorldJudging, task_id: str, profile: ShopperProfile) -> WorldJudging:
    """The world with one task's hidden shopper replaced (or, with ``None`` tasks, none known)."""
    return replace(
        world, tasks={**world.tasks, task_id: world.tasks[task_id].model_copy(update={"profile": profile})}
    )


def _run(trace: JudgedTrace, converter: Converter) -> Conversion:
    return asyncio.run(convert_judged(trace, converter))


def _rationales(converted: Converted) -> list[tuple[ToolLogEntry, str]]:
    turns = [m for m in converted.trajectory.messages if m.role == "assistant"]
    return [(e, m.reasoning_content or "") for m, e in zip(turns, converted.tool_log, strict=True)]


def test_traces_with_shopper_questions_convert_and_keep_the_questions_and_the_shopper_score(
    world_base: SearchIndex, world: WorldJudging, asking: list[JudgedTrace]
) -> None:
    converter = _converter(world_base, world)
    for trace in asking:
        result = _run(trace, converter)
        assert isinstance(result, Converted), result
        asked = [e for e in result.tool_log if e.tool == "ask_user"]
        assert asked == [e for e in trace.tool_log if e.tool == "ask_user"]  # kept, byte for byte
        source, again = trace.judgment.check("shopper"), result.judgment.check("shopper")
        assert source is not None and again is not None and again.value == source.value
        assert result.judgment.outcome == trace.judgment.outcome
        steps = _rationales(result)
        question = next(text for entry, text in steps if entry.tool == "ask_user")
        assert "shopper" in question and asked[0].arguments["question"] in question
        answer = json.loads(asked[0].result)["answer"]
        later = " ".join(text for entry, text in steps if entry.seq > asked[0].seq)
        if answer.startswith("Yes"):  # a later step names the need the answer revealed as the shopper's
            assert _HEARD.search(later), later
        else:
            assert "shopper" in later, later  # "no preference" is a fact too


def test_without_the_profile_a_trace_judged_with_one_is_a_typed_drop(
    world_base: SearchIndex, world: WorldJudging, asking: list[JudgedTrace]
) -> None:
    blind = _converter(world_base, replace(world, tasks={}))  # a pack that lacks the task
    dropped = _run(asking[0], blind)
    assert isinstance(dropped, Dropped) and dropped.reason == "unknown_world"
    assert "shopper profile" in dropped.detail


def _asked_twice(trace: JudgedTrace) -> JudgedTrace:
    """The trace with its question asked again after the first search (the same answer logged)."""
    assert trace.trajectory is not None
    first = next(e for e in trace.tool_log if e.tool == "ask_user")
    search = next(e for e in trace.tool_log if e.tool == "find_product")
    later = [e.model_copy(update={"seq": e.seq + 1}) for e in trace.tool_log if e.seq > search.seq]
    again = first.model_copy(update={"seq": search.seq + 1, "call_id": "call_again"})
    log = (*(e for e in trace.tool_log if e.seq <= search.seq), again, *later)
    messages = list(trace.trajectory.messages)
    at = next(i for i, m in enumerate(messages) if m.role == "tool" and m.tool_call_id == search.call_id) + 1
    call = ToolCall(
        id="call_again", function=FunctionCall(name="ask_user", arguments=json.dumps(first.arguments))
    )
    messages[at:at] = [
        Message(role="assistant", tool_calls=(call,)),
        Message(role="tool", tool_call_id="call_again", content=first.result),
    ]
    trajectory = trace.trajectory.model_copy(update={"messages": tuple(messages)})
    return trace.model_copy(update={"trajectory": trajectory, "tool_log": log})


def _rejudged(trace: JudgedTrace, overlay: WorldOverlay, profile: ShopperProfile) -> JudgedTrace:
    assert trace.trajectory is not None
    config = JudgeConfig(catalog_version=overlay.catalog_version, toolset=ASKING_TOOLSET)
    judgment = judge_rules(
        trace.task,
        trace.trajectory,
        log=trace.tool_log,
        against=AtAnswer(overlay.products, profile=profile),
        config=config,
    )
    return trace.model_copy(update={"judgment": judgment})


def test_a_penalised_repeat_question_stays_and_an_unpenalised_one_may_go(
    world_base: SearchIndex,
    world: WorldJudging,
    overlay: WorldOverlay,
    asking: list[JudgedTrace],
    profiles: dict[str, ShopperProfile],
) -> None:
    trace = _asked_twice(asking[0])
    profile = profiles[trace.task.task_id]
    converter = Converter(index=world_base)
    penalised = _rejudged(trace, overlay, profile)
    shopper = penalised.judgment.check("shopper")
    assert shopper is not None and shopper.evidence_as(ShopperEvidence).extra == 1 and shopper.value == 0.8

    def run(source: JudgedTrace, with_profile: ShopperProfile) -> Conversion:
        return asyncio.run(
            convert(
                source.task,
                source.trajectory,
                source.tool_log,
                source.judgment,
                converter=converter,
                world=_with_profile(world, source.task.task_id, with_profile),
            )
        )

    kept = run(penalised, profile)
    assert isinstance(kept, Converted), kept
    assert sum(e.tool == "ask_user" for e in kept.tool_log) == 2 and not kept.unpruned
    again = kept.judgment.check("shopper")
    assert again is not None and again.value == 0.8  # the penalty the source earned, unchanged
    # Two needs held back (the second one the question does not ask about, so the answers stay
    # as logged): the second question is not beyond those needed, and the repeat may go.
    other = HeldAttribute(item=0, key="warranty_period", value="lifetime")
    roomy = profile.model_copy(update={"held_back": (*profile.held_back, other)})
    free = _rejudged(trace, overlay, roomy)
    assert free.judgment.check("shopper").value == 1.0  # type: ignore[union-attr]
    pruned = run(free, roomy)
    assert isinstance(pruned, Converted), pruned
    assert [reason for _, reason in pruned.pruned] == ["repeat"]
    assert sum(e.tool == "ask_user" for e in pruned.tool_log) == 1 and not pruned.unpruned
    assert pruned.judgment.check("shopper").value == 1.0  # type: ignore[union-attr]


class _Silent:
    """A teacher endpoint stand-in (only its prompt is read here)."""

    model = "stub-teacher"

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        return ""


def test_a_rationale_may_cite_the_shopper_only_after_the_answer(  # whoever wrote it: one verifier
    overlay: WorldOverlay, asking: list[JudgedTrace]
) -> None:
    trace = next(t for t in asking if '"Yes' in next(e.result for e in t.tool_log if e.tool == "ask_user"))
    asked = next(e for e in trace.tool_log if e.tool == "ask_user")
    said = json.loads(asked.result)["answer"].removeprefix("Yes: ").rstrip(".")
    facts = task_facts(trace.task)
    table = FactTable(facts)
    item = facts.items[0]
    text = f'For the {item.name} the shopper said "{said}", so the search keeps that.'
    for entry in trace.tool_log:
        table.add_call(entry)
        step = Step(entry.seq, entry, item, table, seed=0)
        problems = unsupported(text, step, overlay.products)
        if entry.seq <= asked.seq:  # the answer is not seen before (or while) the question is asked
            assert "quote" in [p.kind for p in problems], problems
        else:
            assert problems == [], problems
        table.add_result(entry, 0)
    # The teacher is shown the answer from the step after it on, never before.
    teacher = TeacherWriter(_Silent())
    assert said in teacher.messages(step, [])[1]["content"]
    before = FactTable(facts)
    before.add_call(asked)
    assert said not in teacher.messages(Step(0, asked, item, before, seed=0), [])[1]["content"]
    revealed = [c for _, c in table.answers[0].revealed]
    assert revealed and all(c.shopper for c in revealed)
    assert {c.key for c in revealed} <= {c.key for c in table.task.items[0].constraints}


def _seen(trace: JudgedTrace, upto_seq: int, arguments: Mapping[str, object]) -> list[str]:
    return [trace.task.query, json.dumps(arguments, ensure_ascii=False)] + [
        e.result for e in trace.tool_log if e.seq < upto_seq
    ]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pick=st.integers(min_value=0, max_value=10**6),
    salt=st.integers(min_value=0, max_value=10**6),
    twice=st.booleans(),
)
def test_no_converted_trace_cites_a_fact_absent_from_the_log_shopper_answers_included(
    world_base: SearchIndex,
    world: WorldJudging,
    overlay: WorldOverlay,
    asking: list[JudgedTrace],
    profiles: dict[str, ShopperProfile],
    pick: int,
    salt: int,
    twice: bool,
) -> None:
    trace = asking[pick % len(asking)]
    assert trace.trajectory is not None  # another episode id: another phrasing seed
    trajectory = trace.trajectory.model_copy(update={"episode_id": f"{trace.episode.episode_id}-{salt}"})
    trace = trace.model_copy(update={"trajectory": trajectory})
    if twice:
        trace = _rejudged(_asked_twice(trace), overlay, profiles[trace.task.task_id])
    conversion = _run(trace, _converter(world_base, world))
    if isinstance(conversion, Dropped):
        assert conversion.reason != "ungrounded_rationale", conversion
        return
    for entry, text in _rationales(conversion):
        texts = _seen(trace, entry.seq, entry.arguments)
        tokens = {token for seen in texts for token in digit_tokens(seen)}
        numbers = {f"{n:g}" for token in tokens if (n := as_number(token)) is not None}
        for token in digit_tokens(text):
            if entry.tool == "recommend_product" and token.replace(".", "", 1).isdigit():
                continue  # totals and voucher arithmetic: checked by the verifier's derived numbers
            number = as_number(token)
            assert token in tokens or (number is not None and f"{number:g}" in numbers), (token, text)
        folded = [" ".join(seen.casefold().split()) for seen in texts]
        for quoted in _QUOTED.findall(text):
            assert any(" ".join(quoted.casefold().split()) in seen for seen in folded), (quoted, text)
        answers = [
            json.loads(e.result)["answer"].casefold()
            for e in trace.tool_log
            if e.tool == "ask_user" and e.seq < entry.seq and e.status == "ok"
        ]
        for match in _HEARD.finditer(text):  # what is credited to the shopper, the shopper said earlier
            assert answers, text
            credited = (match.group(1) or match.group(2)).casefold()
            assert any(word in answer for answer in answers for word in credited.split() if len(word) > 4), (
                credited,
                answers,
            )
