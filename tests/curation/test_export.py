"""The export: golden files per format, rows in TRL's documented shapes, Parquet round trip, manifest."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from datasets import load_dataset
from sqlalchemy.orm import Session

from curation.chat import message
from curation.config import CurationConfig
from curation.errors import CurationError, RowError, SplitLeakError
from curation.export import curate_and_export
from curation.formats import (
    FORMATS,
    NATIVE_COLUMNS,
    PROVENANCE_COLUMNS,
    STATIC_WORLD,
    WORLD_COLUMNS,
    formats_named,
    validate_row,
)
from curation.manifest import read_manifest, refuse_leaks, training_clusters
from tests.curation.planted import GOLDEN_EVAL_SHARE, golden_population, store, task, trace

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "export"
UPDATE = os.environ.get("ARENA_UPDATE_GOLDEN") == "1"
# The golden population's miners replay one call template (miner-level axis B); the golden files
# pin the other stages, so the miner-level verdict is off here and tested in test_curate.py.
CONFIG = CurationConfig(eval_share=GOLDEN_EVAL_SHARE, miner_axis_sample=0)
# TRL's accepted column sets (trl.data_utils.apply_chat_template's table) plus the columns
# the trainers read beside them: ``tools`` (SFT, KTO, DPO) and GRPO's reward-function extras.
TRL_TYPES = {
    "sft": ({"messages"}, {"tools", *PROVENANCE_COLUMNS, *WORLD_COLUMNS}),
    "kto": ({"prompt", "completion", "label"}, {"tools", *PROVENANCE_COLUMNS, *WORLD_COLUMNS}),
    "dpo": ({"prompt", "chosen", "rejected"}, {"tools", *PROVENANCE_COLUMNS, *WORLD_COLUMNS}),
    "grpo": (
        {"prompt"},
        {
            "tools",
            "task_id",
            "intent",
            "ground_truth",
            "observed_rewards",
            "observed_success",
            *WORLD_COLUMNS,
            "observed_turn_rewards",
        },
    ),
}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture()
def golden_export(session: Session, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    golden_population(session)
    out = tmp_path / "export"
    return out, curate_and_export(session, out, config=CONFIG, source="sqlite:///test.db")


def _data_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.jsonl"))


def test_golden_files(golden_export: tuple[Path, dict[str, Any]]) -> None:
    out, funnel = golden_export
    produced = {str(p.relative_to(out)): p.read_text(encoding="utf-8") for p in _data_files(out)}
    produced["funnel.json"] = json.dumps(funnel, indent=2) + "\n"
    if UPDATE:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for name, text in produced.items():
            (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / name).write_text(text, encoding="utf-8")
    expected = {
        str(p.relative_to(GOLDEN)): p.read_text(encoding="utf-8")
        for p in sorted(GOLDEN.rglob("*"))
        if p.is_file()
    }
    assert sorted(produced) == sorted(expected), "rerun with ARENA_UPDATE_GOLDEN=1 after a deliberate change"
    for name, text in produced.items():
        assert text == expected[name], f"{name} differs from tests/fixtures/export/{name}"


def test_golden_population_fills_every_format_on_both_sides(
    golden_export: tuple[Path, dict[str, Any]],
) -> None:
    _, funnel = golden_export
    for fmt in FORMATS:
        assert funnel["exports"][fmt.name]["train"] > 0, fmt.name
    assert funnel["exports"]["dpo"]["eval"] > 0 and funnel["exports"]["sft"]["eval"] > 0
    assert funnel["exports"]["axis_b"]["train"] == 1
    stages = funnel["stages"]
    assert stages["dedup"]["dropped"] == {"exact_duplicate": 1}
    assert stages["normalise"]["dropped"] == {"no_trajectory": 1}


def test_every_row_has_trls_documented_shape(golden_export: tuple[Path, dict[str, Any]]) -> None:
    out, _ = golden_export
    for fmt in FORMATS:
        core, extra = TRL_TYPES[fmt.name]
        for path in (out / f"{fmt.name}.jsonl", out / "eval" / f"{fmt.name}.jsonl"):
            for row in read_jsonl(path):
                validate_row(fmt, row)
                assert set(row) == core | extra
                conversation = row.get("messages") or row["prompt"]
                assert all(isinstance(m["content"], str) for m in conversation)
                for column in ("messages", "completion", "chosen", "rejected"):
                    for item in row.get(column) or ():
                        for call in item["tool_calls"] or ():
                            assert isinstance(call["function"]["arguments"], dict)


def test_kto_labels_and_dpo_pairs_come_from_the_judgment(golden_export: tuple[Path, dict[str, Any]]) -> None:
    out, _ = golden_export
    manifest = read_manifest(out)
    kto = read_jsonl(out / "kto.jsonl")
    labels = dict(zip(manifest["files"]["kto.jsonl"]["provenance"], (r["label"] for r in kto), strict=True))
    assert labels["ep-000001"] is True and labels["ep-000003"] is False
    assert labels["ep-000005"] is False  # ungrounded failures are still KTO negatives
    pairs = manifest["files"]["dpo.jsonl"]["provenance"]
    assert ["ep-000001", "ep-000003"] in pairs  # the ungrounded failure (5) is never a rejected side
    assert all("ep-000005" not in pair for pair in pairs)
    sft = manifest["files"]["sft.jsonl"]["provenance"]
    assert "ep-000001" in sft and "ep-000003" not in sft


def test_parquet_round_trip_equals_jsonl(golden_export: tuple[Path, dict[str, Any]]) -> None:
    out, _ = golden_export
    for path in _data_files(out):
        parquet = path.with_suffix(".parquet")
        if not parquet.exists():  # the aside files are JSONL only
            continue
        rows = read_jsonl(path)
        if not rows:
            assert pq.read_table(parquet).num_rows == 0
            continue
        back = load_dataset("parquet", data_files=str(parquet), split="train")
        assert back.features == formats_named([path.stem])[0].features
        assert [dict(r) for r in back] == rows, path.name


def test_arguments_with_different_keys_keep_exactly_their_keys(
    golden_export: tuple[Path, dict[str, Any]],
) -> None:
    out, _ = golden_export
    back = load_dataset("parquet", data_files=str(out / "eval" / "sft.parquet"), split="train")
    calls = [
        call["function"]["arguments"]
        for row in back
        for item in row["messages"]
        for call in item["tool_calls"] or ()
        if call["function"]["name"] == "find_product"
    ]
    assert {"q": "wide search", "page": 1, "price": "0-120", "service": "freeShipping"} in calls
    assert any(set(c) == {"q", "page", "sort"} for c in calls)
    assert all(None not in c.values() for c in calls)


def test_empty_formats_still_write_their_files(session: Session, tmp_path: Path) -> None:
    t = task(1)
    store(session, [t], [trace(1, t, success=False, score=0.1)])
    out = tmp_path / "out"
    config = CurationConfig(eval_share=0.0, miner_axis_sample=0)
    funnel = curate_and_export(session, out, config=config, formats=formats_named(["sft", "dpo"]))
    assert funnel["exports"]["sft"] == {"train": 0, "eval": 0}
    for name in ("sft.jsonl", "dpo.jsonl", "eval/sft.jsonl", "eval/dpo.jsonl"):
        assert (out / name).read_text() == ""
        table = pq.read_table((out / name).with_suffix(".parquet"))
        assert table.num_rows == 0 and table.schema.metadata and b"huggingface" in table.schema.metadata
    assert not (out / "kto.jsonl").exists()


def test_manifest_splits_hashes_and_leak_refusal(golden_export: tuple[Path, dict[str, Any]]) -> None:
    out, _ = golden_export
    manifest = read_manifest(out)
    train, test = manifest["splits"]["train"], manifest["splits"]["eval"]
    for key in ("tasks", "clusters", "episodes"):
        assert train[key] and test[key] and not set(train[key]) & set(test[key]), key
    for name, info in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == info["sha256"], name
    assert set(manifest["judgment_hashes"]) == set(train["episodes"]) | set(test["episodes"])
    assert manifest["audit"]["ok"] is True
    clusters = training_clusters(manifest)
    leaked = task(1, cluster=sorted(clusters)[0])
    fresh = task(99)
    assert refuse_leaks(manifest, [leaked, fresh]) == [leaked.task_id]


def test_dataset_card_has_counts_sources_versions_licence_funnel(
    golden_export: tuple[Path, dict[str, Any]],
) -> None:
    out, funnel = golden_export
    card = (out / "README.md").read_text(encoding="utf-8")
    rows = funnel["exports"]["kto"]["train"]
    assert f"| `kto.jsonl` | kto | train | {rows} |" in card
    assert "Apache License 2.0" in card and "ShoppingBench" in card
    assert "scorer-1" in card and "cat-1" in card and "sb-1" in card and "gen-1" in card
    assert "| dedup |" in card and "exact_duplicate 1" in card
    assert "shoppingbench" in card and "generated" in card
    assert "sqlite:///test.db" in card


def test_a_leak_writes_nothing(session: Session, tmp_path: Path) -> None:
    config = CurationConfig(eval_share=0.4, miner_axis_sample=0)
    # A train task shares its gold product with a protected held-out task: the split cannot
    # move a protected task, so the export is refused.
    a = task(1, cluster="lc-golden-0")
    b = task(2, cluster="lc-golden-6", gold="g00001", pool="never_touch")
    store(session, [a, b], [trace(1, a)])
    out = tmp_path / "out"
    with pytest.raises(SplitLeakError):
        curate_and_export(session, out, config=config)
    assert not out.exists()
    assert not list(tmp_path.glob(".*partial*")) and not list(tmp_path.glob("arena-curate-*"))


def test_a_second_export_replaces_the_first(
    golden_export: tuple[Path, dict[str, Any]], session: Session
) -> None:
    out, _ = golden_export
    (out / "notes.txt").write_text("mine")
    curate_and_export(session, out, config=CONFIG, formats=formats_named(["sft"]))
    assert (out / "sft.jsonl").exists() and not (out / "kto.jsonl").exists()
    assert (out / "notes.txt").read_text() == "mine"  # only our own files are replaced


def test_unknown_format_is_refused() -> None:
    with pytest.raises(CurationError, match="unknown export format"):
        formats_named(["sft", "orpo"])


# ------------------------------------------------------------------ the row validator

SFT, KTO, DPO = formats_named(["sft", "kto", "dpo"])


def _sft() -> dict[str, Any]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "find_product", "arguments": {"q": "x", "page": 1}},
    }
    tools = [{"type": "function", "function": {"name": "find_product", "description": "", "parameters": {}}}]
    return {
        "messages": [
            message("user", "find x"),
            message("assistant", "", tool_calls=[call]),
            message("tool", "[]", tool_call_id="c1", name="find_product"),
            message("assistant", "done"),
        ],
        "tools": tools,
        **NATIVE_COLUMNS,
        **STATIC_WORLD,
    }


def test_validator_accepts_a_good_row_and_names_each_fault() -> None:
    validate_row(SFT, _sft())
    faults: dict[str, Any] = {}

    def broken(change: Any) -> dict[str, Any]:
        row = json.loads(json.dumps(_sft()))
        change(row)
        return row

    faults["arguments must be a JSON object"] = broken(
        lambda r: r["messages"][1]["tool_calls"][0]["function"].update(arguments='{"q": "x"}')
    )
    faults["not in tools"] = broken(
        lambda r: r["messages"][1]["tool_calls"][0]["function"].update(name="buy")
    )
    faults["exactly the keys"] = broken(lambda r: r["messages"][3].pop("name"))
    faults["answers no pending tool call"] = broken(lambda r: r["messages"][2].update(tool_call_id="c9"))
    faults["no user message after the prompt"] = broken(
        lambda r: r["messages"].append(message("user", "more"))
    )
    faults["columns"] = broken(lambda r: r.update(extra=1))
    faults["tools must be a non-empty list"] = broken(lambda r: r.update(tools=[]))
    faults["origin must be one of native, converted"] = broken(lambda r: r.update(origin="mined"))
    faults["a converted row needs source_hash, converter_version, writer"] = broken(
        lambda r: r.update(origin="converted")
    )
    faults["world_id and pack_hash must be both set or both null"] = broken(
        lambda r: r.update(world_id="w-0123456789abcdef")
    )
    for expected, row in faults.items():
        with pytest.raises(RowError, match=expected):
            validate_row(SFT, row)
    good = _sft()
    kto = {
        "prompt": good["messages"][:1],
        "completion": good["messages"][1:],
        "label": 1,
        "tools": good["tools"],
        **NATIVE_COLUMNS,
        **STATIC_WORLD,
    }
    with pytest.raises(RowError, match="label must be a bool"):
        validate_row(KTO, kto)
    dpo = {"prompt": good["messages"][:1], "chosen": good["messages"][1:], "rejected": good["messages"][1:]}
    with pytest.raises(RowError, match="chosen and rejected are the same"):
        validate_row(DPO, {**dpo, "tools": good["tools"], **NATIVE_COLUMNS, **STATIC_WORLD})
    with pytest.raises(RowError, match="must start with an assistant message"):
        validate_row(KTO, {**kto, "label": True, "completion": good["messages"]})
