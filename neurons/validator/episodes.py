"""One round's episodes (``Episodes``): query a miner under a bound, judge the reply, store it.

Each episode is judged and stored in one transaction as soon as its reply arrives (the round,
``neurons.validator.rounds``, gathers them). Content the miner sent that cannot be stored is the
miner's fault, stored as such; a scored episode is stored with the address of its work (the
results its calls got, its answer: ``judging.duplicates.work_hash``), from which the weights
share one credit between hotkeys that copy one another. The judgment is stored as judged, never
zeroed for it. The judge's code runs in ``RoundDeps.judge_executor``, off the loop.

A reply refusing us in our own name, or saying the miner cannot read the chain, is held
(``Held``), not judged, and the round decides whose fault it is (the rule is in
``neurons.validator.rounds``' docstring).

A miner never sees a task's own id (a content hash over its gold): each request names the task by
an opaque id of its episode (``opaque_task_id``), and the reply's trajectory is judged and stored
under the task's own id (``readdressed``).

In a world round (``world`` given) each episode's tools run over the world's overlay, the judge
reads the world's products (its prices, its listings), and the stored episode names the pack.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from arena.episode import Budgets, EpisodeRegistry
from arena.errors import EpisodeError
from arena.inference import InferenceExchange
from arena.tools import tool_schemas
from arena.types import Task, ToolLogEntry, Trajectory
from judging.duplicates import work_hash
from judging.judge import JudgeConfig, judge, judge_unanswered
from judging.outcome import ProductLookup
from judging.reasoning import Completer
from judging.types import Judgment
from judging.world import AtAnswer
from neurons import metrics
from neurons.chain.chaintypes import Neuron
from neurons.errors import DeadlinePassed
from neurons.protocol import PROTOCOL_VERSION, TaskBudgets, TaskRequest
from neurons.validator.backoff import retry
from neurons.validator.counting import count_stored
from neurons.validator.miner_client import HELD_CAUSES, MinerReply
from neurons.validator.selfcheck import SelfCheck
from neurons.validator.settings import RoundConfig
from neurons.validator.worlds import RoundWorld
from storage import repository
from storage.errors import UnstorableContent
from storage.records import EpisodeRecord

logger = logging.getLogger(__name__)


class Querier(Protocol):
    """What a round needs of ``neurons.validator.miner_client.MinerClient``."""

    async def query(self, neuron: Neuron, request: TaskRequest) -> MinerReply:
        """Send one signed task; miner faults come back as data, our overload as ``DeadlinePassed``."""
        ...


@dataclass
class RoundDeps:
    """The components a round uses (built once per process by ``neurons.validator.process``).

    What a round does is its ``RoundConfig`` (``ARENA_ROUND__*``); these scalars come from the
    other settings: the tool server's URL, and the concurrency bounds of the client
    (``ARENA_CLIENT__MAX_CONCURRENCY``) and of the judge (``ARENA_JUDGE__CONCURRENCY``). The tool
    set offered is the one judged, ``judge_config.toolset``.
    """

    sessions: sessionmaker[Session]
    registry: EpisodeRegistry
    client: Querier
    products: ProductLookup
    completer: Completer | None
    judge_config: JudgeConfig
    draw_secret: bytes  # keys the task draw and the miner sample of each round
    validator_hotkey: str
    tool_server_url: str  # sent in every task: where the miner's agent calls the tools
    query_concurrency: int  # episodes in flight at once (each holds a connection)
    judge_concurrency: int  # LLM judge calls at once
    judge_executor: Executor | None = None  # where the judge's code runs (None: on the event loop)
    # Run when a miner refuses us in our own name, or a quorum holds replies (``neurons.validator.
    # rounds``); None: the round's own evidence only.
    self_check: Callable[[], Awaitable[SelfCheck]] | None = None


@dataclass(frozen=True)
class Held:
    """A reply refusing us in our own name or unable to read the chain, held until the round decides."""

    miner: Neuron
    task: Task
    reply: MinerReply
    episode_id: str
    started: datetime
    finished: datetime
    log: Sequence[ToolLogEntry]
    inference: Sequence[InferenceExchange] = ()


def refusal_quorum(miners: int) -> int:
    """How many distinct miners holding replies call the round's evidence in: half, at least two."""
    return min(miners, max(2, math.ceil(miners / 2)))


