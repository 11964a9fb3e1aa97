"""Environment sessions over compiled worlds: reset, step (a result and a turn reward), state, the score.

A session is one validator episode run step by step. :meth:`Environment.reset` opens it in an
``arena.episode.EpisodeRegistry`` exactly as a validator round opens a miner's episode (a token,
call and wall-time budgets, the world's overlay as the tools' context, a fresh shopper for a
task with a hidden profile); :meth:`Environment.step` runs one call through that registry (so
the call is logged, at the world version its ``seq`` sees, as the tool server logs it) and
appends the assistant turn and the tool message to the session's transcript. The episode ends
when the agent calls ``terminate``, when its step budget or wall time runs out, or when the
caller finishes it (:meth:`Environment.finish`, optionally with the agent's own transcript, as a
miner returns its trajectory). Then the validator's judge scores it against the world at the
answer's version, and that score is the final reward (``neurons.environment.rewards`` has the
turn rewards and why the return cannot exceed it).

Faults of the agent are data: an unknown tool, bad arguments, a call after the end or past the
budget come back as tool errors in the observation. ``EnvError`` is ours or the caller's: an
unknown task or session, or more sessions than ``max_sessions``.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens, TokenClaims
from arena.errors import EpisodeError
from arena.tools import tool_schemas
from arena.tools.tool import error_result
from arena.types import FunctionCall, Message, Task, ToolCall, ToolLogEntry, Trajectory
from curation.conversion.convert import run_now
from judging.context import JudgingContext
from judging.judge import judge
from judging.types import Judgment
from neurons import metrics
from neurons.environment.errors import EnvFull, UnknownSession
from neurons.environment.rewards import Progress, TurnRewardConfig, progress, settlement, turn_reward
from neurons.environment.tasks import EnvTasks
from neurons.environment.types import Action, Final, Reset, SessionEnd, SessionState, StepOutcome

logger = logging.getLogger(__name__)

ENV_HOTKEY = "env"  # the episodes' miner hotkey (the registry and the judgment name one)
TERMINATE = "terminate"


@dataclass(frozen=True)
class EnvConfig:
    """How sessions run: the step and wall-time budgets, how many at once, the turn rewards.

    Attributes:
        max_steps: tool calls per session; the call that spends the last one ends the episode.
        max_seconds: wall time per session from its reset; a call after it ends the episode.
        max_sessions: sessions open at once; a reset beyond it is refused (``EnvFull``).
        keep_finished: finished sessions kept for ``state`` and ``log`` before the oldest goes.
        rewards: the turn-reward weights, or ``TurnRewardConfig(enabled=False)``.
        hotkey: the miner hotkey the episodes are judged under.
    """

    max_steps: int = 30
    max_seconds: float = 900.0
    max_sessions: int = 64
    keep_finished: int = 1024
    rewards: TurnRewardConfig = field(default_factory=TurnRewardConfig)
    hotkey: str = ENV_HOTKEY

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.max_sessions < 1 or self.keep_finished < 0 or self.max_seconds <= 0:
            raise ValueError(f"budgets and bounds must be positive: {self}")


class _SessionLogs:
    """The registry's log store: sessions keep the entries the registry returns, so it keeps none."""

    def append(self, entry: ToolLogEntry) -> None:
        """Nothing to do: the session appends the same entry to its own log."""
        del entry

    def entries(self, episode_id: str) -> list[ToolLogEntry]:
        """Read the session's log instead (``Environment.log``)."""
        del episode_id
        return []


@dataclass
class _Session:
    """One open or finished session (guarded by its own lock)."""

    session_id: str
    task: Task
    claims: TokenClaims
    prompt: tuple[Message, ...]
    opened: float
    attested: bool = False
    turns: list[Message] = field(default_factory=list)
    entries: list[ToolLogEntry] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    advanced: float = 0.0
    progress: Progress = field(default_factory=Progress)
    end: SessionEnd | None = None
    judgment: Judgment | None = None
    final: Final | None = None
    returned: bool = False  # judged on the agent's own transcript
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def done(self) -> bool:
        return self.end is not None


