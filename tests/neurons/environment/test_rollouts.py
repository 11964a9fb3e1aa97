"""Rollouts become data: a model policy's episodes in the environment, judged, stored, curated into rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset

from arena.tools import canonical_arguments
from arena.types import canonical_json
from arena.world.types import WorldTask
from curation.export import curate_and_export
from curation.formats import sft
from curation.rollouts import RolloutSource, rollout_formats
from judging.facts import result_facts
from neurons.environment.rollouts import (
    ROLLOUT_HOTKEY,
    RolloutMismatch,
    RolloutRun,
    export_run,
    model_policy,
    open_store,
    summary,
)
from neurons.environment.session import EnvConfig, Environment
from neurons.environment.tasks import EnvTasks
from neurons.evaluation.settings import sample_seed
from storage.traces import iter_judged
from tests.neurons.environment.oracle import answer_ids
from tests.neurons.policy_stub import PolicyStub, Script

K = 4
WINNING_SAMPLES = (0, 2)


def _tasks(env_tasks: EnvTasks) -> list[WorldTask]:
    """Product tasks a policy that never asks can still solve (their held-back need decides nothing)."""
    assert env_tasks.world is not None
    found = []
    for task in env_tasks.world.pack.tasks:
        held = task.profile.held_back
        if task.basis == "cheapest_in_stock" and all(h.kind == "attribute" for h in held):
            found.append(task)
    return found[:3]


def _scripts(env: Environment, tasks: list[WorldTask]) -> dict[str, Script]:
    scripts = {}
    for task in tasks:
        gold = answer_ids(env, task, 2)[0]  # the recommendation is the episode's third call
        title = task.task.gold[0].titles[0]
        shown = env.tasks.context.index.products([gold])
        assert shown, gold
        wrong = next(pid for pid in sorted(_search_ids(env, title)) if pid != gold)
        seeds = frozenset(sample_seed(0, task.task.task_id, j) for j in WINNING_SAMPLES)
        scripts[task.task.query] = Script(q=title, gold=gold, wrong=wrong, success_seeds=seeds)
    return scripts


def _search_ids(env: Environment, title: str) -> set[str]:
    session = env.reset(seed=0).session_id
    from neurons.environment.types import Action

    found = env.step(session, Action(tool="find_product", arguments={"q": title, "page": 1})).result
    env.close(session)
    return set(result_facts(found).product_ids)


@pytest.fixture
async def run(env_tasks: EnvTasks, tmp_path: Path) -> dict[str, Any]:
    env = Environment(env_tasks, EnvConfig(hotkey=ROLLOUT_HOTKEY, max_sessions=2))
    tasks = _tasks(env_tasks)
    engine, sessions = open_store(tmp_path)
    async with PolicyStub(_scripts(env, tasks)) as stub:
        async with model_policy(
            stub.base_url, "stub-model", name="stub-policy", weights_hash="sha256:abc"
        ) as policy:
            records = await RolloutRun(env, policy, K, tmp_path, sessions).run(
                [t.task for t in tasks], concurrency=2
            )
            played = len(stub.requests)
            again = await RolloutRun(env, policy, K, tmp_path, sessions).run([t.task for t in tasks])
            assert again == records and len(stub.requests) == played  # a rerun resumes: nothing replayed
            with pytest.raises(RolloutMismatch):
                await RolloutRun(env, policy, K + 1, tmp_path, sessions).run([t.task for t in tasks])
    funnel = export_run(sessions, tmp_path, policy, K, eval_share=0.0)
    with sessions() as session:
        traces = {t.episode.episode_id: t for t in iter_judged(session)}
    engine.dispose()
    return {"records": records, "funnel": funnel, "traces": traces, "out": tmp_path, "sessions": sessions}


def _rows(out: Path, fmt: str) -> list[dict[str, Any]]:
    path = out / "export" / f"{fmt}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_successes_are_sft_rows_and_failures_kto_negatives(run: dict[str, Any]) -> None:
    records, out = run["records"], run["out"]
    assert len(records) == 3 * K and all(r.axis == "A-attested" for r in records)  # attested by the harness
    wins = {r.episode_id for r in records if r.success}
    assert {r.sample for r in records if r.success} == set(WINNING_SAMPLES) and len(wins) == 6
    manifest = json.loads((out / "export" / "manifest.json").read_text())
    sft_episodes = manifest["files"]["sft.jsonl"]["provenance"]
    kto_episodes = manifest["files"]["kto.jsonl"]["provenance"]
    assert set(sft_episodes) <= wins and sft_episodes  # dedup may fold identical wins together
    labels = {e: row["label"] for e, row in zip(kto_episodes, _rows(out, "kto"), strict=True)}
    assert any(not label for label in labels.values()) and all(labels[e] == (e in wins) for e in labels)
    for row in _rows(out, "sft") + _rows(out, "kto"):
        assert (row["origin"], row["policy"], row["weights_hash"], row["k"]) == (
            "rollout", "stub-policy", "sha256:abc", K,
        )  # fmt: skip
        assert row["world_id"] is not None and row["pack_hash"] is not None
    assert run["funnel"]["audit"]["ok"]
    sft_rows = len(_rows(out, "sft"))
    assert run["funnel"]["origins"]["sft"] == {"native": 0, "converted": 0, "rollout": sft_rows}
    summed = summary(records, K)
    assert summed["pass@1"] == 0.5 and summed[f"pass@{K}"] == 1.0


def test_rows_carry_the_environments_log_byte_for_byte(run: dict[str, Any]) -> None:
    out, traces = run["out"], run["traces"]
    manifest = json.loads((out / "export" / "manifest.json").read_text())
    for fmt in ("sft", "kto"):
        episodes = manifest["files"][f"{fmt}.jsonl"]["provenance"]
        for episode, row in zip(episodes, _rows(out, fmt), strict=True):
            messages = row["messages"] if fmt == "sft" else row["prompt"] + row["completion"]
            calls = [c for m in messages for c in m["tool_calls"] or ()]
            results = [m["content"] for m in messages if m["role"] == "tool"]
            log = sorted(traces[episode].tool_log, key=lambda e: e.seq)
            assert results == [e.result for e in log]
            assert [(c["id"], c["function"]["name"]) for c in calls] == [(e.call_id, e.tool) for e in log]
            assert [
                canonical_json(canonical_arguments(c["function"]["name"], c["function"]["arguments"]))
                for c in calls
            ] == [canonical_json(e.arguments) for e in log]
            assert {e.nonce_status for e in log} == {"valid"}


def test_the_rows_load_with_their_features_and_as_trl_reads_them(run: dict[str, Any]) -> None:
    out = run["out"]
    for fmt in rollout_formats(RolloutSource("stub-policy", "sha256:abc", K)):
        data = Dataset.from_parquet(str(out / "export" / f"{fmt.name}.parquet"))
        assert data.features == fmt.features and len(data) == len(_rows(out, fmt.name))
    trl = pytest.importorskip("trl")
    assert all(trl.data_utils.is_conversational(row) for row in _rows(out, "sft"))


def test_the_run_database_is_a_validators_for_arena_curate(run: dict[str, Any], tmp_path: Path) -> None:
    with run["sessions"]() as session:
        funnel = curate_and_export(session, tmp_path / "standard", formats=(sft.FORMAT,))
    assert funnel["audit"]["ok"] and funnel["source"]["traces"] == len(run["records"])
