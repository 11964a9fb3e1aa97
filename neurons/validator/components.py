"""The validator's components and its jobs: ``Validator``, built by ``open_validator`` from the settings.

``open_validator`` opens the chain, the database (schema at head, or migrated where allowed), the
search index and the episode registry; ``Validator.jobs`` are what the scheduler runs (metagraph
sync, round, weights, task rotation and the periodic export, ``curation_exporter``: the curation
funnel, or none). Running them is ``neurons.validator.process``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from arena.episode import EpisodeRegistry, EpisodeTokens
from arena.errors import SearchIndexError
from arena.gateway import Gateway
from arena.index import SearchIndex, open_index
from curation.conversion.convert import Converter
from curation.export import curate_and_export
from judging.judge import JudgeConfig
from judging.reasoning import OpenAICompleter
from judging.world import world_lookup
from neurons import metrics
from neurons.audit.publication import publisher_for
from neurons.chain.chaintypes import MetagraphSnapshot
from neurons.chain.client import BittensorChain, open_neuron_chain
from neurons.chain.signing import sign_document
from neurons.errors import ChainUnavailable
from neurons.protocol import PROTOCOL_VERSION
from neurons.validator.app import MeteredInferenceLog, MeteredToolLog
from neurons.validator.endpoints import EndpointPolicy, endpoint_policy, screen_endpoints
from neurons.validator.miner_client import MinerClient
from neurons.validator.rounds import (
    RoundDeps,
    RoundResult,
    RoundSummary,
    next_round_id,
    recover_round,
    run_round,
)
from neurons.validator.scheduler import Job
from neurons.validator.selfcheck import SelfCheck, run_self_check
from neurons.validator.settings import ValidatorSettings
from neurons.validator.startup import (
    derive,
    load_secret,
    open_database,
    open_search_index,
)
from neurons.validator.taskpool import ReplenishReport, replenish
from neurons.validator.weights import WeightsOutcome, weight_limit_warning, weights_pass
from neurons.validator.worlds import RoundWorld, WorldKeys, WorldSkip, round_world
from storage import repository
from storage.db import in_session, make_sessionmaker
from storage.paths import record_paths

logger = logging.getLogger(__name__)

Exporter = Callable[[Session, Path], Mapping[str, Any]]
"""The periodic export: curate and export judged traces into a directory (``curation_exporter``)."""


def curation_exporter(settings: ValidatorSettings) -> Exporter:
    """The export job's exporter: the curation funnel with its defaults (``curation.export``).

    Each run rewrites the export directory from the whole database (SFT, KTO, DPO and GRPO
    files, funnel, manifest, dataset card); the card names the database without its password.
    Axis-B and mixed traces are converted against the validator's search index (no index: none),
    a world episode against its world, found by pack hash among the cached packs.
    """
    source = make_url(settings.database_url()).render_as_string(hide_password=True)
    converters: list[Converter | None] = []

    def export(session: Session, out_dir: Path) -> Mapping[str, Any]:
        if not converters:  # the index is opened at the first export, once
            converters.append(_converter(settings))
        return curate_and_export(session, out_dir, source=source, converter=converters[0])

    return export


def _converter(settings: ValidatorSettings) -> Converter | None:
    """The export's converter on the validator's index, or None (logged) where it cannot be opened."""
    try:
        index = open_index(settings.index_path())
        return Converter(index=index, worlds=world_lookup(settings.world_cache_path(), index))
    except SearchIndexError as exc:
        logger.warning("curation_conversion_off reason=%s", exc)
        return None


# ---------------------------------------------------------------------------- the validator


@dataclass
class Validator:
    """The validator's components and its jobs (build with ``open_validator``; ``aclose`` when done)."""

    settings: ValidatorSettings
    chain: BittensorChain
    engine: Engine
    sessions: sessionmaker[Session]
    index: SearchIndex
    registry: EpisodeRegistry
    client: MinerClient
    completer: OpenAICompleter | None
    secret: bytes
    exporter: Exporter | None = None
    judge_pool: ThreadPoolExecutor | None = None  # the judge's code runs here, off the event loop
    gateway: Gateway | None = None  # the inference gateway on the registry (None: off)
    snapshot: MetagraphSnapshot | None = None
    last_round: RoundSummary | None = None
    last_weights: WeightsOutcome | None = None
    last_check: SelfCheck | None = None
    world: RoundWorld | None = None  # the world rounds run on now (world rounds on), kept across rounds
    tasks_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def hotkey(self) -> str:
        """Our hotkey."""
        return self.chain.hotkey

    def round_deps(self) -> RoundDeps:
        """The components a round uses."""
        s = self.settings
        return RoundDeps(
            sessions=self.sessions,
            registry=self.registry,
            client=self.client,
            products=self.index.products,
            completer=self.completer,
            judge_config=JudgeConfig(
                toolset=s.toolset,
                max_turns=s.round.max_turns,
                calls=s.judge.calls,
                catalog_version=self.index.catalog_version,
            ),
            draw_secret=derive(self.secret, "rounds"),
            validator_hotkey=self.hotkey,
            tool_server_url=s.tool_server_url() or "",
            query_concurrency=s.client.max_concurrency,
            judge_concurrency=s.judge.concurrency,
            self_check=self.self_check,
            judge_executor=self.judge_pool,
        )

    async def self_check(self) -> SelfCheck:
        """Check ourselves against the chain (registered, permit or owner, reachable, clock)."""
        self.last_check = await run_self_check(self.chain, max_clock_skew=self.settings.max_clock_skew)
        return self.last_check

    async def sync_metagraph(self) -> MetagraphSnapshot:
        """Take a metagraph snapshot and export its block and time."""
        snapshot = await self.chain.snapshot()
        self.snapshot = snapshot
        metrics.CHAIN_BLOCK.set(snapshot.block)
        metrics.METAGRAPH_SYNC_TIMESTAMP.set(time.time())
        logger.debug("metagraph_synced block=%d neurons=%d", snapshot.block, len(snapshot.neurons))
        return snapshot

    async def rotate_tasks(self) -> ReplenishReport:
        """Refill the held-out pool if it runs low (rounds wait while this runs)."""
        async with self.tasks_lock:
            secret = derive(self.secret, "tasks")
            return await asyncio.to_thread(
                in_session, self.sessions, replenish, self.index, secret=secret, config=self.settings.pool
            )

    def endpoint_policy(self) -> EndpointPolicy:
        """Which advertised miner addresses rounds query (global ones, unless allowed or local)."""
        return endpoint_policy(self.settings.network, self.settings.miner_networks)

    async def round(self) -> RoundSummary:
        """Close a round a crash left open, then run the next one on a fresh metagraph snapshot.

        Miners whose advertised address the endpoint policy refuses are not queried. No round runs
        while the self-check fails: the miners would refuse us, and that is no fault of theirs.
        """
        check = await self.self_check()
        if not check.ok:
            logger.error("round_refused cause=%s detail=%s", check.cause, check.detail)
            metrics.ROUNDS.labels("refused").inc()
            self.last_round = RoundSummary(round_id=None, result="refused")
            return self.last_round
        snapshot = screen_endpoints(await self.sync_metagraph(), self.endpoint_policy())
        world = await self.round_world(snapshot.block)
        if world is not None:
            await self.publish_rounds()
        if isinstance(world, WorldSkip):
            result: RoundResult = "no_world" if world.reason == "unseeded" else "no_commitment"
            self.last_round = RoundSummary(round_id=None, result=result)
            return self.last_round
        async with self.tasks_lock:
            round_id = await asyncio.to_thread(in_session, self.sessions, _recover_and_next)
            summary = await run_round(
                self.round_deps(), self.settings.round, snapshot, round_id=round_id, world=world
            )
        self.last_round = summary
        return summary

    async def round_world(self, block: int) -> RoundWorld | WorldSkip | None:
        """Our world of the round at ``block`` (compiled or loaded once per world); None: world rounds off.

        Raises:
            ChainUnavailable: the seed block's hash or our commitment could not be read.
            WorldError: the world could not be compiled or cached.
        """
        s = self.settings
        if not s.world.enabled:
            return None
        world = await round_world(
            self.chain,
            self.index,
            s.world,
            netuid=s.netuid,
            block=block,
            toolset=s.toolset,
            cache=s.world_cache_path(),
            keys=WorldKeys(
                secrets=derive(self.secret, "round-secrets"), seal=derive(self.secret, "world-cache")
            ),
            current=self.world,
        )
        if isinstance(world, RoundWorld):
            self.world = world
        return world

    async def publish_rounds(self) -> list[int]:
        """Publish our world rounds whose secret is revealed on chain (``neurons.audit.publication``).

        A chain or disk that fails here is logged: the next round publishes what is due.
        """
        sign = functools.partial(sign_document, self.chain.wallet)
        publisher = publisher_for(self.settings, self.hotkey, derive(self.secret, "round-secrets"), sign)
        try:
            return await publisher.publish_due(self.chain, self.sessions)
        except (ChainUnavailable, OSError) as exc:
            logger.warning("round_publication_failed error=%s", exc)
            return []

    async def warn_weight_limit(self) -> str | None:
        """Warn (at start-up) when the subnet's MaxWeightsLimit bends the weights policy; the warning.

        A chain that cannot be read now is only logged: the weights job reads the rules again.
        """
        try:
            rules = await self.chain.weight_rules()
        except ChainUnavailable as exc:
            logger.warning("weight_limit_unchecked error=%s", exc)
            return None
        warning = weight_limit_warning(rules, self.settings.policy)
        if warning is not None:
            logger.warning("weight_limit max_weight_share=%.4f %s", rules.max_weight_share, warning)
        return warning

    async def weights(self) -> WeightsOutcome:
        """One weights pass (submits only when due)."""
        self.last_weights = await weights_pass(
            self.chain, self.sessions, self.settings.policy, min_blocks=self.settings.weights_min_blocks
        )
        return self.last_weights

    async def export(self) -> Mapping[str, Any]:
        """Run the exporter into the export directory (a no-op without one)."""
        if self.exporter is None:
            return {}
        out = self.settings.export_path()
        out.mkdir(parents=True, exist_ok=True)
        return await asyncio.to_thread(in_session, self.sessions, self.exporter, out)

    def jobs(self) -> list[Job]:
        """The periodic jobs, in start order: rotation and metagraph at once, the round just after."""
        s = self.settings
        jobs = [
            Job("rotate_tasks", s.rotation_interval, self.rotate_tasks),
            Job("metagraph", s.metagraph_interval, self.sync_metagraph),
            Job("self_check", s.self_check_interval, self.self_check, first_delay=s.self_check_interval),
            Job("round", s.round_interval, self.round, first_delay=1.0, attempts=1),
            Job("weights", s.weights_interval, self.weights, first_delay=min(s.weights_interval, 60.0)),
        ]
        if self.exporter is not None:
            jobs.append(Job("export", s.export_interval, self.export, first_delay=s.export_interval))
        return jobs

    def health(self) -> dict[str, Any]:
        """The /health document."""
        return {
            "status": "ok",
            "role": "validator",
            "hotkey": self.hotkey,
            "netuid": self.settings.netuid,
            "protocol_version": PROTOCOL_VERSION,
            "toolset": self.settings.toolset,
            "catalog_version": self.index.catalog_version,
            "world": None
            if self.world is None
            else {"world_id": self.world.world_id, "round": self.world.at.index},
            "metagraph_block": self.snapshot.block if self.snapshot else None,
            "last_round": self.last_round.round_id if self.last_round else None,
            "self_check": None
            if self.last_check is None
            else {"ok": self.last_check.ok, "cause": self.last_check.cause, "detail": self.last_check.detail},
        }

    def report(self, failed: list[str]) -> dict[str, Any]:
        """What the last round and weights pass did, as JSON-able data (``arena validator --once --json``)."""
        summary, weights = self.last_round, self.last_weights
        submission = weights.submission if weights else None
        return {
            "hotkey": self.hotkey,
            "failed": failed,
            "round": {"round_id": summary.round_id, **summary.stats()} if summary else None,
            "weights": {
                "result": weights.result,
                "block": weights.block,
                "uids": list(weights.plan.uids) if weights.plan else [],
                "weights": list(weights.plan.weights) if weights.plan else [],
                "success": submission.success if submission else None,
                "message": submission.message if submission else None,
                # A commit's weights land at its reveal round; the next pass checks they did.
                "reveal_round": submission.reveal_round if submission else None,
                "reveal": weights.reveal.status if weights.reveal else None,  # the newest pending commit's
                "reveals": [check.status for check in weights.reveals],
            }
            if weights
            else None,
        }

    async def aclose(self) -> None:
        """Close the clients, the chain, the index and the engine."""
        await self.client.aclose()
        if self.gateway is not None:
            await self.gateway.aclose()
        if self.completer is not None:
            await self.completer.aclose()
        await self.chain.close()
        if self.judge_pool is not None:
            self.judge_pool.shutdown(wait=True, cancel_futures=True)
        self.index.close()
        self.engine.dispose()


