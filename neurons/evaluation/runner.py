"""Run and judge evaluation samples: an agent against in-process tools, each call logged as the server would.

Every sample opens an episode in an :class:`arena.episode.EpisodeRegistry`, exactly as the
validator's tool server would: the same token, the same call and wall-time budgets, the same
``ToolLogEntry`` per call. So the judge gets a real tool log, and an evaluation scores a model
with the very code and semantics a miner meets, without HTTP in between.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens, InMemoryToolLog
from arena.errors import EpisodeError
from arena.index_types import ProductIndex
from arena.tools import ToolContext, tool_schemas
from arena.types import EpisodeEnd, Task, ToolResult
from judging.judge import JudgeConfig, judge, judge_unanswered
from judging.reasoning import Completer
from judging.types import Judgment
from judging.world import AtAnswer, WorldJudging
from neurons.errors import NeuronError
from neurons.evaluation.records import (
    JUDGMENTS_FILE,
    SAMPLES_FILE,
    JudgmentRecord,
    Key,
    RecordKey,
    RecordWriter,
    SampleRecord,
    SampleSummary,
    read_records,
)
from neurons.evaluation.settings import EvalSettings, sample_seed
from neurons.miner.agents.contract import Agent, AgentError, AgentOutput, AgentRequest, ToolCaller
from neurons.miner.agents.llm import LLMAgent, make_llm_agent
from neurons.miner.agents.loading import load_agent

logger = logging.getLogger(__name__)

EVAL_HOTKEY = "eval"
# Seconds past the agent's own deadline before the harness stops waiting (the validator's backstop).
BACKSTOP_GRACE_S = 5.0


class ModelUnavailable(NeuronError):
    """Every one of the first samples failed to reach the model: the server is down or misnamed."""


class SampleAgents:
    """The agent of each sample: for ``llm``, one HTTP client shared and the sampling seed varied."""

    def __init__(self, settings: EvalSettings) -> None:
        """Build the agent (raises ``AgentError`` for a bad spec or missing options)."""
        self._llm: LLMAgent | None = None
        self._agent: Agent | None = None
        if settings.agent == "llm":
            try:
                self._llm = make_llm_agent(
                    settings.model_url or "",
                    settings.model or "",
                    api_key=settings.api_key,
                    temperature=settings.temperature,
                    **settings.agent_options,
                )
            except TypeError as exc:  # an option the agent does not take, or one set by flags
                raise AgentError(f"the llm agent does not take these options: {exc}") from exc
        else:
            self._agent = load_agent(settings.agent, **settings.agent_options)

    @property
    def seeded(self) -> bool:
        """Whether the sampling seed varies per sample (only the llm agent sends one)."""
        return self._llm is not None

    def for_seed(self, seed: int) -> Agent:
        """The agent for one sample."""
        if self._llm is not None:
            return LLMAgent(self._llm.client, replace(self._llm.options, seed=seed))
        return cast(Agent, self._agent)

    async def aclose(self) -> None:
        """Close the model client."""
        if self._llm is not None:
            await self._llm.aclose()


def in_process_caller(registry: EpisodeRegistry, token: str, ctx: ToolContext) -> ToolCaller:
    """A ToolCaller that runs each call through the registry (budgets, tool log) in a worker thread."""

    async def call(
        name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        sent: str | dict[str, Any] = raw if raw is not None else arguments  # as the HTTP client sends it
        try:
            entry = await asyncio.to_thread(registry.call_tool, token, name, sent, call_id=call_id, ctx=ctx)
        except EpisodeError as exc:  # budget spent or episode closed: data for the agent, as over HTTP
            return ToolResult(content=f"tool server refused the call: {exc}", error=True)
        return ToolResult(content=entry.result, error=entry.status == "error")

    return call


@dataclass
class _Env:
    """What every sample of one invocation shares."""

    settings: EvalSettings
    index: ProductIndex
    agents: SampleAgents
    completer: Completer | None
    judge_config: JudgeConfig
    world: WorldJudging | None = None
    log: InMemoryToolLog = field(default_factory=InMemoryToolLog)
    registry: EpisodeRegistry = field(init=False)
    ctx: ToolContext = field(init=False)
    schemas: tuple[dict[str, Any], ...] = field(init=False)
    budgets: Budgets = field(init=False)

    def __post_init__(self) -> None:
        self.registry = EpisodeRegistry(EpisodeTokens(secrets.token_bytes(32)), self.log)
        self.ctx = ToolContext(index=self.index, toolset=self.settings.toolset)
        self.schemas = tuple(tool_schemas(self.settings.toolset))
        self.budgets = Budgets(
            max_calls=self.settings.max_tool_calls, max_seconds=self.settings.task_timeout_s
        )


async def run_agent(
    agent: Agent, request: AgentRequest, caller: ToolCaller
) -> tuple[AgentOutput | None, str, EpisodeEnd, str | None]:
    """Run one agent under its deadline: (its output or None, why it stopped, the end, the error if any).

    An agent past its deadline (plus ``BACKSTOP_GRACE_S``) is a timeout and an agent that raises is
    the agent's error: both data, as a miner's are.
    """
    try:
        # The agent is asked to stop by deadline_s; this is the backstop for one that does not.
        async with asyncio.timeout(request.deadline_s + BACKSTOP_GRACE_S):
            output = await agent(request, caller)
    except TimeoutError:
        return None, "deadline", "timeout", "the agent did not return before the deadline"
    except Exception as exc:  # an agent's crash is the agent's fault: data, as a miner error is
        logger.warning("eval_agent_error task=%s error=%s", request.task_id, type(exc).__name__)
        return None, "agent_error", "miner_error", f"{type(exc).__name__}: {exc}"[:500]
    return output, output.stop, "completed", None


async def run_sample(env: _Env, task: Task, sample: int) -> SampleRecord:
    """Run one sample of one task and return its record (never raises for agent or model faults)."""
    seed = sample_seed(env.settings.seed, task.task_id, sample)
    shopper = env.world.shopper(task.task_id, env.settings.toolset) if env.world is not None else None
    episode_id, token = env.registry.open_episode(task.task_id, EVAL_HOTKEY, env.budgets, shopper=shopper)
    request = AgentRequest(
        task_id=task.task_id,
        episode_id=episode_id,
        query=task.query,
        tools=env.schemas,
        max_steps=env.settings.max_steps,
        deadline_s=env.settings.task_timeout_s,
    )
    started = time.monotonic()
    caller = in_process_caller(env.registry, token, env.ctx)
    try:
        output, stop, end, error = await run_agent(env.agents.for_seed(seed), request, caller)
    finally:
        env.registry.close_episode(episode_id)
    log = env.log.entries(episode_id)
    env.log.discard(episode_id)
    return SampleRecord(
        task_id=task.task_id,
        sample=sample,
        seed=seed if env.agents.seeded else None,
        episode_id=episode_id,
        intent=task.intent,
        stop=stop,
        end=end,
        error=error,
        elapsed_s=round(time.monotonic() - started, 3),
        finished_at=datetime.now(UTC),
        usage=output.usage if output is not None else None,
        tool_calls=len(log),
        trajectory=output.trajectory(request, EVAL_HOTKEY) if output is not None else None,
        log=tuple(log),
    )


async def judge_sample(
    task: Task,
    record: SampleRecord,
    *,
    index: ProductIndex,
    completer: Completer | None,
    config: JudgeConfig,
    world: WorldJudging | None = None,
) -> Judgment:
    """Judge one sample with the validator's judge and the sample's own tool log.

    On a world (``world``), the answer is judged against the world at its version, and a task
    with a hidden shopper (tool set arena-3) with its profile (``judging.world.WorldJudging``).
    """
    if record.trajectory is None:
        end = cast(EpisodeEnd, record.end if record.end != "completed" else "miner_error")
        return judge_unanswered(
            task, episode_id=record.episode_id, miner_hotkey=EVAL_HOTKEY, end=end, config=config
        )
    at = world.against(task, record.log, config.toolset) if world is not None else AtAnswer(index.products)
    return await judge(
        task,
        record.trajectory,
        log=record.log,
        against=at,
        completer=completer,
        config=config,
    )


@dataclass
class _Watchdog:
    """Stops a run whose first samples all failed to reach the model (a dead or misnamed server)."""

    threshold: int
    seen: int = 0
    unreachable: int = 0

    def observe(self, record: SampleRecord) -> None:
        if self.seen >= self.threshold:
            return
        self.seen += 1
        if record.stop == "model_error" and record.usage is None:
            self.unreachable += 1
        if self.seen == self.threshold and self.unreachable == self.threshold:
            raise ModelUnavailable(
                f"the first {self.threshold} samples all failed to reach the model; "
                "check --model-url and --model, then rerun with --retry-errors to resume"
            )


@dataclass(frozen=True)
class RunCounts:
    """What one invocation did: samples run, samples only judged, samples already done."""

    ran: int
    judged: int
    skipped: int


async def run_evaluation(
    tasks: Sequence[Task],
    *,
    run_dir: Path,
    index: ProductIndex,
    settings: EvalSettings,
    completer: Completer | None,
    on_sample: Callable[[], None] | None = None,
    world: WorldJudging | None = None,
) -> RunCounts:
    """Run every missing sample of ``tasks`` (k each), judge it, and append both records.

    On a world pack (``world``: ``index`` is then its overlay), every call is answered at the
    world version it sees and every answer judged at its own (``judging.world``).

    Samples already in ``samples.jsonl`` are not run again (with ``retry_errors``, those that
    ended in a model error are); samples recorded but not judged (a kill between the two
    writes) are judged from their record.

    Raises:
        ModelUnavailable: the first samples of this invocation all failed to reach the model.
    """
    by_id = {task.task_id: task for task in tasks}
    # Summaries only (no trajectories or logs): a large run's records need not fit in memory.
    done = read_records(run_dir / SAMPLES_FILE, SampleSummary)
    judged = read_records(run_dir / JUDGMENTS_FILE, RecordKey)

    def wanted(key: Key) -> bool:
        record = done.get(key)
        return record is None or (settings.retry_errors and record.stop == "model_error")

    keys = [(task.task_id, j) for task in tasks for j in range(settings.k)]
    todo = [key for key in keys if wanted(key)]
    unjudged = [key for key in keys if not wanted(key) and key not in judged]
    # Samples recorded but not judged (a kill between the two writes) are judged from their record.
    stored = read_records(run_dir / SAMPLES_FILE, SampleRecord) if unjudged else {}
    judge_config = JudgeConfig(toolset=settings.toolset, catalog_version=index.catalog_version)
    agents = SampleAgents(settings)
    env = _Env(settings, index, agents, completer, judge_config, world)
    watchdog = (
        _Watchdog(threshold=min(len(todo), max(3, settings.concurrency))) if settings.agent == "llm" else None
    )
    logger.info("eval_start samples=%d to_run=%d to_judge=%d", len(keys), len(todo), len(unjudged))
    try:
        with (
            RecordWriter(run_dir / SAMPLES_FILE) as samples,
            RecordWriter(run_dir / JUDGMENTS_FILE) as verdicts,
        ):
            for key in unjudged:
                record = stored[key]
                judgment = await judge_sample(
                    by_id[key[0]], record, index=index, completer=completer, config=judge_config, world=world
                )
                verdicts.append(JudgmentRecord(task_id=key[0], sample=key[1], judgment=judgment))
            pending = iter(todo)

            async def worker() -> None:
                for task_id, sample in pending:
                    record = await run_sample(env, by_id[task_id], sample)
                    samples.append(record)
                    if watchdog is not None:
                        watchdog.observe(record)
                    judgment = await judge_sample(
                        by_id[task_id],
                        record,
                        index=index,
                        completer=completer,
                        config=judge_config,
                        world=world,
                    )
                    verdicts.append(JudgmentRecord(task_id=task_id, sample=sample, judgment=judgment))
                    if on_sample is not None:
                        on_sample()

            try:
                async with asyncio.TaskGroup() as group:
                    for _ in range(max(1, settings.concurrency)):
                        group.create_task(worker())
            except ExceptionGroup as failure:
                raise failure.exceptions[0] from None
    finally:
        await agents.aclose()
    logger.info("eval_done ran=%d judged=%d skipped=%d", len(todo), len(unjudged), len(keys) - len(todo))
    return RunCounts(ran=len(todo), judged=len(unjudged), skipped=len(keys) - len(todo) - len(unjudged))
