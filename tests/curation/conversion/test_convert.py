"""Conversion of judged harness traces: grounded rationales, logged bytes, unchanged outcomes, typed drops."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.index import SearchIndex
from arena.tools import ToolContext
from curation.conversion import pruning
from curation.conversion.convert import Converter, convert, convert_judged
from curation.conversion.facts import as_number, digit_tokens
from curation.conversion.pruning import replays_identically
from curation.conversion.results import Conversion, ConversionConfig, Converted, Dropped
from curation.conversion.teacher import TeacherWriter
from judging.axis import NARRATION_SHARE, narration_template_share
from storage.records import JudgedTrace


def _run(trace: JudgedTrace, converter: Converter) -> Conversion:
    return asyncio.run(convert_judged(trace, converter))


@pytest.fixture(scope="module")
def converted(
    synth_index: SearchIndex, harness_traces: list[JudgedTrace]
) -> list[tuple[JudgedTrace, Conversion]]:
    converter = Converter(index=synth_index)
    return [(trace, _run(trace, converter)) for trace in harness_traces]


def _seen_tokens(trace: JudgedTrace, upto_seq: int, arguments: Mapping[str, object]) -> set[str]:
    """Digit tokens the agent saw before the call at ``upto_seq``: query, earlier results, its arguments."""
    texts = [trace.task.query, json.dumps(arguments, ensure_ascii=False)]
    texts += [e.result for e in trace.tool_log if e.seq < upto_seq]
    tokens = {token for text in texts for token in digit_tokens(text)}
    return tokens | {f"{number:g}" for token in tokens if (number := as_number(token)) is not None}


def test_most_harness_traces_convert_with_their_outcome(
    converted: list[tuple[JudgedTrace, Conversion]],
) -> None:
    done = [(t, c) for t, c in converted if isinstance(c, Converted)]
    assert len(done) >= 0.9 * len(converted)
    assert any(not t.judgment.success for t, _ in done)  # failures convert too: KTO negatives
    for trace, conversion in done:
        assert conversion.judgment.success == trace.judgment.success
        assert conversion.judgment.outcome == trace.judgment.outcome
        assert not conversion.judgment.rejects and not conversion.judgment.hallucinated_product_ids
        axis = conversion.judgment.check("axis")
        assert axis is not None and axis.value is not None and axis.value >= 0.75


def test_tool_messages_are_the_logged_results_byte_for_byte(
    converted: list[tuple[JudgedTrace, Conversion]],
) -> None:
    for trace, conversion in converted:
        if not isinstance(conversion, Converted):
            continue
        logged = {e.call_id: e for e in trace.tool_log}
        tools = [m for m in conversion.trajectory.messages if m.role == "tool"]
        assert len(tools) == len(conversion.tool_log)
        for message, entry in zip(tools, conversion.tool_log, strict=True):
            assert message.tool_call_id == entry.call_id
            assert message.content == entry.result == logged[entry.call_id].result
            assert entry.result_hash == logged[entry.call_id].result_hash


def test_pruning_replays_the_same_bytes_and_never_changes_the_outcome(
    synth_index: SearchIndex, converted: list[tuple[JudgedTrace, Conversion]]
) -> None:
    pruned = [(t, c) for t, c in converted if isinstance(c, Converted) and c.pruned]
    assert pruned, "the harness's traces hold some noise to compile out"
    unpruned = Converter(
        index=synth_index,
        config=replace(ConversionConfig(), prune=False),
    )
    for trace, conversion in pruned:
        assert replays_identically(conversion.tool_log, ToolContext(index=synth_index))
        full = _run(trace, unpruned)
        assert isinstance(full, Converted)
        assert (
            (conversion.judgment.outcome, conversion.judgment.success)
            == (
                full.judgment.outcome,
                full.judgment.success,
            )
            == (trace.judgment.outcome, trace.judgment.success)
        )


def test_replay_runs_again_only_the_calls_after_a_dropped_one(
    synth_index: SearchIndex,
    converted: list[tuple[JudgedTrace, Conversion]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = ToolContext(index=synth_index)
    runs: list[int] = []
    real = pruning.run_logged

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append(kwargs["seq"])
        return real(*args, **kwargs)

    for trace, conversion in converted:
        if not isinstance(conversion, Converted) or not conversion.pruned:
            continue
        episode = tuple(sorted(trace.tool_log, key=lambda e: e.seq))
        kept = conversion.tool_log
        shared = next(i for i, (a, b) in enumerate(zip(kept, episode, strict=False)) if a is not b)
        runs.clear()
        monkeypatch.setattr(pruning, "run_logged", counted)
        assert replays_identically(kept, ctx, episode=episode)
        assert runs == [e.seq for e in kept[shared:]]  # the episode's own first calls are not run again
        monkeypatch.undo()
        # A changed entry is never one of the episode's own: it is run again, wherever it stands.
        for i in range(len(kept)):
            changed = kept[i].model_copy(update={"result": kept[i].result + " "})
            assert not replays_identically((*kept[:i], changed, *kept[i + 1 :]), ctx, episode=episode)


def test_converted_narration_is_not_one_template_across_tasks(
    converted: list[tuple[JudgedTrace, Conversion]],
) -> None:
    trajectories = [c.trajectory for _, c in converted if isinstance(c, Converted)]
    assert narration_template_share(trajectories) < NARRATION_SHARE / 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(min_value=0, max_value=10**6), salt=st.integers(min_value=0, max_value=10**6))
def test_no_converted_trace_cites_a_fact_absent_from_the_task_or_earlier_results(
    synth_index: SearchIndex, harness_traces: list[JudgedTrace], pick: int, salt: int
) -> None:
    trace = harness_traces[pick % len(harness_traces)]
    assert trace.trajectory is not None  # another episode id: another phrasing seed
    source = trace.model_copy(
        update={
            "trajectory": trace.trajectory.model_copy(
                update={"episode_id": f"{trace.episode.episode_id}-{salt}"}
            )
        }
    )
    conversion = _run(source, Converter(index=synth_index))
    if isinstance(conversion, Dropped):
        return
    turns = [m for m in conversion.trajectory.messages if m.role == "assistant"]
    for message, entry in zip(turns, conversion.tool_log, strict=True):
        seen = _seen_tokens(trace, entry.seq, entry.arguments)
        for token in digit_tokens(message.reasoning_content or ""):
            if entry.tool == "recommend_product" and token.replace(".", "", 1).isdigit():
                continue  # totals and voucher arithmetic: checked by the verifier's derived numbers
            number = as_number(token)
            assert token in seen or (number is not None and f"{number:g}" in seen), (
                token,
                entry.tool,
                message.reasoning_content,
            )


class _Teacher:
    """An endpoint stand-in that answers every step with ``text`` (formatted with the step's facts)."""

    model = "stub-teacher"

    def __init__(self, text: str) -> None:
        self.text, self.calls = text, 0

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        self.calls += 1
        return self.text


@pytest.mark.parametrize(
    "lie",
    [
        "I search for the item; product 9999999999 looked best, so I call the tool.",
        "Considering the user's request, 0000000001 costs 1.23 pesos and fits, so I call the tool.",
    ],
)
def test_teacher_rationales_citing_an_unseen_id_or_a_wrong_price_are_rejected(
    synth_index: SearchIndex, harness_traces: list[JudgedTrace], lie: str
) -> None:
    trace = next(t for t in harness_traces if t.judgment.success)
    strict = TeacherWriter(_Teacher(lie), fallback=False)
    dropped = _run(trace, Converter(index=synth_index, writer=strict))
    assert isinstance(dropped, Dropped) and dropped.reason == "ungrounded_rationale"
    teacher = TeacherWriter(_Teacher(lie))
    saved = _run(trace, Converter(index=synth_index, writer=teacher))
    assert isinstance(saved, Converted) and teacher.fallbacks > 0
    assert saved.provenance.writer == teacher.provenance and teacher.provenance.startswith(
        "teacher:stub-teacher@"
    )
    assert all(lie not in (m.reasoning_content or "") for m in saved.trajectory.messages)


def test_a_wrong_price_for_a_seen_product_is_rejected(
    synth_index: SearchIndex, harness_traces: list[JudgedTrace]
) -> None:
    trace = next(t for t in harness_traces if t.judgment.success)
    seen = next(e for e in trace.tool_log if e.tool == "find_product" and e.status == "ok")
    pid = json.loads(seen.result)[0]["product_id"] if seen.result.startswith("[") else None
    if pid is None:
        pytest.skip("result shape without a product list")
    lie = f"For the user's item, {pid} costs 1.23 pesos, so I call the tool."
    dropped = _run(trace, Converter(index=synth_index, writer=TeacherWriter(_Teacher(lie), fallback=False)))
    assert isinstance(dropped, Dropped) and dropped.reason == "ungrounded_rationale"


def test_bad_input_is_a_typed_drop(synth_index: SearchIndex, harness_traces: list[JudgedTrace]) -> None:
    trace = harness_traces[0]
    converter = Converter(index=synth_index)
    assert _run(trace.model_copy(update={"tool_log": ()}), converter) == Dropped("no_tool_log")
    first = trace.tool_log[0].model_copy(update={"result": trace.tool_log[0].result + " "})
    tampered = trace.model_copy(update={"tool_log": (first, *trace.tool_log[1:])})
    assert _run(tampered, converter).reason == "log_hash_mismatch"  # type: ignore[union-attr]
    missing = asyncio.run(
        convert(None, trace.trajectory, trace.tool_log, trace.judgment, converter=converter)
    )
    assert isinstance(missing, Dropped) and missing.reason == "missing_task"
    none = asyncio.run(convert(trace.task, None, trace.tool_log, trace.judgment, converter=converter))
    assert none == Dropped("no_trajectory")
