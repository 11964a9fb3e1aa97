"""Rounds with the inference gateway on loopback: an LLM miner is A-attested on every call, a harness never.

Real HTTP throughout: the validator's app (tool server and gateway), the miners' apps, and a
fake OpenAI-compatible model served over HTTP that chooses its calls from each request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from arena.gateway import GatewayLimits
from arena.index import SearchIndex
from judging.scores import ScorePolicy
from neurons.miner.agents.contract import Agent, AgentOutput, AgentRequest, ToolCaller
from neurons.miner.agents.llm import make_llm_agent
from neurons.miner.agents.scripted import scripted_agent
from neurons.validator.rounds import run_round
from neurons.validator.weights import plan_weights
from storage import repository
from tests.neurons.conftest import LocalNet
from tests.neurons.reading_model import ReadingModel
from tests.neurons.rig import all_traces, make_sessions, running_rig, stock_tasks

KEY = "sk-llm-miner-key-0123456789"
FILLERS = ("Okay.", "Hmm, right.", "Let me be careful here.", "vlorp qzx 7731.")


@pytest.fixture
def sessions(tmp_path: Path, synth_index: SearchIndex) -> sessionmaker[Session]:
    made = make_sessions(tmp_path)
    stock_tasks(made, synth_index)
    return made


def filler_harness(model_url: str) -> Agent:
    """The red team's harness: the scripted agent picks every call; each step's reasoning names the
    call's arguments amid fillers; and it asks the model, through the gateway, for words to pad with."""

    async def agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        async def narrated(
            name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
        ) -> Any:
            if request.gateway is not None:  # the gateway serves it: the model's words, not its calls
                headers = {"Authorization": f"Bearer {request.gateway.token}", "X-Arena-Upstream": model_url}
                body = {"model": "m", "messages": [{"role": "user", "content": f"Narrate {name}."}]}
                async with httpx.AsyncClient() as http:
                    await http.post(
                        f"{request.gateway.base_url}/chat/completions", json=body, headers=headers
                    )
            return await call_tool(name, arguments, call_id, raw=raw)

        output = await scripted_agent(request, narrated)
        messages = []
        for number, message in enumerate(output.messages):
            if message.tool_calls:
                said = "; ".join(f"{c.function.name} with {c.function.arguments}" for c in message.tool_calls)
                pad = FILLERS[number % len(FILLERS)]
                message = message.model_copy(update={"reasoning_content": f"{pad} I call {said}. {pad}"})
            messages.append(message)
        return output.model_copy(update={"messages": messages})

    return agent


async def test_an_llm_miner_through_the_gateway_is_a_attested_on_every_call_and_a_harness_never(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    async with ReadingModel() as model:
        llm = make_llm_agent(model.base_url, "reading-model", api_key=KEY)
        agents = {"miner1": llm, "miner2": filler_harness(model.base_url)}
        async with running_rig(net, synth_index, sessions, agents=agents, gateway=GatewayLimits()) as rig:
            summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
        await llm.aclose()
    assert (summary.result, summary.stored) == ("ok", 4)
    traces = all_traces(sessions)
    by_miner = {
        hk: [t for t in traces if t.episode.miner_hotkey == hk]
        for hk in {t.episode.miner_hotkey for t in traces}
    }
    attested, harness = by_miner[net.hotkey("miner1")], by_miner[net.hotkey("miner2")]
    assert len(attested) == len(harness) == 2
    for trace in attested:
        assert trace.episode.end == "completed" and len(trace.tool_log) >= 3
        assert [e.nonce_status for e in trace.tool_log] == ["valid"] * len(trace.tool_log)
        assert trace.judgment.axis == "A-attested"
        with sessions() as session:
            exchanges = repository.inference_log(session, episode_id=trace.episode.episode_id)
        assert [e.outcome for e in exchanges] == ["ok"] * len(trace.tool_log)
        assert all(KEY not in e.request + e.response for e in exchanges)
    for trace in harness:
        assert trace.episode.end == "completed" and trace.tool_log
        assert {e.nonce_status for e in trace.tool_log} == {"none"}
        # Its reasoning names every argument, so by structure it reads as A (the red team's
        # finding, measured on 2026-12-05: "A", steps all "driven"); proven, it never is.
        assert trace.judgment.axis != "A-attested"
        with sessions() as session:  # it did use the gateway: its exchanges are on record
            assert repository.inference_log(session, episode_id=trace.episode.episode_id)
    assert {auth for auth, _ in model.requests} == {f"Bearer {KEY}", None}  # the harness sent no key
    assert all(json.dumps(body).count(KEY) == 0 for _, body in model.requests)


async def test_a_gateway_failure_is_ours_and_never_scores_the_miner(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("a bug of the validator's")

    async with ReadingModel() as model:
        llm = make_llm_agent(model.base_url, "reading-model", api_key=KEY, max_retries=0)
        async with running_rig(
            net, synth_index, sessions, agents={"miner1": llm}, gateway=GatewayLimits()
        ) as rig:
            assert rig.gateway is not None
            await rig.gateway.client.aclose()
            rig.gateway.client = httpx.AsyncClient(transport=httpx.MockTransport(broken))
            summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
        await llm.aclose()
    assert summary.stored == 2 and model.requests == []
    traces = all_traces(sessions)
    assert all(t.judgment.score == 0 for t in traces)  # the agent got no model answer: a zero...
    with sessions() as session:
        outcomes = {
            e.outcome
            for t in traces
            for e in repository.inference_log(session, episode_id=t.episode.episode_id)
        }
        assert outcomes == {"gateway_error"}
        # ...that never enters the weights: the episodes are left out of the window.
        samples = repository.score_samples(session, window=64, exclude_gateway_faults=True)
        assert samples == []
        snapshot = await net.chain("validator").snapshot()
        plan = plan_weights(session, snapshot, ScorePolicy())
    assert plan is None or net.hotkey("miner1") not in plan.standings
