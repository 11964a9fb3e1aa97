"""Rollouts become data: k episodes per task of one policy in the environment, judged, stored, curated.

``arena env rollouts`` runs a policy (an agent: the reference ``llm`` agent over an
OpenAI-compatible endpoint or the local model's GGUF, ``scripted``, or ``module:function``)
through the miner's agent contract (``neurons.miner.agents.contract``) against environment
sessions: every tool call is a ``step``, so it is logged at the world version it sees and
answered by the world's shopper, and the agent's own transcript is judged against that log as
the validator judges what a miner returns. Each judged episode is stored as a validator stores
one (``storage.repository.save_judged``) in ``<out>/rollouts.db``, then the database goes
through curation's funnel and :func:`curation.rollouts.export_rollouts` writes its successes as
SFT rows and all kept traces as KTO rows, ``origin: rollout``.

Where the policy is a model that our own harness calls (an endpoint, a GGUF), the environment
marks every logged call as attested (``nonce_status: valid``): the harness sends exactly the
calls the model emitted (what the validator's inference gateway, ``arena.gateway``, proves for
a miner), so the axis is ``A-attested``. A ``module:function`` or ``scripted`` policy is Python
that may choose calls itself: its axis is inferred from the trajectory, as for any miner.

A run resumes: ``samples.jsonl`` lists each finished (task, sample); a rerun plays only the rest,
and refuses a run directory of another policy or another k.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.types import EpisodeEnd, Frozen, Task, ToolResult
from judging.judge import judge_unanswered
from neurons.environment.errors import EnvError
from neurons.environment.session import Environment
from neurons.environment.types import Action
from neurons.evaluation.runner import run_agent
from neurons.evaluation.settings import sample_seed
from neurons.miner.agents.contract import Agent, AgentRequest, ToolCaller
from neurons.miner.agents.llm import LLMAgent, make_llm_agent
from neurons.miner.agents.loading import load_agent
from storage.records import EpisodeRecord
from storage.repository import save_judged

logger = logging.getLogger(__name__)

ROLLOUT_HOTKEY = "rollout"  # the episodes' miner hotkey (the environment's, for a rollout run)
ENV_VALIDATOR = "env"
SAMPLES_FILE = "samples.jsonl"
RUN_FILE = "run.json"
DB_FILE = "rollouts.db"


class RolloutMismatch(EnvError):
    """The run directory holds rollouts of another policy, weights or k: use a fresh one."""


@dataclass(frozen=True)
class Policy:
    """What plays the episodes: its name and weights' hash (the rows' provenance), and its agents.

    Attributes:
        name: the policy as rows record it (a model name, a GGUF file name, ``module:function``).
        weights_hash: ``sha256:<hex>`` of its weights (a GGUF file; a module's source), or None.
        attested: our harness calls the model and runs exactly its calls (the log says so).
        agent: the agent of one sample, from its sampling seed.
    """

    name: str
    weights_hash: str | None
    attested: bool
    agent: Callable[[int], Agent]


class RolloutRecord(Frozen):
    """One finished sample (a line of ``samples.jsonl``)."""

    task_id: str
    sample: int
    episode_id: str
    score: float
    success: bool
    axis: str
    end: EpisodeEnd
    stop: str


def file_hash(path: Path) -> str:
    """``sha256:<hex>`` of a file, read in blocks (a GGUF is hundreds of megabytes)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def module_hash(spec: str) -> str | None:
    """The hash of the source file of ``module:function``'s module (a Python policy's weights), or None."""
    found = importlib.util.find_spec(spec.partition(":")[0])
    origin = found.origin if found is not None else None
    return file_hash(Path(origin)) if origin and Path(origin).is_file() else None


def agent_policy(spec: str, options: dict[str, Any]) -> Policy:
    """A Python policy: ``scripted`` or ``module:function`` (not attested: Python may choose its calls)."""
    agent = load_agent(spec, **options)
    module = "neurons.miner.agents.scripted" if spec == "scripted" else spec
    return Policy(name=spec, weights_hash=module_hash(module), attested=False, agent=lambda seed: agent)


@asynccontextmanager
async def model_policy(
    base_url: str,
    model: str,
    *,
    name: str | None = None,
    weights_hash: str | None = None,
    temperature: float = 0.7,
    options: dict[str, Any] | None = None,
) -> AsyncIterator[Policy]:
    """The reference LLM agent over an OpenAI-compatible endpoint, a sampling seed per sample (attested)."""
    llm = make_llm_agent(base_url, model, temperature=temperature, **(options or {}))
    try:
        yield Policy(
            name=name or model,
            weights_hash=weights_hash,
            attested=True,
            agent=lambda seed: LLMAgent(llm.client, replace(llm.options, seed=seed)),
        )
    finally:
        await llm.aclose()


@asynccontextmanager
async def gguf_policy(
    path: Path, *, temperature: float = 0.7, threads: int | None = None
) -> AsyncIterator[Policy]:
    """A GGUF served by the local server with the learning proof's chat handler and agent options."""
    from neurons.demo.local_llm import LocalLLM
    from neurons.learning.pipeline import AGENT_OPTIONS, CHAT_FORMAT

    weights = await asyncio.to_thread(file_hash, path)
    with LocalLLM(model=path, chat_format=CHAT_FORMAT, threads=threads) as llm:
        async with model_policy(
            llm.base_url, llm.model, name=path.name, weights_hash=weights, temperature=temperature,
            options=dict(AGENT_OPTIONS),
        ) as policy:  # fmt: skip
            yield policy


def env_caller(env: Environment, session_id: str) -> ToolCaller:
    """The agent's tool caller: each call one ``step`` of the session (in a worker thread)."""

    async def call(
        name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        # The model's own text where there is one, as the tool server receives it.
        action = Action(tool=name, arguments=raw if raw is not None else arguments, call_id=call_id or None)
        outcome = await asyncio.to_thread(env.step, session_id, action)
        return ToolResult(content=outcome.result, error=outcome.error)

    return call


@dataclass
class RolloutRun:
    """One rollout run: the environment, the policy, k, and where it writes (``<out>``)."""

    env: Environment
    policy: Policy
    k: int
    out: Path
    sessions: sessionmaker[Session]
    max_steps: int = 20
    deadline_s: float = 300.0
    seed: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def claim(self) -> None:
        """Write (or check) ``run.json``: a run directory holds one policy's rollouts at one k.

        Raises:
            RolloutMismatch: the directory holds another policy's, weights' or k's rollouts.
        """
        identity = {"policy": self.policy.name, "weights_hash": self.policy.weights_hash, "k": self.k}
        path = self.out / RUN_FILE
        if path.is_file():
            found = json.loads(path.read_text(encoding="utf-8"))
            if {key: found.get(key) for key in identity} != identity:
                raise RolloutMismatch(
                    f"{self.out} holds rollouts of {found}, not {identity}: use a fresh --out"
                )
            return
        self.out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(identity, indent=1) + "\n", encoding="utf-8")

    def done(self) -> dict[tuple[str, int], RolloutRecord]:
        """The samples finished by earlier invocations."""
        path = self.out / SAMPLES_FILE
        if not path.is_file():
            return {}
        records = (RolloutRecord.model_validate_json(line) for line in path.read_text().splitlines() if line)
        return {(r.task_id, r.sample): r for r in records}

    async def play(self, task: Task, sample: int) -> RolloutRecord:
        """One episode of ``task``: the policy's agent against a session, judged and stored."""
        env = self.env
        reset = await asyncio.to_thread(env.reset, task_id=task.task_id, attested=self.policy.attested)
        started = datetime.now(UTC)
        request = AgentRequest(
            task_id=task.task_id,
            episode_id=reset.session_id,
            query=task.query,
            tools=reset.tools,
            max_steps=self.max_steps,
            deadline_s=self.deadline_s,
        )
        agent = self.policy.agent(sample_seed(self.seed, task.task_id, sample))
        output, stop, end, error = await run_agent(agent, request, env_caller(env, reset.session_id))
        messages = output.messages if output is not None else None
        await asyncio.to_thread(env.finish, reset.session_id, messages)
        judgment = env.judgment(reset.session_id)
        if output is None or judgment is None:
            judgment = judge_unanswered(
                task, episode_id=reset.session_id, miner_hotkey=ROLLOUT_HOTKEY, end=end,
                config=env.tasks.judge_config, detail=error or "",
            )  # fmt: skip
        record = EpisodeRecord(
            episode_id=reset.session_id,
            task_id=task.task_id,
            miner_hotkey=ROLLOUT_HOTKEY,
            validator_hotkey=ENV_VALIDATOR,
            started_at=started,
            finished_at=datetime.now(UTC),
            end=end,
            world_id=env.tasks.world_id,
            pack_hash=env.tasks.pack_hash,
        )
        trajectory = output.trajectory(request, ROLLOUT_HOTKEY) if output is not None else None
        log = env.log(reset.session_id)

        def store() -> None:
            with self.sessions() as session:
                save_judged(
                    session, episode=record, trajectory=trajectory, tool_log=log, judgment=judgment, task=task
                )

        await asyncio.to_thread(store)
        env.close(reset.session_id)
        return RolloutRecord(
            task_id=task.task_id, sample=sample, episode_id=reset.session_id, score=judgment.score,
            success=judgment.success, axis=judgment.axis, end=end, stop=stop,
        )  # fmt: skip

    async def run(self, tasks: Sequence[Task], *, concurrency: int = 1) -> list[RolloutRecord]:
        """Play every (task, sample) not finished yet, ``concurrency`` at a time; every record, in order."""
        self.claim()
        done = self.done()
        todo = iter([(t, j) for t in tasks for j in range(self.k) if (t.task_id, j) not in done])

        async def worker() -> None:
            for task, sample in todo:
                record = await self.play(task, sample)
                async with self.lock:
                    with (self.out / SAMPLES_FILE).open("a", encoding="utf-8") as handle:
                        handle.write(record.model_dump_json() + "\n")
                    done[(task.task_id, sample)] = record
                logger.info(
                    "rollout task=%s sample=%d score=%.3f success=%s axis=%s",
                    task.task_id, sample, record.score, record.success, record.axis,
                )  # fmt: skip

        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, concurrency)):
                group.create_task(worker())
        return [done[(t.task_id, j)] for t in tasks for j in range(self.k) if (t.task_id, j) in done]


