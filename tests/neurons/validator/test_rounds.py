"""run_round against in-process miners on loopback and the local chain: query, judge, store, burn, recover."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy.orm import Session, sessionmaker

from arena.index import SearchIndex
from arena.types import FunctionCall, Message, ToolCall, ToolResult, Trajectory
from judging.config import JudgeCalls
from judging.errors import JudgeRefused
from judging.judge import JudgeConfig
from judging.scores import MinerStanding, ScorePolicy, standings
from neurons.chain.chaintypes import MetagraphSnapshot, Neuron
from neurons.chain.wallets import register_wallet
from neurons.errors import DeadlinePassed
from neurons.miner.agents.contract import Agent, AgentOutput, AgentRequest, ToolCaller
from neurons.miner.agents.scripted import scripted_agent
from neurons.miner.settings import MinerAppConfig
from neurons.protocol import TaskRequest
from neurons.validator.miner_client import MinerClient, MinerReply
from neurons.validator.rounds import (
    RoundSummary,
    next_round_id,
    pick_miners,
    recover_round,
    run_round,
    verdict,
)
from neurons.validator.selfcheck import SelfCheck
from neurons.validator.taskpool import open_and_burn
from neurons.validator.weights import plan_weights
from storage import repository
from storage.repository import score_samples
from tests.e2e.agents import own_search_then_scripted
from tests.neurons.conftest import LocalNet
from tests.neurons.rig import SECRET, all_traces, failing_agent, make_sessions, running_rig, stock_tasks


@pytest.fixture
def sessions(tmp_path: Path, synth_index: SearchIndex) -> sessionmaker[Session]:
    made = make_sessions(tmp_path)
    stock_tasks(made, synth_index)
    return made


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_round_judges_and_stores_every_episode_and_burns_its_tasks(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    agents = {"miner1": scripted_agent, "miner2": failing_agent}
    errors_before = counter("arena_episodes_total", end="miner_error")
    rounds_before = counter("arena_rounds_total", result="ok")
    calls_before = counter("arena_tool_calls_total", tool="find_product", status="ok")
    async with running_rig(net, synth_index, sessions, agents=agents) as rig:
        summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
        assert rig.deps.registry.log("ep-none") == []

    assert (summary.result, summary.miners, summary.tasks, summary.stored) == ("ok", 2, 2, 4)
    assert summary.ends == {"completed": 2, "miner_error": 2}
    traces = all_traces(sessions)
    assert len(traces) == 4
    by_miner: dict[str, list[Any]] = {}
    for trace in traces:
        by_miner.setdefault(trace.episode.miner_hotkey, []).append(trace)
        assert trace.episode.round_id == 0 and trace.judgment.episode_id == trace.episode.episode_id
    good, bad = by_miner[net.hotkey("miner1")], by_miner[net.hotkey("miner2")]
    for trace in good:
        assert trace.episode.end == "completed" and trace.episode.miner_uid == 2
        assert trace.tool_log, "the tool server's log is stored with the episode"
        called = [c.id for m in trace.trajectory.messages for c in m.tool_calls or ()]
        assert [entry.call_id for entry in trace.tool_log] == called
        assert not trace.judgment.fabricated_call_ids and trace.judgment.score > 0
    for trace in bad:
        assert trace.episode.end == "miner_error" and trace.trajectory is None
        assert trace.judgment.score == 0 and trace.judgment.end == "miner_error"
    assert {t.task.task_id for t in good} == {t.task.task_id for t in bad}  # every miner got every task

    with sessions() as session:
        record = repository.get_round(session, round_id=0)
        assert record is not None and record.closed_at is not None
        assert record.stats is not None and record.stats["stored"] == 4
        served = repository.get_tasks(session, task_ids=record.task_ids)
        assert all(t.pool == "retired" for t in served.values())
        held = {t.task_id for t in repository.tasks_in_pool(session, pool="held_out")}
        assert held.isdisjoint(record.task_ids)
        assert next_round_id(session) == 1
    assert counter("arena_episodes_total", end="miner_error") == errors_before + 2
    assert counter("arena_rounds_total", result="ok") == rounds_before + 1
    assert counter("arena_tool_calls_total", tool="find_product", status="ok") > calls_before


async def test_consecutive_rounds_never_serve_a_task_twice(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    async with running_rig(net, synth_index, sessions, agents={"miner1": scripted_agent}) as rig:
        for round_id in range(3):
            await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=round_id)
        last = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=3)
    with sessions() as session:
        served = [task_id for r in range(3) for task_id in repository.get_round(session, round_id=r).task_ids]
    assert len(served) == len(set(served)) == 6
    # 8 tasks were stocked: the fourth round finds too few, and runs none of the burned ones.
    assert last.tasks <= 2
    assert {t.task.task_id for t in all_traces(sessions)} >= set(served)


class Overloaded:
    """A client whose every query finds its deadline passed before sending (our overload)."""

    async def query(self, neuron: Neuron, request: TaskRequest) -> MinerReply:
        raise DeadlinePassed(f"deadline of {request.episode_id} passed before sending")


async def test_our_overload_is_not_the_miners_fault(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    before = counter("arena_episodes_total", end="not_sent")
    async with running_rig(
        net, synth_index, sessions, agents={"miner1": scripted_agent}, client=Overloaded()
    ) as rig:
        summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    assert (summary.result, summary.stored, summary.not_sent) == ("partial", 0, 2)
    assert all_traces(sessions) == []  # nothing judged, nothing scored
    assert counter("arena_episodes_total", end="not_sent") == before + 2
    with sessions() as session:
        record = repository.get_round(session, round_id=0)
        assert record is not None and record.closed_at is not None  # the tasks stay burned


async def test_miners_refusing_us_stop_the_round_and_score_nobody(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    # An unregistered validator: every miner answers 403 unknown_hotkey, our fault, not theirs.
    before = counter("arena_validator_refusals_total", reason="unknown_hotkey")
    stopped = counter("arena_rounds_total", result="stopped")
    agents = {"miner1": scripted_agent, "miner2": scripted_agent}
    async with MinerClient(net.wallets["stranger"]) as stranger:
        async with running_rig(net, synth_index, sessions, agents=agents, client=stranger) as rig:
            summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    assert (summary.result, summary.stored, summary.unscored) == ("stopped", 0, summary.unscored)
    assert summary.unscored >= 2 and summary.refusals == {"unknown_hotkey": summary.unscored}
    assert all_traces(sessions) == []  # no miner zero stored
    assert counter("arena_validator_refusals_total", reason="unknown_hotkey") >= before + 2
    assert counter("arena_rounds_total", result="stopped") == stopped + 1


class Claimants:
    """The real client, except that some miners claim every request of ours is ``stale``."""

    def __init__(self, real: MinerClient, *claimants: str) -> None:
        self.real, self.claimants = real, set(claimants)

    async def query(self, neuron: Neuron, request: TaskRequest) -> MinerReply:
        if neuron.hotkey not in self.claimants:
            return await self.real.query(neuron, request)
        return MinerReply(
            hotkey=neuron.hotkey,
            uid=neuron.uid,
            end="miner_error",
            trajectory=None,
            latency=0.0,
            cause="refused_us",
            detail="401 stale",
            status_code=401,
            refusal="stale",
        )


async def test_one_miner_claiming_our_fault_while_we_check_out_is_its_own_zero(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    checks: list[int] = []

    async def passing() -> SelfCheck:
        checks.append(1)
        return SelfCheck(True)

    agents = {"miner1": scripted_agent, "miner2": scripted_agent}
    async with MinerClient(net.wallets["validator"]) as real:
        client = Claimants(real, net.hotkey("miner2"))
        async with running_rig(net, synth_index, sessions, agents=agents, client=client) as rig:
            rig.deps.self_check = passing
            summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    assert (summary.result, summary.stored, summary.unscored) == ("ok", 4, 0)
    assert checks == [1]  # checked once, at the first such claim
    claimed = [t for t in all_traces(sessions) if t.episode.miner_hotkey == net.hotkey("miner2")]
    assert len(claimed) == 2 and all(
        t.judgment.score == 0 and t.episode.end == "miner_error" for t in claimed
    )


async def test_one_claim_that_our_self_check_confirms_stops_the_round(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    async def failing() -> SelfCheck:
        return SelfCheck(False, "clock_skew", "the clock is at least 3.0s ahead")

    agents = {"miner1": scripted_agent, "miner2": scripted_agent}
    async with MinerClient(net.wallets["validator"]) as real:
        client = Claimants(real, net.hotkey("miner2"))
        async with running_rig(
            net, synth_index, sessions, agents=agents, client=client, tasks_per_round=1
        ) as rig:
            rig.deps.self_check = failing
            rig.deps.query_concurrency = 1  # miner1 (uid order) first, then the claim stops the rest
            summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    assert summary.result == "stopped" and summary.unscored == 1
    assert {t.episode.miner_hotkey for t in all_traces(sessions)} <= {net.hotkey("miner1")}


async def claimed_round(
    net: LocalNet,
    synth_index: SearchIndex,
    sessions: sessionmaker[Session],
    agents: Mapping[str, Any],
    claimants: Sequence[str],
    self_check: Callable[[], Awaitable[SelfCheck]],
) -> RoundSummary:
    """One round in which the named miners claim every request of ours is ``stale``."""
    async with MinerClient(net.wallets["validator"]) as real:
        client = Claimants(real, *(net.hotkey(name) for name in claimants))
        async with running_rig(net, synth_index, sessions, agents=agents, client=client) as rig:
            rig.deps.self_check = self_check
            return await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)


async def test_a_colluding_half_claiming_our_fault_gets_its_zeros_when_another_miner_admits_us(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    """Issue 27, item 5: two of three miners answer 401 stale "in our name"; the quorum stopped the
    round before anything weighed the claim, and the colluders escaped their zeros."""
    register_wallet(net.path, net.wallets["stranger"])  # a third miner, uid 4
    checks: list[int] = []

    async def passing() -> SelfCheck:
        checks.append(1)
        return SelfCheck(True)

    agents = {"miner1": scripted_agent, "miner2": scripted_agent, "stranger": scripted_agent}
    summary = await claimed_round(net, synth_index, sessions, agents, ("miner2", "stranger"), passing)

    assert (summary.result, summary.stored, summary.unscored) == ("ok", 6, 0)
    assert checks == [1]
    colluders = {net.hotkey("miner2"), net.hotkey("stranger")}
    claimed = [t for t in all_traces(sessions) if t.episode.miner_hotkey in colluders]
    assert len(claimed) == 4 and all(
        t.judgment.score == 0 and t.episode.end == "miner_error" for t in claimed
    )


async def test_a_quorum_claiming_our_fault_with_no_miner_admitting_us_stops_the_round(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    """A clock off by less than a block passes the self-check; every miner refusing ``stale`` and
    none admitting a request is then the evidence, and nobody is scored."""

    async def passing() -> SelfCheck:
        return SelfCheck(True)

    agents = {"miner1": scripted_agent, "miner2": scripted_agent}
    summary = await claimed_round(net, synth_index, sessions, agents, ("miner1", "miner2"), passing)

    assert (summary.result, summary.stored, summary.unscored) == ("stopped", 0, 4)
    assert all_traces(sessions) == []


async def test_a_quorum_of_miners_whose_chain_view_expired_stops_the_round_unscored(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    """Issue 27, item 6: the miners' chain endpoint is out, so every miner answers 503
    metagraph_expired; those were stored as miner zeros in a round marked ok."""
    stopped = counter("arena_rounds_total", result="stopped")
    outage = MinerAppConfig(metagraph_ttl=3600.0, metagraph_max_age=0.2)  # read once, then no more
    agents = {"miner1": scripted_agent, "miner2": scripted_agent}
    configs = dict.fromkeys(agents, outage)
    async with running_rig(net, synth_index, sessions, agents=agents, miner_configs=configs) as rig:
        await asyncio.sleep(0.3)  # past the miners' metagraph_max_age
        summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)

    assert (summary.result, summary.stored, summary.unscored) == ("stopped", 0, 4)
    assert summary.refusals == {"metagraph_expired": 4}
    assert all_traces(sessions) == []  # no miner zero stored
    assert counter("arena_rounds_total", result="stopped") == stopped + 1


async def test_one_miner_whose_chain_view_expired_is_its_own_zero(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    register_wallet(net.path, net.wallets["stranger"])  # three miners: a quorum is two
    agents = {"miner1": scripted_agent, "miner2": scripted_agent, "stranger": scripted_agent}
    configs = {"miner2": MinerAppConfig(metagraph_ttl=3600.0, metagraph_max_age=0.2)}
    async with running_rig(net, synth_index, sessions, agents=agents, miner_configs=configs) as rig:
        await asyncio.sleep(0.3)
        summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)

    assert (summary.result, summary.stored, summary.unscored) == ("ok", 6, 0)
    expired = [t for t in all_traces(sessions) if t.episode.miner_hotkey == net.hotkey("miner2")]
    assert len(expired) == 2 and all(t.judgment.score == 0 for t in expired)


class UnencodableMiner:
    """A client whose every miner answers a trajectory holding a lone surrogate (made in Python,
    past the JSON decoder that refuses them on the wire): text no hash or database can encode."""

    async def query(self, neuron: Neuron, request: TaskRequest) -> MinerReply:
        trajectory = Trajectory(
            task_id=request.task_id,
            episode_id=request.episode_id,
            miner_hotkey=neuron.hotkey,
            messages=(
                Message(role="user", content=request.query),
                Message(role="assistant", content="best pick \ud800"),
            ),
        )
        return MinerReply(
            hotkey=neuron.hotkey, uid=neuron.uid, end="completed", trajectory=trajectory, latency=0.1
        )


async def test_an_episode_that_cannot_be_stored_is_stored_as_a_miner_fault_scoring_0(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    async with running_rig(
        net, synth_index, sessions, agents={"miner1": scripted_agent}, client=UnencodableMiner()
    ) as rig:
        summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    assert (summary.result, summary.stored, summary.failed) == ("ok", 2, 0)
    assert summary.ends == {"malformed": 2}
    traces = all_traces(sessions)
    assert len(traces) == 2
    for trace in traces:
        assert trace.episode.end == "malformed" and trace.trajectory is None
        assert trace.judgment.score == 0 and trace.judgment.end == "malformed"
        assert "cannot be stored" in trace.judgment.checks[0].explanation
    with sessions() as session:
        assert [s.score for s in score_samples(session, window=64)] == [0.0, 0.0]


class DownJudge:
    """An LLM judge endpoint that is down."""

    model = "judge-down"

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        raise ConnectionError("judge unreachable")


async def test_a_judge_outage_is_stored_unscored_and_never_moves_weights(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    # judge_zeroed: the judge is asked about every trajectory, so every one meets the outage.
    config = JudgeConfig(
        catalog_version=synth_index.catalog_version, calls=JudgeCalls(retries=0), judge_zeroed=True
    )
    before = counter("arena_judge_unscored_total", cause="error")
    async with running_rig(
        net,
        synth_index,
        sessions,
        agents={"miner1": scripted_agent},
        completer=DownJudge(),
        judge_config=config,
    ) as rig:
        await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
        snapshot = await rig.snapshot()
    traces = all_traces(sessions)
    assert len(traces) == 2 and all(t.judgment.reasoning_outage for t in traces)
    assert all(t.judgment.reasoning.value is None for t in traces)  # unscored, never 0
    assert counter("arena_judge_unscored_total", cause="error") == before + 2
    with sessions() as session:
        assert len(score_samples(session, window=64)) == 2
        assert score_samples(session, window=64, exclude_reasoning_outages=True) == []
        plan = plan_weights(session, snapshot, ScorePolicy())
    # Nothing scored: the weights are what they were with no episode at all (all to the owner).
    assert plan is not None and (plan.uids, plan.weights) == ((snapshot.owner_uid,), (1.0,))


class RefusingJudge:
    """An LLM judge endpoint that refuses every request with a 4xx (our request is at fault)."""

    model = "judge-refuses"

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        raise JudgeRefused(400, "prompt over the model's context")


async def test_a_judge_refusal_is_counted_and_never_leaves_the_weights_window(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    config = JudgeConfig(
        catalog_version=synth_index.catalog_version, calls=JudgeCalls(retries=2), judge_zeroed=True
    )
    before = REGISTRY.get_sample_value("arena_judge_refusals_total") or 0.0
    async with running_rig(
        net,
        synth_index,
        sessions,
        agents={"miner1": scripted_agent},
        completer=RefusingJudge(),
        judge_config=config,
    ) as rig:
        await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    traces = all_traces(sessions)
    assert len(traces) == 2
    for trace in traces:
        unscored = trace.judgment.reasoning.unscored
        assert unscored is not None and unscored.cause == "refused" and not trace.judgment.reasoning_outage
    assert (REGISTRY.get_sample_value("arena_judge_refusals_total") or 0.0) == before + 2
    with sessions() as session:
        kept = score_samples(session, window=64, exclude_reasoning_outages=True)
    assert sorted(s.score for s in kept) == sorted(t.judgment.score for t in traces)


def test_recovery_closes_an_interrupted_round_and_keeps_its_tasks_burned(
    synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    with sessions() as session:
        drawn = open_and_burn(session, round_id=0, secret=SECRET, n=3, validator_hotkey="5V", block=7)
        assert len(drawn) == 3
        interrupted = recover_round(session)
        assert interrupted is not None and interrupted.round_id == 0
        record = repository.get_round(session, round_id=0)
        assert record is not None and record.closed_at is not None
        assert record.stats == {"result": "interrupted"}
        stored = repository.get_tasks(session, task_ids=[t.task_id for t in drawn])
        assert all(t.pool == "retired" for t in stored.values())
        assert recover_round(session) is None
        assert next_round_id(session) == 1


async def test_no_round_is_recorded_without_miners_or_tasks(
    net: LocalNet, synth_index: SearchIndex, tmp_path: Path
) -> None:
    empty = make_sessions(tmp_path / "empty")
    async with running_rig(net, synth_index, empty, agents={"miner1": scripted_agent}) as rig:
        no_tasks = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
        snapshot = await rig.snapshot()
        alone = snapshot.model_copy(update={"neurons": tuple(n for n in snapshot.neurons if n.uid <= 1)})
        no_miners = await run_round(rig.deps, rig.config, alone, round_id=0)
    assert (no_tasks.result, no_tasks.round_id) == ("no_tasks", None)
    assert (no_miners.result, no_miners.round_id) == ("no_miners", None)
    with empty() as session:
        assert repository.last_round(session) is None


def _neuron(uid: int, *, endpoint: str | None = "http://127.0.0.1:1") -> Neuron:
    return Neuron(
        uid=uid,
        hotkey=f"hk{uid}",
        coldkey=f"ck{uid}",
        stake=0.0,
        validator_permit=False,
        endpoint=endpoint,
        last_update=0,
    )


def _snapshot(neurons: Sequence[Neuron], owner_uid: int = 0) -> MetagraphSnapshot:
    return MetagraphSnapshot(
        netuid=1,
        block=10,
        neurons=tuple(neurons),
        owner_hotkey="hk0",
        owner_uid=owner_uid,
        taken_at=datetime.now(UTC),
    )


def test_pick_miners_skips_us_the_owner_and_the_unserved() -> None:
    snapshot = _snapshot([_neuron(0), _neuron(1), _neuron(2, endpoint=None), _neuron(3), _neuron(4)])
    picked = pick_miners(snapshot, self_hotkey="hk1", n=0, key=b"k")
    assert [n.uid for n in picked] == [3, 4]


def test_pick_miners_samples_reproducibly_per_round() -> None:
    snapshot = _snapshot([_neuron(uid) for uid in range(40)])
    first = pick_miners(snapshot, self_hotkey="hk1", n=8, key=b"round-1")
    assert len(first) == 8 and [n.uid for n in first] == sorted(n.uid for n in first)
    assert first == pick_miners(snapshot, self_hotkey="hk1", n=8, key=b"round-1")
    others = [pick_miners(snapshot, self_hotkey="hk1", n=8, key=f"round-{r}".encode()) for r in range(2, 6)]
    assert any(o != first for o in others)
    assert {1, 0} & {n.uid for o in [first, *others] for n in o} == set()
    assert len(pick_miners(snapshot, self_hotkey="hk1", n=100, key=b"x")) == 38


def test_verdicts() -> None:
    from tests.storage.factories import make_task, make_trace

    answered = make_trace(5, task=make_task(1), score=0.9).judgment
    assert verdict(answered) == "success"
    unanswered = make_trace(6, task=make_task(1), answered=False).judgment
    assert verdict(unanswered) == "unanswered"


def _dotted(call: ToolCall) -> ToolCall:
    """A search with " ." appended to its query (the same hits); any other call as it is."""
    if call.function.name != "find_product":
        return call
    arguments = {**json.loads(call.function.arguments)}
    arguments["q"] += " ."
    return ToolCall(id=call.id, function=FunctionCall(name="find_product", arguments=json.dumps(arguments)))


async def dotted_copy_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """The scripted agent, " ." appended to every search: other calls, the same hits and answer."""

    async def dotting(name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        if name == "find_product":
            arguments = {**arguments, "q": arguments["q"] + " ."}
        return await call_tool(name, arguments, call_id)

    output = await scripted_agent(request, dotting)
    messages = [
        m.model_copy(update={"tool_calls": tuple(_dotted(c) for c in m.tool_calls)}) if m.tool_calls else m
        for m in output.messages
    ]
    return output.model_copy(update={"messages": messages})


def converging_once_agent() -> Agent:
    """An agent of its own: the scripted path on the first task it gets, its own first search after."""
    seen: list[str] = []

    async def agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        seen.append(request.episode_id)
        if len(seen) == 1:  # the one obvious path: the same calls, hits and answer as scripted
            return await scripted_agent(request, call_tool)
        return await own_search_then_scripted(request, call_tool, "lamp")

    return agent


def credits(sessions: sessionmaker[Session]) -> dict[str, MinerStanding]:
    """Each hotkey's standing as the weights read it (its mean is its mean credit)."""
    with sessions() as session:
        return standings(score_samples(session, window=64), ScorePolicy())


