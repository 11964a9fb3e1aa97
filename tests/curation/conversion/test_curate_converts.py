"""Curation's conversion stage: harness traces become converted SFT, KTO and DPO rows with provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from sqlalchemy.orm import Session

from arena.index import SearchIndex
from curation.config import CurationConfig
from curation.conversion.convert import Converter, ConverterSpec
from curation.conversion.pool import Workers
from curation.conversion.results import CONVERTER_VERSION
from curation.export import curate_and_export
from curation.formats import PROVENANCE_COLUMNS
from curation.stages.convert import FIXES, convert_outcome, prospective_keys
from storage import repository
from storage.records import JudgedTrace
from storage.tasks import save_tasks
from tests.curation.conversion.world import readdressed

CONFIG = CurationConfig(split_by="none")


def _store(session: Session, traces: list[JudgedTrace]) -> None:
    save_tasks(session, tasks=[t.task for t in traces])
    for t in traces:
        repository.save_judged(
            session, episode=t.episode, trajectory=t.trajectory, tool_log=t.tool_log, judgment=t.judgment
        )


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_curate_converts_harness_traces_into_rows_with_provenance(
    session: Session, tmp_path: Path, synth_index: SearchIndex, harness_traces: list[JudgedTrace]
) -> None:
    _store(session, harness_traces)
    out = tmp_path / "export"
    funnel = curate_and_export(session, out, config=CONFIG, converter=Converter(index=synth_index))
    stages = funnel["stages"]
    convert = stages["convert"]
    assert convert["in"] == stages["axis"]["out"] == len(harness_traces)  # one harness: miner axis B
    assert convert["out"] + sum(convert["dropped"].values()) == convert["in"]
    assert convert["notes"]["converted"] == convert["out"] > 0
    assert stages["ranking"]["in"] == convert["out"]
    assert funnel["exports"]["axis_b"] == {"train": 0, "eval": 0}
    sft = _jsonl(out / "sft.jsonl")
    assert sft and {row["origin"] for row in sft} == {"converted"}
    assert funnel["origins"]["sft"] == {"native": 0, "converted": len(sft)}
    sources = {row["source_hash"] for row in sft}
    assert all(isinstance(h, str) and h.startswith("s-") for h in sources)
    assert {row["converter_version"] for row in sft} == {CONVERTER_VERSION}
    assert {row["writer"] for row in sft} == {"template/1"}
    for row in sft:  # every assistant turn calls a tool for reasons it states
        turns = [m for m in row["messages"] if m["role"] == "assistant"]
        assert all(m["reasoning_content"] and m["tool_calls"] for m in turns)
    kto = _jsonl(out / "kto.jsonl")
    assert {row["label"] for row in kto} == {True, False}  # failed harness traces: KTO negatives
    for name in ("sft", "kto", "dpo"):
        table = pq.read_table(out / f"{name}.parquet")
        assert set(PROVENANCE_COLUMNS) <= set(table.column_names)
    back = pq.read_table(out / "sft.parquet").to_pylist()
    assert [r["source_hash"] for r in back] == [r["source_hash"] for r in sft]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"sft 0 native, {len(sft)} converted" in card


def test_no_converter_sets_b_aside_and_the_funnel_says_how_many_and_the_fix(
    session: Session, tmp_path: Path, harness_traces: list[JudgedTrace]
) -> None:
    _store(session, harness_traces)
    funnel = curate_and_export(session, tmp_path / "export", config=CONFIG)
    stages = funnel["stages"]
    assert stages["axis"]["aside"]["axis_b"] > 0 and stages["axis"]["dropped"]["axis_mixed"] > 0
    assert stages["axis"]["out"] == stages["convert"]["in"] == stages["convert"]["out"] == 0
    assert stages["convert"]["notes"] == {
        "off": {
            "reason": "no search index",
            "set_aside": {"axis_b": stages["axis"]["aside"]["axis_b"]},
            "dropped": {"axis_mixed": stages["axis"]["dropped"]["axis_mixed"]},
            "fix": FIXES["off"],
        }
    }
    assert funnel["exports"]["sft"] == {"train": 0, "eval": 0}


def test_curation_on_worker_processes_exports_the_same_bytes(
    session: Session, tmp_path: Path, synth_index_dir: Path, harness_traces: list[JudgedTrace]
) -> None:
    _store(session, harness_traces)
    converter = ConverterSpec(index_dir=synth_index_dir).open()
    try:
        funnels = [
            curate_and_export(
                session, tmp_path / f"w{n}", config=CONFIG, converter=converter, workers=Workers(n)
            )
            for n in (1, 2)
        ]
    finally:
        converter.index.close()
    assert funnels[0]["stages"] == funnels[1]["stages"]
    convert = funnels[1]["stages"]["convert"]
    assert convert["notes"]["converted"] > 0
    files = sorted(p.relative_to(tmp_path / "w1") for p in (tmp_path / "w1").rglob("*.jsonl"))
    assert files and all(
        (tmp_path / "w1" / f).read_bytes() == (tmp_path / "w2" / f).read_bytes() for f in files
    )


def test_dedup_converts_only_the_sources_it_keeps(
    session: Session, tmp_path: Path, synth_index: SearchIndex, harness_traces: list[JudgedTrace]
) -> None:
    source = harness_traces[0]
    copies = [readdressed(source, f"{source.episode.episode_id}-{k}") for k in range(5)]
    _store(session, copies)
    funnel = curate_and_export(
        session, tmp_path / "export", config=CONFIG, converter=Converter(index=synth_index)
    )
    stages = funnel["stages"]
    assert stages["convert"]["notes"]["converted"] == 1  # the best-ranked copy
    assert stages["convert"]["notes"]["not_converted"] == 4  # the others: duplicates before converting
    assert stages["dedup"]["dropped"] == {"exact_duplicate": 4}


def test_a_failed_conversion_lets_the_next_source_of_its_task_in(
    session: Session, tmp_path: Path, synth_index: SearchIndex, harness_traces: list[JudgedTrace]
) -> None:
    source = harness_traces[0]
    broken = readdressed(source, f"a-{source.episode.episode_id}")  # ranks first: the id breaks the tie
    first = broken.tool_log[0]
    broken = broken.model_copy(
        update={"tool_log": (first.model_copy(update={"result": first.result + " "}), *broken.tool_log[1:])}
    )
    _store(session, [broken, readdressed(source, f"b-{source.episode.episode_id}")])
    out = tmp_path / "export"
    funnel = curate_and_export(session, out, config=CONFIG, converter=Converter(index=synth_index))
    stages = funnel["stages"]
    assert stages["convert"]["dropped"] == {"log_hash_mismatch": 1}
    assert stages["convert"]["notes"]["converted"] == 1 and stages["dedup"]["out"] == 1
    kept = _jsonl(out / "kto.jsonl")
    assert [row["source_hash"] for row in kept] != [None] and len(kept) == 1


def test_a_sources_prospective_keys_are_its_converted_keys(
    synth_index: SearchIndex, harness_traces: list[JudgedTrace]
) -> None:
    converter = Converter(index=synth_index)
    checked = 0
    for trace in harness_traces:
        outcome = convert_outcome(converter, trace, config=CONFIG)
        if outcome.row is None or outcome.unpruned:
            continue
        keys = prospective_keys(trace, converter.config)
        assert (keys.exact, keys.steps, keys.answer) == (
            outcome.row.exact,
            outcome.row.steps,
            outcome.row.answer,
        )
        checked += 1
    assert checked > len(harness_traces) // 2