class Episodes:
    """Runs one round's episodes: query under a concurrency bound, then judge and store each reply."""

    def __init__(
        self,
        deps: RoundDeps,
        config: RoundConfig,
        round_id: int,
        *,
        miners: int,
        world: RoundWorld | None = None,
    ) -> None:
        self.deps, self.config, self.round_id, self.world = deps, config, round_id, world
        self.products = world.overlay.products if world is not None else deps.products
        self.query_slots = asyncio.Semaphore(deps.query_concurrency)
        self.judge_slots = asyncio.Semaphore(deps.judge_concurrency)
        self.tools = tuple(tool_schemas(deps.judge_config.toolset))
        self.budgets = Budgets(config.max_tool_calls, config.episode_seconds)
        self.works: dict[str, str] = {}  # the work scored so far in the round, and who brought it first
        self.miners = miners
        self.quorum = refusal_quorum(miners)
        self.claimants: set[str] = set()
        self.admitted = False  # a miner answered a request of ours 200: it accepted our signature
        self.stopped: str | None = None  # why the round stopped sending (our fault), once it has
        self._check: SelfCheck | None = None
        self._check_lock = asyncio.Lock()

    async def _claimed(self, miner: Neuron, reply: MinerReply) -> None:
        """A miner held a reply against us or the chain: stop the round when our self-check fails."""
        metrics.VALIDATOR_REFUSALS.labels(reply.refusal or "unknown").inc()
        logger.warning("miner_refused_us round=%d uid=%d reason=%s", self.round_id, miner.uid, reply.refusal)
        self.claimants.add(miner.hotkey)
        if self.stopped is not None or self.deps.self_check is None:
            return
        # A claim about our state, or a quorum of any: run the self-check (once per round, as a
        # claim costs the claimant nothing). A quorum alone stops nothing: a colluding half
        # would escape its zeros; ``unscored_because`` weighs it at the end of the round.
        if reply.cause != "refused_us" and len(self.claimants) < self.quorum:
            return
        async with self._check_lock:
            if self._check is None:
                self._check = await self.deps.self_check()
        if not self._check.ok and self.stopped is None:
            self.stopped = f"self-check failed: {self._check.cause} ({self._check.detail})"

    def unscored_because(self) -> str | None:
        """Why the held replies are not the claimants' fault (left unscored), or None: their zeros.

        Ours when our self-check failed (the round stopped sending then). Shared (our clock off
        by less than a block, or the chain endpoint the miners read) when a quorum of the
        round's miners held replies and no miner admitted a single request of ours: had our
        requests been acceptable, the others would have said so.
        """
        if self.stopped is not None:
            return self.stopped
        if len(self.claimants) >= self.quorum and not self.admitted:
            return f"{len(self.claimants)} of {self.miners} miners refused us and none admitted a request"
        return None

    async def run(self, miner: Neuron, task: Task) -> Judgment | Held | None:
        """One (miner, task) episode; None when it was never sent (our overload, or a stopped round)."""
        # The episode opens (and its deadline starts) only once a slot is free, so queueing
        # behind other episodes never eats into a miner's time.
        async with self.query_slots:
            if self.stopped is not None:
                metrics.EPISODES.labels("not_sent").inc()
                return None
            started = datetime.now(UTC)
            wire_task_id = opaque_task_id()
            try:
                episode_id, token = self.deps.registry.open_episode(
                    wire_task_id,
                    miner.hotkey,
                    self.budgets,
                    context=self.world.context if self.world is not None else None,
                    shopper=self.world.shopper(task.task_id) if self.world is not None else None,
                )
            except EpisodeError:
                logger.warning(
                    "episode_not_opened round=%d uid=%d reason=registry_full", self.round_id, miner.uid
                )
                metrics.EPISODES.labels("not_sent").inc()
                return None
            try:
                request = self._request(task, wire_task_id, episode_id, token, started)
                reply = readdressed(await self.deps.client.query(miner, request), task)
            except DeadlinePassed:
                logger.warning("episode_not_sent round=%d uid=%d reason=overload", self.round_id, miner.uid)
                metrics.EPISODES.labels("not_sent").inc()
                return None
            finally:
                self.deps.registry.close_episode(episode_id)
        finished = datetime.now(UTC)
        log = self.deps.registry.log(episode_id)
        inference = self.deps.registry.inference_log(episode_id)
        self.admitted = self.admitted or reply.status_code == 200
        if reply.cause in HELD_CAUSES:
            await self._claimed(miner, reply)
            return Held(miner, task, reply, episode_id, started, finished, log, inference)
        return await self._finish(miner, task, reply, episode_id, started, finished, log, inference)

    async def settle(self, held: Held) -> Judgment:
        """Judge and store a held reply as the claimant's own fault (the round was not stopped)."""
        h = held
        return await self._finish(
            h.miner, h.task, h.reply, h.episode_id, h.started, h.finished, h.log, h.inference
        )

    async def _finish(
        self,
        miner: Neuron,
        task: Task,
        reply: MinerReply,
        episode_id: str,
        started: datetime,
        finished: datetime,
        log: Sequence[ToolLogEntry],
        inference: Sequence[InferenceExchange] = (),
    ) -> Judgment:
        judgment = await self._judge(task, reply, episode_id, log)
        # Only work that earns credit claims a share of it: a copy that is zero anyway claims none.
        work = _work(task, reply.trajectory, log, self.config.max_turns) if judgment.score > 0 else None
        if work is not None and (first := self.works.setdefault(work, episode_id)) != episode_id:
            # Observed, not decided here: whether the two share depends on how often their
            # hotkeys bring the same work (``judging.duplicates.shared_by``, at weights time).
            metrics.DUPLICATE_EPISODES.inc()
            logger.info(
                "episode_same_work round=%d uid=%d task=%s first=%s",
                self.round_id,
                miner.uid,
                task.task_id,
                first,
            )
        record = EpisodeRecord(
            episode_id=episode_id,
            round_id=self.round_id,
            task_id=task.task_id,
            miner_hotkey=miner.hotkey,
            miner_uid=miner.uid,
            validator_hotkey=self.deps.validator_hotkey,
            started_at=started,
            finished_at=finished,
            end=reply.end,
            world_id=self.world.world_id if self.world is not None else None,
            pack_hash=self.world.pack_hash if self.world is not None else None,
        )
        judgment = await self._store(record, reply.trajectory, log, judgment, task, work, inference)
        count_stored(judgment)
        logger.debug(
            "episode_done round=%d uid=%d task=%s end=%s score=%.3f",
            self.round_id,
            miner.uid,
            task.task_id,
            judgment.end,
            judgment.score,
        )
        return judgment

    def _request(
        self, task: Task, wire_task_id: str, episode_id: str, token: str, started: datetime
    ) -> TaskRequest:
        return TaskRequest(
            protocol_version=PROTOCOL_VERSION,
            episode_id=episode_id,
            task_id=wire_task_id,
            query=task.query,
            tool_server_url=self.deps.tool_server_url,
            episode_token=token,
            tools=self.tools,
            toolset=self.deps.judge_config.toolset,
            deadline=started + timedelta(seconds=self.config.episode_seconds),
            budgets=TaskBudgets(
                max_tool_calls=self.config.max_tool_calls,
                max_seconds=self.config.episode_seconds,
                max_response_bytes=self.config.max_response_bytes,
            ),
        )

    async def _judge(
        self, task: Task, reply: MinerReply, episode_id: str, log: Sequence[ToolLogEntry]
    ) -> Judgment:
        deps = self.deps
        started = time.monotonic()
        if reply.trajectory is None:
            judgment = judge_unanswered(
                task,
                episode_id=episode_id,
                miner_hotkey=reply.hotkey,
                end=reply.end,
                config=deps.judge_config,
            )
        else:
            at = self.world.at_answer(task, log) if self.world is not None else AtAnswer(self.products)
            async with self.judge_slots:
                judgment = await judge(
                    task,
                    reply.trajectory,
                    log=log,
                    against=at,
                    completer=deps.completer,
                    config=deps.judge_config,
                    executor=deps.judge_executor,
                )
        metrics.JUDGE_DURATION.observe(time.monotonic() - started)
        return judgment

    async def _store(
        self,
        record: EpisodeRecord,
        trajectory: Trajectory | None,
        log: Sequence[ToolLogEntry],
        judgment: Judgment,
        task: Task,
        work: str | None,
        inference: Sequence[InferenceExchange] = (),
    ) -> Judgment:
        """Store the judged episode with its work and its gateway exchanges; return the judgment stored.

        Content the miner sent that cannot be stored (``UnstorableContent``: a lone surrogate
        past every door) is the miner's fault, never a silent drop: the episode is stored as
        ``malformed`` with a zero judgment, its tool log kept with such text escaped.
        """
        try:
            await self._write(record, trajectory, log, judgment, task, work, inference)
        except UnstorableContent as exc:
            logger.warning(
                "episode_unstorable round=%d uid=%s task=%s error=%s",
                self.round_id,
                record.miner_uid,
                task.task_id,
                exc,
            )
            judgment = judge_unanswered(
                task,
                episode_id=record.episode_id,
                miner_hotkey=record.miner_hotkey,
                end="malformed",
                config=self.deps.judge_config,
                detail="its trajectory or tool log holds text that cannot be stored",
            )
            malformed = record.model_copy(update={"end": "malformed"})
            await self._write(malformed, None, repository.storable_log(log), judgment, task, None, inference)
        return judgment

    async def _write(
        self,
        record: EpisodeRecord,
        trajectory: Trajectory | None,
        log: Sequence[ToolLogEntry],
        judgment: Judgment,
        task: Task,
        work: str | None,
        inference: Sequence[InferenceExchange],
    ) -> None:
        def write() -> bool:
            with self.deps.sessions() as session:
                return repository.save_judged(
                    session,
                    episode=record,
                    trajectory=trajectory,
                    tool_log=log,
                    judgment=judgment,
                    task=task,
                    work=work,
                    inference_log=inference,
                )

        async def attempt() -> bool:
            started = time.monotonic()
            try:
                return await asyncio.to_thread(write)
            except UnstorableContent:
                raise  # the content, not the database: no retry, no database error
            except Exception:
                metrics.DB_ERRORS.labels("save_judged").inc()
                raise
            finally:
                metrics.DB_WRITE_DURATION.labels("save_judged").observe(time.monotonic() - started)

        await retry(attempt, what=f"save_judged episode={record.episode_id}", attempts=5)


def opaque_task_id() -> str:
    """The task id a miner sees: random per episode, so it says nothing of the task.

    The task's own id is a content hash over its gold: sent as is, it is an answer oracle (hash
    each catalog product's candidate gold items against it). The episode's token carries this id
    too; the validator alone knows which task it stands for.
    """
    return f"task-{uuid.uuid4().hex}"


def readdressed(reply: MinerReply, task: Task) -> MinerReply:
    """The reply with its trajectory under the task's own id (the client checked it echoed ours)."""
    if reply.trajectory is None:
        return reply
    return dataclasses.replace(
        reply, trajectory=reply.trajectory.model_copy(update={"task_id": task.task_id})
    )


def _work(
    task: Task, trajectory: Trajectory | None, log: Sequence[ToolLogEntry], max_turns: int
) -> str | None:
    """The work a reply did (``judging.duplicates``: logged results, answer); None past the turn cap.

    Past the cap the episode is a reject anyway; skipping it keeps the hash, computed on the
    event loop, cheap.
    """
    if trajectory is None or len(trajectory.messages) > max_turns:
        return None
    if sum(len(m.tool_calls or ()) for m in trajectory.messages) > max_turns:
        return None
    return work_hash(task.task_id, trajectory, log)