def _recover_and_next(session: Session) -> int:
    recover_round(session)
    return next_round_id(session)


def open_validator(settings: ValidatorSettings, *, exporter: Exporter | None = None) -> Validator:
    """Build every component from the settings (call inside the event loop that will run it).

    Raises:
        StartupError: missing index or schema not at head; FileNotFoundError: no hotkey file;
        LocalChainError: the local chain file is missing or of another subnet.
    """
    settings.data_path().mkdir(parents=True, exist_ok=True, mode=0o700)
    secret = load_secret(settings)
    chain = open_neuron_chain(settings)
    index = open_search_index(settings)
    engine = open_database(settings)
    with make_sessionmaker(engine)() as session:
        last = repository.last_successful_weights(session, landed=True)
        # Where curating this database later finds the index and the packs its episodes need.
        record_paths(
            session, index=settings.index_path(), worlds=settings.world_cache_path(), at=datetime.now(UTC)
        )
    # A revealed commit's weights were on chain by the block its reveal was checked at.
    landed = last.reveal_block or last.block if last is not None else None
    metrics.WEIGHTS_LAST_SUCCESS_BLOCK.set(landed or 0)
    judge = settings.judge
    completer = (
        OpenAICompleter(
            judge.base_url,
            judge.model or "",
            api_key=judge.api_key.get_secret_value(),
            timeout_s=judge.timeout,
            response_format=judge.response_format,
        )
        if judge.base_url
        else None
    )
    # Tokens outlive the episode budget by a little: long enough for a clear "budget spent".
    registry = EpisodeRegistry(
        EpisodeTokens(derive(secret, "tokens")),
        MeteredToolLog(),
        token_grace_s=60.0,
        inference=MeteredInferenceLog(),
    )
    gateway = settings.gateway
    gateway_on = Gateway(registry, gateway.policy(), gateway.limits()) if gateway.enabled else None
    return Validator(
        settings=settings,
        chain=chain,
        engine=engine,
        sessions=make_sessionmaker(engine),
        index=index,
        registry=registry,
        client=MinerClient(chain.wallet, limits=settings.client),
        completer=completer,
        secret=secret,
        exporter=exporter,
        judge_pool=ThreadPoolExecutor(max_workers=settings.judge.workers, thread_name_prefix="arena-judge"),
        gateway=gateway_on,
    )
