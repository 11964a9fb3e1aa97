"""An in-process validator rig: miners and the tool server on loopback, the local chain, SQLite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.episode import EpisodeRegistry, EpisodeTokens
from arena.gateway import Gateway, GatewayLimits
from arena.httpguard import address_policy
from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.toolserver import create_tool_router
from arena.world.seed import world_round_at
from judging.judge import JudgeConfig
from judging.reasoning import Completer
from neurons.chain.chaintypes import MetagraphSnapshot
from neurons.chain.local.state import LocalChain
from neurons.chain.signing import make_nonce_store
from neurons.miner.agents.contract import Agent, AgentOutput, AgentRequest, ToolCaller
from neurons.miner.app import create_miner_app
from neurons.miner.settings import MinerAppConfig
from neurons.validator.app import MeteredInferenceLog, MeteredToolLog, create_validator_app
from neurons.validator.miner_client import MinerClient
from neurons.validator.rounds import RoundDeps
from neurons.validator.settings import ClientLimits, JudgeSettings, PoolConfig, RoundConfig, ValidatorSettings
from neurons.validator.taskpool import replenish
from storage.db import make_engine, make_sessionmaker, upgrade
from storage.records import JudgedTrace
from storage.repository import iter_judged
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.standins import free_socket, serve_app

SECRET = b"r" * 32


async def failing_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """An agent that always raises (its miner answers 500)."""
    raise RuntimeError("broken on purpose")


def make_sessions(tmp_path: Path) -> sessionmaker[Session]:
    """A fresh SQLite database at head."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite:///{tmp_path / 'validator.db'}")
    upgrade(engine)
    return make_sessionmaker(engine)


def stock_tasks(sessions: sessionmaker[Session], index: SearchIndex, n: int = 8) -> None:
    """Generate and store ``n`` held-out tasks (no practice or reserved share)."""
    config = PoolConfig(min_held_out=n, batch=n, practice_share=0.0, never_touch_share=0.0)
    with sessions() as session:
        replenish(session, index, secret=SECRET, config=config)


@dataclass
class Rig:
    """What a round needs, running: deps, config and a fresh snapshot."""

    net: LocalNet
    deps: RoundDeps
    config: RoundConfig
    sessions: sessionmaker[Session]
    tool_url: str
    gateway: Gateway | None = None

    async def snapshot(self) -> MetagraphSnapshot:
        return await self.net.chain("validator").snapshot()


async def serve_miners(
    stack: AsyncExitStack,
    net: LocalNet,
    agents: Mapping[str, Agent],
    configs: Mapping[str, MinerAppConfig] | None = None,
) -> None:
    """Serve each named miner's agent on loopback, its endpoint served on the local chain.

    ``configs`` gives a miner's app settings by name (default ``MinerAppConfig()``).
    """
    for name, agent in agents.items():
        sock = free_socket()
        port = sock.getsockname()[1]
        chain = net.chain(name)
        served = await chain.serve("127.0.0.1", port)
        assert served.success, served.message
        app = create_miner_app(
            wallet=net.wallets[name],
            agent=agent,
            metagraph=chain.snapshot,
            nonce_store=make_nonce_store(),
            # The metagraph is read once before serving, then every metagraph_ttl (30 s).
            config=(configs or {}).get(name, MinerAppConfig()),
        )
        await stack.enter_async_context(serve_app(app, sock))


@asynccontextmanager
async def running_rig(
    net: LocalNet,
    index: SearchIndex,
    sessions: sessionmaker[Session],
    *,
    agents: Mapping[str, Agent],
    completer: Completer | None = None,
    judge_config: JudgeConfig | None = None,
    client: Any = None,
    gateway: GatewayLimits | None = None,
    miner_configs: Mapping[str, MinerAppConfig] | None = None,
    **config: Any,
) -> AsyncIterator[Rig]:
    """Serve each named miner's agent (endpoint served on the local chain) and the validator's tool server.

    With ``gateway`` the validator's app offers the inference gateway too (loopback upstreams
    allowed: the tests' models listen there), as ``rig.gateway``.
    """
    registry = EpisodeRegistry(EpisodeTokens(SECRET), MeteredToolLog(), inference=MeteredInferenceLog())
    async with AsyncExitStack() as stack:
        await serve_miners(stack, net, agents, miner_configs)
        inference = Gateway(registry, address_policy(["127.0.0.0/8"]), gateway) if gateway else None
        if inference is not None:
            stack.push_async_callback(inference.aclose)
        tool_app = create_validator_app(
            tool_router=create_tool_router(registry, ToolContext(index=index)),
            gateway_router=inference.router() if inference is not None else None,
            health=lambda: {"status": "ok"},
        )
        tool_url = await stack.enter_async_context(serve_app(tool_app))
        if client is None:
            client = await stack.enter_async_context(MinerClient(net.wallets["validator"]))
        deps = RoundDeps(
            sessions=sessions,
            registry=registry,
            client=client,
            products=index.products,
            completer=completer,
            judge_config=judge_config or JudgeConfig(catalog_version=index.catalog_version),
            draw_secret=SECRET,
            validator_hotkey=net.hotkey("validator"),
            tool_server_url=tool_url,
            query_concurrency=ClientLimits().max_concurrency,
            judge_concurrency=JudgeSettings().concurrency,
        )
        values: dict[str, Any] = {"tasks_per_round": 2, "episode_seconds": 20.0}
        values.update(config)
        yield Rig(net, deps, RoundConfig(**values), sessions, tool_url, inference)


def all_traces(sessions: sessionmaker[Session]) -> list[JudgedTrace]:
    """Every stored judged episode, in ingest order."""
    with sessions() as session:
        return list(iter_judged(session))


# World rounds on the local chain (0.25 s blocks): a new world every 8 blocks, seeded 2 after its start.
WORLD_PERIOD, WORLD_DELAY = 8, 2


def world_validator(
    net: LocalNet, tmp_path: Path, index: Path, wallet: str = "validator"
) -> ValidatorSettings:
    """A validator on ``net`` running world rounds (3 tasks), its index outside its data directory.

    Its data directory is its own (``tmp_path / wallet``): its own secret file, so its own round
    secrets. Its first round commits its round secret and runs no world (``no_commitment``).
    """
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    return ValidatorSettings(
        network="local",
        local_chain=net.path,
        netuid=NETUID,
        wallet_name=wallet,
        wallet_path=net.wallets_dir,
        host="127.0.0.1",
        port=port,
        data_dir=tmp_path / wallet,
        index=index,
        pool={"min_held_out": 1, "batch": 4, "practice_share": 0, "never_touch_share": 0, "findable": False},
        round={"tasks_per_round": 3, "episode_seconds": 30},
        world={"enabled": True, "period_blocks": WORLD_PERIOD, "delay_blocks": WORLD_DELAY},
    )


async def next_world(net: LocalNet) -> int:
    """Wait (real time: the validators read it) until a new world's seed block is made; its index."""
    chain = LocalChain(net.path)  # wall time, as the validators' chain reads it (net.clock stands still)
    at = world_round_at(chain.block(), period=WORLD_PERIOD, delay=WORLD_DELAY)
    target = 0 if at is None else at.index + 1
    for _ in range(2000):
        now = world_round_at(chain.block(), period=WORLD_PERIOD, delay=WORLD_DELAY)
        if now is not None and now.index >= target:
            return now.index
        await asyncio.sleep(0.02)
    raise AssertionError("the local chain made no new world")
