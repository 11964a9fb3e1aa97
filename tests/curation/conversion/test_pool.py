"""Conversion on worker processes: the same values as in-process, in submission order, a bounded window."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.index import SearchIndex
from curation.conversion.convert import Converter, ConverterSpec
from curation.conversion.lines import converted_line
from curation.conversion.pool import START_AFTER, ConversionPool, Workers, available_cores
from storage.records import JudgedTrace


def _episode(converter: Converter, trace: JudgedTrace) -> str:
    """A job that does not convert: which trace the worker saw."""
    del converter
    return trace.episode.episode_id


def test_in_process_values_come_in_slot_order(
    synth_index: SearchIndex, harness_traces: list[JudgedTrace]
) -> None:
    with ConversionPool(_episode, converter=Converter(index=synth_index)) as pool:
        got: list[str] = []
        for i, trace in enumerate(harness_traces[:6]):
            pool.add(f"kept-{i}") if i % 2 else pool.submit(trace)
            got += pool.ready()  # in-process, every value is ready at once
        got += pool.rest()
    want = [f"kept-{i}" if i % 2 else t.episode.episode_id for i, t in enumerate(harness_traces[:6])]
    assert got == want


def test_workers_give_the_in_process_lines_in_order(
    synth_index: SearchIndex, synth_index_dir: Path, harness_traces: list[JudgedTrace]
) -> None:
    converter = ConverterSpec(index_dir=synth_index_dir).open()
    try:
        with ConversionPool(converted_line, converter=converter) as inline:
            for trace in harness_traces:
                inline.submit(trace)
            expected = list(inline.rest())
        with ConversionPool(converted_line, converter=converter, workers=Workers(2), chunk=3) as pool:
            assert pool.window == 2 * 3 * 4
            got: list[object] = []
            for i, trace in enumerate(harness_traces):
                pool.submit(trace)
                if i == 10:
                    pool.add({"status": "marker"})  # a value of the caller's, between two jobs
                got += pool.ready()
                assert len(pool._slots) <= pool.window  # never more held than the window
            got += pool.rest()
    finally:
        converter.index.close()
    assert got == [*expected[:11], {"status": "marker"}, *expected[11:]]
    assert any(line["status"] == "converted" for line in expected)


def test_workers_need_a_converter_they_can_open(synth_index: SearchIndex) -> None:
    with pytest.raises(ValueError, match="ConverterSpec"):
        ConversionPool(_episode, converter=Converter(index=synth_index), workers=Workers(2))


def test_workers_start_only_after_the_jobs_run_here(
    synth_index_dir: Path, harness_traces: list[JudgedTrace]
) -> None:
    converter = ConverterSpec(index_dir=synth_index_dir).open()
    try:
        with ConversionPool(_episode, converter=converter, workers=Workers(2, start_after=5)) as pool:
            for trace in harness_traces[:5]:
                pool.submit(trace)
            assert pool.ran_here == 5 and pool.window == 0  # no workers yet: values ready at once
            assert len(list(pool.ready())) == 5
            for trace in harness_traces[5:12]:
                pool.submit(trace)
            assert pool.ran_here == 5 and pool.window > 0  # the sixth job started them
            got = list(pool.rest())
    finally:
        converter.index.close()
    assert got == [t.episode.episode_id for t in harness_traces[5:12]]


def test_a_commands_workers_option() -> None:
    assert Workers.given(3) == Workers(3, start_after=0)  # asked for: started at once
    assert Workers.given(0) == Workers(available_cores(), START_AFTER)  # left to us: when needed