class Environment:
    """Sessions over one ``EnvTasks``: thread-safe, bounded, each step logged as the tool server logs it."""

    def __init__(
        self,
        tasks: EnvTasks,
        config: EnvConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Create the environment.

        Args:
            tasks: the tasks, the tools' world and what episodes are judged against.
            config: budgets, bounds and turn-reward weights (``EnvConfig`` defaults when None).
            clock: unix time in seconds (the wall-time budgets; injectable for tests).
        """
        self.tasks = tasks
        self.config = config or EnvConfig()
        self.tools = tuple(tool_schemas(tasks.toolset))
        # Every token is ours and checked by lookup; the secret only has to be unguessable. Each
        # session keeps its own log (the entries the registry returns); the registry keeps none.
        self._clock = clock
        self._registry = EpisodeRegistry(
            EpisodeTokens(secrets.token_bytes(32)),
            _SessionLogs(),
            clock=clock,
            max_episodes=self.config.max_sessions,
        )
        self._budgets = Budgets(max_calls=self.config.max_steps, max_seconds=self.config.max_seconds)
        self._lock = threading.Lock()
        self._open: dict[str, _Session] = {}
        self._finished: OrderedDict[str, _Session] = OrderedDict()

    # ------------------------------------------------------------------ reset

    def reset(
        self,
        *,
        task_id: str | None = None,
        seed: int | None = None,
        system: str | None = None,
        attested: bool = False,
    ) -> Reset:
        """Open a session on a task (by id, else by seed, else at random) and return the request and tools.

        ``attested``: the caller's own harness runs the model and sends exactly the calls it
        emitted (the rollout command does, for a model policy), so the log marks them as an
        inference gateway's nonces would; never offered over HTTP.

        Raises:
            UnknownTask: ``task_id`` is not one of the tasks.
            EnvFull: ``max_sessions`` sessions are open.
        """
        task = self.tasks.pick(task_id=task_id, seed=seed)
        self._expire_idle()
        with self._lock:
            if len(self._open) >= self.config.max_sessions:
                raise EnvFull(f"{self.config.max_sessions} sessions are open; finish or close one first")
            session_id, token = self._registry.open_episode(
                task.task_id,
                self.config.hotkey,
                self._budgets,
                context=self.tasks.context,
                shopper=self.tasks.shopper(task.task_id),
            )
            claims = self._registry.authorize(token)
            prompt = (
                *((Message(role="system", content=system),) if system is not None else ()),
                Message(role="user", content=task.query),
            )
            self._open[session_id] = _Session(
                session_id, task, claims, prompt, self._clock(), attested=attested
            )
        logger.debug("env_reset session=%s task=%s", session_id, task.task_id)
        return Reset(
            session_id=session_id,
            task_id=task.task_id,
            request=task.query,
            tools=self.tools,
            toolset=self.tasks.toolset,
            max_steps=self.config.max_steps,
            messages=tuple(m.model_dump(mode="json", exclude_none=True) for m in prompt),
            world_id=self.tasks.world_id,
            pack_hash=self.tasks.pack_hash,
        )

    # ------------------------------------------------------------------ step

    def step(self, session_id: str, action: Action) -> StepOutcome:
        """Run one tool call in the session; return its result, the turn's reward, and the end if it came.

        Raises:
            UnknownSession: the session is not open here (never was, or closed and forgotten).
        """
        session = self._get(session_id)
        with session.lock:
            if session.done:
                metrics.ENV_STEPS.labels("refused").inc()
                refused = error_result(f"the episode has ended ({session.end}); reset for another")
                return StepOutcome(
                    session_id=session_id, step=-1, tool=action.tool, result=refused.content,
                    error=True, reward=0.0, done=True, final=session.final,
                )  # fmt: skip
            call_id = self._call_id(session, action.call_id)
            try:
                entry = self._registry.call_authorized(
                    session.claims, action.tool, action.arguments, call_id=call_id, ctx=self.tasks.context
                )
            except EpisodeError as exc:
                # Past the wall time (the step budget ends the episode on its last call, below).
                return self._refused_at_end(session, action, str(exc))
            entry = self._attest(session, entry)
            metrics.ENV_STEPS.labels(entry.status).inc()
            session.entries.append(entry)
            session.turns += [self._assistant_turn(action, call_id), self._tool_turn(entry)]
            reward, parts = self._turn_reward(session)
            end: SessionEnd | None = None
            if action.tool == TERMINATE and entry.status == "ok":
                end = "terminated"
            elif len(session.entries) >= self.config.max_steps:
                end = "max_steps"
            final = self._finish(session, end, reward) if end is not None else None
            if final is None:
                session.rewards.append(reward)
            return StepOutcome(
                session_id=session_id,
                step=entry.seq,
                tool=action.tool,
                result=entry.result,
                error=entry.status == "error",
                reward=session.rewards[-1],
                reward_parts=parts,
                done=final is not None,
                final=final,
            )

    def finish(self, session_id: str, messages: Sequence[Message] | None = None) -> Final:
        """End the session now (the agent returned) and return its final reward.

        ``messages``: the agent's own transcript, judged against the log in place of the
        environment's, as the validator judges what a miner returns; None: the environment's.
        Given once the episode has ended (the agent called ``terminate``, then returned), the
        episode is judged again on it, and the last turn's reward moves by the score's change;
        after that, and without ``messages``, a finished session's final reward is returned as is.

        Raises:
            UnknownSession: the session is not open here.
        """
        session = self._get(session_id)
        with session.lock:
            if session.final is None:
                return self._finish(session, "finished", 0.0, messages)
            if messages is None or session.returned:
                return session.final
            return self._returned(session, messages)

    def _refused_at_end(self, session: _Session, action: Action, why: str) -> StepOutcome:
        """A call the registry refused (wall time spent): the episode ends, the call is a tool error."""
        refused = error_result(f"tool server refused the call: {why}")
        metrics.ENV_STEPS.labels("refused").inc()
        final = self._finish(session, "timeout", 0.0)
        return StepOutcome(
            session_id=session.session_id, step=-1, tool=action.tool, result=refused.content,
            error=True, reward=session.rewards[-1], done=True, final=final,
        )  # fmt: skip

    # ------------------------------------------------------------------ reading

    def state(self, session_id: str) -> SessionState:
        """The session as it stands (open or finished).

        Raises:
            UnknownSession: the session is not here.
        """
        session = self._get(session_id)
        with session.lock:
            return SessionState(
                session_id=session_id,
                task_id=session.task.task_id,
                steps=len(session.entries),
                max_steps=self.config.max_steps,
                rewards=tuple(session.rewards),
                total_reward=round(sum(session.rewards), 9),
                done=session.done,
                end=session.end,
                final=session.final,
                world_id=self.tasks.world_id,
            )

    def log(self, session_id: str) -> list[ToolLogEntry]:
        """The session's tool log, in ``seq`` order (what its episode is judged against)."""
        session = self._get(session_id)
        with session.lock:
            return list(session.entries)

    def trajectory(self, session_id: str) -> Trajectory:
        """The environment's transcript: the prompt, then each step's assistant turn and its result."""
        session = self._get(session_id)
        with session.lock:
            return self._transcript(session)

    def judgment(self, session_id: str) -> Judgment | None:
        """The finished session's Judgment (None while it is open)."""
        session = self._get(session_id)
        with session.lock:
            return session.judgment

    def task(self, session_id: str) -> Task:
        """The session's task."""
        return self._get(session_id).task

    def close(self, session_id: str) -> None:
        """Forget a session (finishing it first if it is open: its budget is released)."""
        self.finish(session_id)
        with self._lock:
            self._finished.pop(session_id, None)

    @property
    def open_sessions(self) -> int:
        """How many sessions are open now."""
        with self._lock:
            return len(self._open)

    # ------------------------------------------------------------------ internals

    def _get(self, session_id: str) -> _Session:
        with self._lock:
            session = self._open.get(session_id) or self._finished.get(session_id)
        if session is None:
            raise UnknownSession(f"no session {session_id[:80]!r} here (never opened, closed or expired)")
        return session

    def _expire_idle(self) -> None:
        """End the open sessions whose wall time is spent (an abandoned session frees its slot)."""
        cutoff = self._clock() - self.config.max_seconds
        with self._lock:
            stale = [s for s in self._open.values() if s.opened < cutoff]
        for session in stale:
            with session.lock:
                if not session.done:
                    self._finish(session, "timeout", 0.0)

    def _call_id(self, session: _Session, wanted: str | None) -> str:
        """The call's id: the agent's, unless it is missing or already used in this session."""
        used = {e.call_id for e in session.entries}
        return wanted if wanted and wanted not in used else f"call_{uuid.uuid4().hex[:24]}"

    def _attest(self, session: _Session, entry: ToolLogEntry) -> ToolLogEntry:
        if not session.attested:
            return entry
        return entry.model_copy(update={"nonce_status": "valid"})

    @staticmethod
    def _assistant_turn(action: Action, call_id: str) -> Message:
        arguments = action.arguments
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        call = ToolCall(id=call_id, function=FunctionCall(name=action.tool, arguments=text))
        return Message(
            role="assistant", content=action.content or "", reasoning_content=action.reasoning,
            tool_calls=(call,),
        )  # fmt: skip

    @staticmethod
    def _tool_turn(entry: ToolLogEntry) -> Message:
        return Message(role="tool", tool_call_id=entry.call_id, content=entry.result)

    def _transcript(self, session: _Session, messages: Sequence[Message] | None = None) -> Trajectory:
        return Trajectory(
            task_id=session.task.task_id,
            episode_id=session.session_id,
            miner_hotkey=self.config.hotkey,
            messages=tuple(messages) if messages else (*session.prompt, *session.turns),
        )

    def _context(self, session: _Session, trajectory: Trajectory) -> JudgingContext:
        at = self.tasks.against(session.task, session.entries)
        return JudgingContext(
            task=session.task,
            trajectory=trajectory,
            products=at.products,
            log=tuple(session.entries),
            config=self.tasks.judge_config,
            profile=at.profile,
            truth=at.truth,
            stock=at.stock,
        )

    def _turn_reward(self, session: _Session) -> tuple[float, dict[str, float]]:
        """The step's turn reward from the judge's checks on the episode so far (0 when they are off)."""
        if not self.config.rewards.enabled:
            return 0.0, {}
        now = progress(self._context(session, self._transcript(session)), session.progress)
        turn = turn_reward(session.progress, now, self.config.rewards)
        session.progress = now
        session.advanced += turn.advance
        return turn.value, turn.parts

    def _judge(self, session: _Session, messages: Sequence[Message] | None) -> Judgment:
        """The validator's Judgment of the episode: its transcript (or the agent's) against its log."""
        trajectory = self._transcript(session, messages)
        log = tuple(session.entries)
        against = self.tasks.against(session.task, log)
        config = self.tasks.judge_config
        # judge() as a validator without a reasoning judge calls it (reasoning unscored: neutral in
        # the score); with no completer it still reads the injection scan.
        # Without a completer the judge never waits: it runs in place, from sync or async callers.
        return run_now(
            lambda: judge(session.task, trajectory, log=log, against=against, completer=None, config=config)
        )

    def _settle(self, session: _Session, end: SessionEnd, judgment: Judgment) -> Final:
        session.end, session.judgment = end, judgment
        final = session.final = Final(
            score=judgment.score,
            success=judgment.success,
            total_reward=round(sum(session.rewards), 9),
            end=end,
            axis=judgment.axis,
            hallucinated_product_ids=judgment.hallucinated_product_ids,
            judgment_hash=judgment.content_hash,
        )
        return final

    def _returned(self, session: _Session, messages: Sequence[Message]) -> Final:
        """The agent returned its transcript after the episode ended: judge that, and move the last reward."""
        judgment = self._judge(session, messages)
        before = session.judgment.score if session.judgment is not None else 0.0
        session.rewards[-1] = round(session.rewards[-1] + judgment.score - before, 9)
        session.returned = True
        return self._settle(session, session.end or "finished", judgment)

    def _finish(
        self, session: _Session, end: SessionEnd, reward: float, messages: Sequence[Message] | None = None
    ) -> Final:
        """Judge the episode and settle the advances: the last turn's reward is ``reward`` plus the rest."""
        self._registry.forget(session.session_id)
        judgment = self._judge(session, messages)
        session.returned = messages is not None
        session.rewards.append(
            round(reward + settlement(judgment.score, session.advanced, self.config.rewards), 9)
        )
        metrics.ENV_EPISODES.labels(end).inc()
        final = self._settle(session, end, judgment)
        with self._lock:
            self._open.pop(session.session_id, None)
            self._finished[session.session_id] = session
            while len(self._finished) > self.config.keep_finished:
                self._finished.popitem(last=False)
        logger.debug(
            "env_done session=%s task=%s end=%s score=%.3f return=%.3f",
            session.session_id, session.task.task_id, end, judgment.score, final.total_reward,
        )  # fmt: skip
        return final
