"""The fact table's look-ups answer what a full tokenisation of everything seen answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from curation.conversion.facts import FactTable, TaskFacts, as_number, digit_tokens, number_key, task_facts
from curation.conversion.task_facts import TaskFactsMemo
from storage.records import JudgedTrace

# Texts close to results (ids, prices, grouped numbers, hyphens, dots, codes, non-ASCII folding).
_TEXT = st.text(alphabet='0123456789aZ_-., "K\u212a\u00df:', max_size=30)


def _full(texts: list[str]) -> tuple[set[str], set[float]]:
    tokens = {t for text in texts for t in digit_tokens(text)}
    numbers = {number_key(n) for n in map(as_number, tokens) if n is not None}
    return tokens, numbers


@settings(max_examples=300, deadline=None)
@given(query=_TEXT, texts=st.lists(_TEXT, max_size=4), probes=st.lists(_TEXT, min_size=1, max_size=4))
def test_lookups_equal_a_full_tokenisation(query: str, texts: list[str], probes: list[str]) -> None:
    table = FactTable(TaskFacts(query=query, intent="single", items=()))
    for text in texts:
        table._seen(text)  # what add_call and add_result record, without building log entries
    tokens, numbers = _full([query, *texts])
    for token in {t for probe in probes for t in digit_tokens(probe)} | tokens:
        assert table.seen_token(token) == (token in tokens)
        number = as_number(token)
        if number is not None:
            assert table.seen_number(number_key(number), token) == (number_key(number) in numbers)


def test_a_price_written_without_its_decimals_and_a_grouped_number_are_found() -> None:
    table = FactTable(TaskFacts(query="under 1,446 pesos", intent="single", items=()))
    table._seen('[{"product_id": "4666292988", "price": 329.0}]')
    assert table.seen_number(329.0, "329") and table.seen_token("4666292988")
    assert table.seen_token("1446") and not table.seen_token("329")


@settings(max_examples=200, deadline=None)
@given(query=_TEXT, steps=st.lists(st.tuples(_TEXT, _TEXT), max_size=5))
def test_answers_follow_what_has_been_seen_so_far(query: str, steps: list[tuple[str, str]]) -> None:
    """Asked again after more is seen, a look-up answers for all seen by then (found ones stay found)."""
    table = FactTable(TaskFacts(query=query, intent="single", items=()))
    seen = [query]
    for text, probe in steps:
        for _ in range(2):  # the same citation twice: the second answer is the remembered one
            tokens, numbers = _full(seen)
            for token in set(digit_tokens(probe)) | tokens:
                assert table.seen_token(token) == (token in tokens)
                number = as_number(token)
                if number is not None:
                    assert table.seen_number(number_key(number), token) == (number_key(number) in numbers)
        table._seen(text)
        seen.append(text)


def test_a_converter_reads_each_task_once(harness_traces: list[JudgedTrace]) -> None:
    memo = TaskFactsMemo(size=2)
    tasks = [trace.task for trace in harness_traces[:3]]
    for task in [*tasks, *tasks]:
        assert memo(task) == task_facts(task)
    first = memo(tasks[2])
    assert memo(tasks[2].model_copy()) is first  # an equal task shares the facts
    assert len(memo._facts) == 2  # bounded: the oldest read went first