def scores_by_miner(sessions: sessionmaker[Session]) -> dict[str, dict[str, float]]:
    """Each hotkey's judged score per task, as stored."""
    out: dict[str, dict[str, float]] = {}
    for trace in all_traces(sessions):
        assert "duplicate_work" not in trace.judgment.rejects  # a judgment is the verdict on the work
        out.setdefault(trace.episode.miner_hotkey, {})[trace.task.task_id] = trace.judgment.score
    return out


async def test_two_hotkeys_running_one_agent_share_one_credit(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    agents = {"miner1": scripted_agent, "miner2": scripted_agent}
    before = counter("arena_duplicate_episodes_total")
    async with running_rig(net, synth_index, sessions, agents=agents) as rig:
        await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    scores, standing = scores_by_miner(sessions), credits(sessions)
    assert len(scores) == 2 and all(len(by_task) == 2 for by_task in scores.values())
    for hotkey, by_task in scores.items():
        assert all(score > 0 for score in by_task.values())  # each judgment is kept as judged
        assert standing[hotkey].mean == pytest.approx(sum(by_task.values()) / len(by_task) / 2)
    assert counter("arena_duplicate_episodes_total") == before + 2


async def test_a_copy_that_appends_a_dot_to_its_searches_is_still_a_copy(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    # The red team's evasion: the same hits and answer through other query strings.
    agents = {"miner1": scripted_agent, "miner2": dotted_copy_agent}
    async with running_rig(net, synth_index, sessions, agents=agents) as rig:
        await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    queries = [e.arguments.get("q") for t in all_traces(sessions) for e in t.tool_log]
    assert any(q and q.endswith(" .") for q in queries)
    scores, standing = scores_by_miner(sessions), credits(sessions)
    for hotkey, by_task in scores.items():
        assert all(score > 0 for score in by_task.values())
        assert standing[hotkey].mean == pytest.approx(sum(by_task.values()) / len(by_task) / 2)
    # Together the two earn what one of them earns alone: the copy cannot profit.
    assert sum(s.mean for s in standing.values()) == pytest.approx(
        sum(scores[net.hotkey("miner1")].values()) / 2
    )


async def test_independent_agents_converging_on_the_obvious_path_keep_their_credit(
    net: LocalNet, synth_index: SearchIndex, sessions: sessionmaker[Session]
) -> None:
    agents = {"miner1": scripted_agent, "miner2": converging_once_agent()}
    before = counter("arena_duplicate_episodes_total")
    async with running_rig(net, synth_index, sessions, agents=agents) as rig:
        await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0)
    scores, standing = scores_by_miner(sessions), credits(sessions)
    for hotkey, by_task in scores.items():
        assert all(score > 0 for score in by_task.values())  # neither is zeroed as the other's copy
        assert standing[hotkey].mean == pytest.approx(sum(by_task.values()) / len(by_task))
    assert counter("arena_duplicate_episodes_total") == before + 1  # they did converge, once
    with sessions() as session:
        works = {(s.hotkey, s.task_id): s.work for s in score_samples(session, window=64)}
    tasks = {task for _, task in works}
    same = [t for t in tasks if works[net.hotkey("miner1"), t] == works[net.hotkey("miner2"), t]]
    assert len(tasks) == 2 and len(same) == 1 and None not in works.values()