def summary(records: Sequence[RolloutRecord], k: int) -> dict[str, Any]:
    """What a run sampled: episodes, successes, pass@1 (mean success) and pass@k over its tasks."""
    by_task: dict[str, list[bool]] = {}
    for record in records:
        by_task.setdefault(record.task_id, []).append(record.success)
    return {
        "episodes": len(records),
        "tasks": len(by_task),
        "k": k,
        "successes": sum(r.success for r in records),
        "pass@1": round(sum(r.success for r in records) / len(records), 6) if records else None,
        f"pass@{k}": round(sum(any(s) for s in by_task.values()) / len(by_task), 6) if by_task else None,
        "mean_score": round(sum(r.score for r in records) / len(records), 6) if records else None,
    }


def open_store(out: Path) -> tuple[Any, sessionmaker[Session]]:
    """The run's database (``<out>/rollouts.db``, the validator's schema, migrated): engine and sessions."""
    from storage.db import make_engine, make_sessionmaker, upgrade

    out.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite:///{out / DB_FILE}")
    upgrade(engine)
    return engine, make_sessionmaker(engine)


def export_run(
    sessions: sessionmaker[Session], out: Path, policy: Policy, k: int, *, eval_share: float = 0.1
) -> dict[str, Any]:
    """Curate the run's database and write its rollout export to ``<out>/export``; return the funnel.

    Caps keep up to k traces per task (all a run samples); nothing is converted (a rollout is
    native). An attested policy's axis is proven per episode, so the miner-level verdict (which
    reads templates across one miner's trajectories) is off for it.

    Raises:
        SplitLeakError: the task audit found a leak across the split (nothing is written).
    """
    from curation.config import CurationConfig
    from curation.curate import curate
    from curation.rollouts import RolloutSource, export_rollouts
    from curation.workspace import Workspace

    sample = 0 if policy.attested else CurationConfig.model_fields["miner_axis_sample"].default
    config = CurationConfig(
        cap_per_task_miner=k, cap_per_task=k, eval_share=eval_share, convert_axes=(), miner_axis_sample=sample
    )
    with sessions() as session, Workspace(out) as workspace:
        curation = curate(session, workspace, config=config)
        return export_rollouts(curation, out / "export", RolloutSource(policy.name, policy.weights_hash, k))
