"""The labelled calibration set: every case must get the axis and verdict a person gave it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.types import Task, ToolLogEntry, Trajectory
from judging.judge import JudgeConfig, judge
from judging.world import AtAnswer
from tests.judging.factory import lookup

CALIBRATION = Path(__file__).resolve().parents[1] / "fixtures" / "calibration"
CASES = sorted(CALIBRATION.glob("*.json"))


def test_the_set_covers_every_axis_and_both_verdicts() -> None:
    labels = [json.loads(p.read_text())["expected"] for p in CASES]
    assert len(CASES) >= 10
    assert {x["axis"] for x in labels} == {"A", "B", "mixed", "unknown"}
    assert {x["success"] for x in labels} == {True, False} and {x["zeroed"] for x in labels} == {True, False}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
async def test_calibration_case(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    expected = case["expected"]
    j = await judge(
        Task.model_validate(case["task"]),
        Trajectory.model_validate(case["trajectory"]),
        log=[ToolLogEntry.model_validate(e) for e in case["log"]],
        against=AtAnswer(lookup),
        completer=None,
        config=JudgeConfig(),
    )
    assert j.axis == expected["axis"]
    assert j.success is expected["success"]
    assert (j.score == 0.0) is expected["zeroed"]
    assert list(j.rejects) == expected["rejects"]
    assert list(j.fabricated_call_ids) == expected.get("fabricated", [])
    assert list(j.hallucinated_product_ids) == expected.get("hallucinated", [])
    assert j.reasoning.injection_flagged is expected.get("injection", False)
