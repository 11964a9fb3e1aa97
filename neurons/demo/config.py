"""What the demo runs (``DemoConfig``, the ``arena demo`` options) and what it produced (``DemoResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from neurons.demo.summary import ExportCount, MinerSummary

# The agent kinds of the demo's miners.
SCRIPTED, LLM, GIVE_UP = "scripted", "llm", "give_up"


@dataclass(frozen=True)
class DemoConfig:
    """What the demo runs (``arena demo`` options).

    Attributes:
        workdir: a fresh (missing or empty) directory for everything the demo writes.
        rounds: validator rounds to run.
        miners_per_agent: miners of each agent kind (scripted, llm, give_up).
        llm: run the llm miners (False: scripted and give_up miners only, no model).
        llm_base_url: an OpenAI-compatible endpoint for the llm miners instead of the embedded model.
        llm_model: its model name (None: the first one its ``/models`` lists).
        llm_api_key: its API key.
        judge_url: an OpenAI-compatible endpoint for the reasoning judge (None: no judge;
            reasoning is then unscored, ``disabled``, for every miner alike).
        judge_model: the judge's model name (None: the first one its ``/models`` lists).
        judge_api_key: the judge's API key.
        products: size of the synthetic catalog.
        seed: its seed, and the seed of the validator's secret (so of the tasks it mints).
        catalog: a catalog file to use instead of the synthetic one.
        tasks_per_round: tasks each miner gets per round.
        episode_seconds: one episode's time budget (None: 60 s with llm miners, 20 s without).
        max_steps: model turns per episode for the llm miners.
        worlds: run the rounds on chain-seeded world packs (a new world every
            ``neurons.demo.run.WORLD_PERIOD`` blocks, so each round gets its own); False: the
            static held-out tasks.
    """

    workdir: Path
    rounds: int = 3
    miners_per_agent: int = 1
    llm: bool = True
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    judge_url: str | None = None
    judge_model: str | None = None
    judge_api_key: SecretStr | None = None
    products: int = 3000
    seed: int = 0
    catalog: Path | None = None
    tasks_per_round: int = 2
    episode_seconds: float | None = None
    max_steps: int = 6
    worlds: bool = True

    def episode_budget(self) -> float:
        """Seconds per episode: explicit, else enough for the local model's turns when llm miners run."""
        if self.episode_seconds is not None:
            return self.episode_seconds
        return 60.0 if self.llm else 20.0

    def embedded_llm(self) -> bool:
        """Whether the demo serves the embedded local model."""
        return self.llm and not self.llm_base_url

    def kinds(self) -> tuple[str, ...]:
        """The agent kinds of the demo's miners."""
        return (SCRIPTED, LLM, GIVE_UP) if self.llm else (SCRIPTED, GIVE_UP)


@dataclass
class DemoResult:
    """What a demo run produced: the per-miner summary and where everything is."""

    miners: list[MinerSummary]
    rounds: int
    database: str
    export: Path
    workdir: Path
    chain: Path
    llm: str | None
    judge: str | None
    seconds: dict[str, Any] = field(default_factory=dict)
    exports: list[ExportCount] = field(default_factory=list)
    worlds: list[dict[str, Any]] = field(default_factory=list)  # each round's world (none: static tasks)

    def as_json(self) -> dict[str, Any]:
        """The JSON object ``arena demo --json`` prints."""
        return {
            "miners": [row.as_json() for row in self.miners],
            "rounds": self.rounds,
            "database": self.database,
            "export": str(self.export),
            "workdir": str(self.workdir),
            "chain": str(self.chain),
            "llm": self.llm,
            "judge": self.judge,
            "seconds": self.seconds,
            "exports": {count.format: count.as_json() for count in self.exports},
            "worlds": self.worlds,
        }
