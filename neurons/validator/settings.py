"""The validator's settings tree (``ARENA_*``): HTTP, storage, jobs, and its sections.

Sections are frozen models nested under ``ValidatorSettings``, each named by its variables'
prefix (``__`` nests): ``round`` (``ARENA_ROUND__*``: tasks and miners per round, episode
budgets), ``world`` (``ARENA_WORLD__*``: world rounds), ``client`` (``ARENA_CLIENT__*``: the
bounds of calls to miners), ``pool`` (``ARENA_POOL__*``: task rotation), ``judge``
(``ARENA_JUDGE__*``), ``policy`` (``ARENA_POLICY__*``, ``judging.scores.ScorePolicy``),
``serving`` (``ARENA_SERVING__*``, ``neurons.settings.ConnectionBounds``: the public port's read
times and connection bounds) and ``gateway`` (``ARENA_GATEWAY__*``: the inference gateway). The
code that uses a section takes it typed (``run_round(..., config: RoundConfig)``,
``MinerClient(limits=ClientLimits)``, ``replenish(config=PoolConfig)``,
``uvicorn_options(settings.serving)``), so each default is written once: here (the gateway's
limits: in ``arena.gateway.GatewayLimits``).

The flat names these settings had before the sections (``ARENA_TASKS_PER_ROUND``...) are still
read, below the new names, with a ``FutureWarning`` naming the new one (``RENAMED``,
``neurons.settings``).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, SecretStr, field_validator, model_validator

from arena.gateway import GatewayLimits
from arena.httpguard import AddressPolicy, address_policy
from arena.tools import DEFAULT_TOOLSET, TOOLSETS
from arena.types import Intent
from judging.config import DEFAULT_MAX_TURNS, JudgeCalls
from judging.scores import ScorePolicy
from neurons.settings import ConnectionBounds, NeuronSettings, Section, _placeholder


class RoundConfig(Section):
    """What one round does (``ARENA_ROUND__*``): how many tasks and miners, and each episode's budgets."""

    tasks_per_round: int = Field(
        default=4, ge=1, le=256, description="Tasks drawn per round; every queried miner gets each one."
    )
    miners_per_round: int = Field(default=64, ge=0, description="Miners queried per round, 0 for all.")
    max_tool_calls: int = Field(default=30, ge=1, le=1000, description="Tool calls one episode may make.")
    episode_seconds: float = Field(
        default=180.0, gt=0, le=3600, description="Seconds one episode may take (the miner's deadline)."
    )
    max_response_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024, description="Largest miner answer read."
    )
    max_turns: int = Field(
        default=DEFAULT_MAX_TURNS,
        ge=8,
        le=10_000,
        description="Messages a returned trajectory may hold; more is the too_many_turns reject.",
    )

    @model_validator(mode="after")
    def _turns_fit_the_tool_budget(self) -> RoundConfig:
        # Each tool call takes an assistant and a tool message; system, user and a final answer
        # come on top. A cap below that would reject honest episodes that used their budget.
        needed = 2 * self.max_tool_calls + 4
        if self.max_turns < needed:
            raise ValueError(f"max_turns must be at least 2 * max_tool_calls + 4 = {needed}")
        return self


class ClientLimits(Section):
    """How the validator bounds its calls to miners (``ARENA_CLIENT__*``)."""

    max_concurrency: int = Field(
        default=64, ge=1, le=4096, description="Queries in flight at once (each holds a pooled connection)."
    )
    max_json_depth: int = Field(default=32, ge=4, le=256, description="Deepest nesting read in an answer.")
    deadline_grace: float = Field(
        default=2.0, ge=0, le=60, description="Seconds past the deadline an answer may still arrive."
    )
    connect_timeout: float = Field(default=5.0, gt=0, le=60, description="Seconds to open a connection.")
    response_max_age: float = Field(
        default=30.0, gt=0, le=600, description="Freshness window of a miner's answer signature."
    )
    breaker_threshold: int = Field(
        default=3, ge=1, le=1000, description="Consecutive failures that open a miner's circuit."
    )
    breaker_cooldown: float = Field(default=300.0, ge=0, description="Seconds an open circuit skips a miner.")


class PoolConfig(Section):
    """When and how the held-out task pool is refilled (``ARENA_POOL__*``)."""

    min_held_out: int = Field(default=64, ge=1, description="Refill when fewer servable tasks are left.")
    batch: int = Field(default=256, ge=1, le=100_000, description="Tasks generated per refill.")
    practice_share: float = Field(default=0.1, ge=0, le=1, description="Share of all tasks kept public.")
    never_touch_share: float = Field(
        default=0.05, ge=0, le=1, description="Share of all tasks reserved, never served."
    )
    intents: tuple[Intent, ...] = Field(
        default=("product", "shop", "voucher"), min_length=1, description="The generator's intents."
    )
    findable: bool = Field(default=True, description="Keep only tasks whose gold a search finds on page 1.")

    @model_validator(mode="after")
    def _shares(self) -> PoolConfig:
        if self.practice_share + self.never_touch_share > 1:
            raise ValueError("practice_share + never_touch_share must be at most 1")
        return self


class WorldConfig(Section):
    """World rounds (``ARENA_WORLD__*``): tasks compiled from a world pack seeded by chain randomness.

    Off, rounds draw the static held-out pool (tool set ``sb-1``'s tasks, ShoppingBench-comparable).
    On, round ``k`` of the world clock (``arena.world.seed.world_round_at``) compiles the pack of
    the final seed block's hash and this validator's secret of round ``k`` (committed on chain
    before, revealed after: ``neurons.validator.roundsecrets``) over the base index and draws its
    tasks. Each validator serves its own world; revealed rounds are published for audit. The
    world's size (``arena.world.types.WorldSpec``) is the protocol's default, not a setting.
    """

    enabled: bool = Field(
        default=False, description="Run rounds on chain-seeded world packs (off: static held-out tasks)."
    )
    period_blocks: int = Field(
        default=360, ge=2, le=1_000_000, description="Blocks per world: a new world every this many blocks."
    )
    delay_blocks: int = Field(
        default=3, ge=1, description="Blocks after a world's start whose hash seeds it (unknown before)."
    )
    cache_dir: Path | None = Field(
        default=None, description="Where compiled packs are kept per round (default: <data dir>/worlds)."
    )
    publish_dir: Path | None = Field(
        default=None,
        description="Where revealed rounds are published for audit (default: <data dir>/published).",
    )

    @model_validator(mode="after")
    def _delay_inside_the_period(self) -> WorldConfig:
        if self.delay_blocks >= self.period_blocks:
            raise ValueError("delay_blocks must be below period_blocks")
        return self


class JudgeSettings(Section, JudgeCalls):
    """The LLM reasoning judge (``ARENA_JUDGE__*``): an OpenAI-compatible endpoint; none: unscored.

    Its timeout, retries and backoff are ``judging.config.JudgeCalls``'s fields (named, bounded and
    defaulted there); :attr:`calls` hands them to the judge's config.
    """

    base_url: str | None = Field(
        default=None, description="OpenAI-compatible judge endpoint; none: reasoning unscored."
    )
    model: str | None = Field(default=None, description="Judge model name.")
    api_key: SecretStr = Field(default=SecretStr("none"), description="The endpoint's API key (secret).")
    concurrency: int = Field(default=8, ge=1, le=1024, description="Judge calls in flight at once.")
    workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Threads running the judge's code (checks, scans), off the event loop.",
    )
    response_format: Literal["none", "json_object", "json_schema"] = Field(
        default="none", description="Constrained decoding asked of the endpoint (json_schema: vLLM, OpenAI)."
    )

    @property
    def calls(self) -> JudgeCalls:
        """How the judge is called: this section's ``JudgeCalls`` fields."""
        return JudgeCalls(**self.model_dump(include=set(JudgeCalls.model_fields)))

    @model_validator(mode="after")
    def _complete(self) -> JudgeSettings:
        if self.base_url and not self.model:
            raise ValueError("the judge needs ARENA_JUDGE__MODEL (--judge-model) with its base URL")
        if _placeholder(self.api_key.get_secret_value()):
            raise ValueError("judge api_key is a placeholder; set a real value")
        return self


RENAMED: dict[str, tuple[str, str]] = {
    "tasks_per_round": ("round", "tasks_per_round"),
    "miners_per_round": ("round", "miners_per_round"),
    "max_tool_calls": ("round", "max_tool_calls"),
    "episode_seconds": ("round", "episode_seconds"),
    "max_response_bytes": ("round", "max_response_bytes"),
    "query_concurrency": ("client", "max_concurrency"),
    "min_held_out": ("pool", "min_held_out"),
    "task_batch": ("pool", "batch"),
    "practice_share": ("pool", "practice_share"),
    "never_touch_share": ("pool", "never_touch_share"),
    "task_intents": ("pool", "intents"),
    "task_findable": ("pool", "findable"),
}


def _networks(value: tuple[str, ...]) -> tuple[str, ...]:
    for entry in value:
        ipaddress.ip_network(entry, strict=False)  # ValueError unless a network: 10.0.0.0/8, fd00::/8
    return value


Networks = Annotated[tuple[str, ...], AfterValidator(_networks)]


_GATEWAY = GatewayLimits()  # the gateway's defaults, written once in arena.gateway


class GatewaySettings(Section):
    """The inference gateway (``ARENA_GATEWAY__*``, ``arena.gateway``): its switch, outbound guard and bounds.

    On, each episode's token also authorises ``<tool server>/v1/inference/chat/completions``,
    which forwards to the model endpoint the miner names; tool calls the model emitted there
    are attested (axis ``A-attested``). The upstream's addresses must be global unless they lie
    in ``upstream_networks`` (``127.0.0.0/8`` for a model on this host, as the demo runs).
    """

    enabled: bool = Field(default=True, description="Offer the inference gateway to miners' agents.")
    upstream_networks: Networks = Field(
        default=(), description="Non-global networks the gateway may forward to, e.g. 127.0.0.0/8 (none)."
    )
    max_request_bytes: int = Field(
        default=_GATEWAY.max_request_bytes, ge=1024, le=16 * 2**20, description="Largest request body read."
    )
    max_response_bytes: int = Field(
        default=_GATEWAY.max_response_bytes, ge=1024, le=16 * 2**20, description="Largest answer read."
    )
    max_exchanges: int = Field(
        default=_GATEWAY.max_exchanges, ge=1, le=10_000, description="Requests one episode may make."
    )
    upstream_timeout: float = Field(
        default=_GATEWAY.upstream_timeout_s, gt=0, le=600, description="Seconds the upstream has to answer."
    )
    max_concurrent: int = Field(
        default=_GATEWAY.max_concurrent, ge=1, le=4096, description="Upstream requests in flight at once."
    )

    def limits(self) -> GatewayLimits:
        """The gateway's limits."""
        return GatewayLimits(
            max_request_bytes=self.max_request_bytes,
            max_response_bytes=self.max_response_bytes,
            max_exchanges=self.max_exchanges,
            upstream_timeout_s=self.upstream_timeout,
            max_concurrent=self.max_concurrent,
        )

    def policy(self) -> AddressPolicy:
        """Where the gateway may connect: global addresses and ``upstream_networks``."""
        return address_policy(self.upstream_networks)


class ValidatorSettings(NeuronSettings):
    """The validator: its HTTP app (tool server), database, index, jobs, and the sections above.

    Paths left unset derive from ``data_dir``: the SQLite database ``validator.db``, the index
    ``index/``, exports ``exports/`` and the secret file ``validator.secret`` (created on first
    start when ``token_secret`` is unset).
    """

    # ---- HTTP: the tool server miners' agents call, /health and /metrics
    host: str = Field(default="0.0.0.0", description="Interface to listen on.")
    port: int = Field(default=8092, ge=1, le=65535, description="Port of the tool server, /health, /metrics.")
    workers: int = Field(default=1, ge=1, description="Must be 1: the episode registry is in memory.")
    toolserver_url: str | None = Field(
        default=None, description="The tool server URL sent to miners (default http://<host>:<port>)."
    )
    token_secret: SecretStr | None = Field(
        default=None,
        description="Validator secret: tokens, draws, task seeds, round secrets (default: a data dir file).",
    )

    # ---- storage and the shopping world
    data_dir: Path = Field(
        default=Path("~/.arena/validator"), description="State directory: SQLite database, index, secret."
    )
    db_url: SecretStr | None = Field(
        default=None,
        description="Database URL, postgresql+psycopg://... (default: SQLite in the data dir).",
    )
    db_upgrade: bool = Field(
        default=False, description="Migrate the database schema at start (always for the SQLite default)."
    )
    catalog: Path | None = Field(
        default=None, description="Catalog to build the index from when none is there."
    )
    index: Path | None = Field(
        default=None, description="Search index directory (default: <data dir>/index)."
    )
    toolset: str = Field(default=DEFAULT_TOOLSET, description="Tool set offered to agents.")

    # ---- jobs: how often each runs
    round_interval: float = Field(default=600.0, ge=1, description="Seconds between rounds.")
    metagraph_interval: float = Field(default=300.0, ge=1, description="Seconds between metagraph syncs.")
    weights_interval: float = Field(default=600.0, ge=1, description="Seconds between weights checks.")
    weights_min_blocks: int | None = Field(
        default=None, ge=1, description="Blocks between submissions (default: the subnet's tempo)."
    )
    rotation_interval: float = Field(default=600.0, ge=1, description="Seconds between task rotation checks.")
    self_check_interval: float = Field(
        default=120.0, ge=1, description="Seconds between self-checks (registered, permit, chain, clock)."
    )
    max_clock_skew: float = Field(
        default=2.0, gt=0, le=60, description="Seconds our clock may provably differ from the chain's."
    )
    export_interval: float = Field(default=3600.0, ge=1, description="Seconds between periodic exports.")
    export_dir: Path | None = Field(
        default=None, description="Export directory (default: <data dir>/exports)."
    )
    # A private testnet's ranges, e.g. "10.0.0.0/8"; elsewhere only global addresses are queried.
    miner_networks: Networks = Field(
        default=(), description="Non-global networks whose miner addresses are queried anyway (not on local)."
    )

    # ---- sections
    round: RoundConfig = Field(default_factory=RoundConfig)
    client: ClientLimits = Field(default_factory=ClientLimits)
    pool: PoolConfig = Field(default_factory=PoolConfig)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    world: WorldConfig = Field(default_factory=WorldConfig)
    policy: ScorePolicy = Field(default_factory=ScorePolicy)
    serving: ConnectionBounds = Field(default_factory=ConnectionBounds)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)

    renamed = RENAMED

    @field_validator("workers")
    @classmethod
    def _one_worker(cls, value: int) -> int:
        if value != 1:
            # The episode registry (tokens, budgets, tool logs) lives in the process's memory.
            raise ValueError("the validator runs one worker: its episode registry is in memory")
        return value

    @field_validator("toolset")
    @classmethod
    def _known_toolset(cls, value: str) -> str:
        if value not in TOOLSETS:
            raise ValueError(f"toolset must be one of {', '.join(TOOLSETS)}")
        return value

    @field_validator("toolserver_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("toolserver_url must be an http:// or https:// URL")
        return value.rstrip("/") if value else value

    @model_validator(mode="after")
    def _check_validator(self) -> ValidatorSettings:
        if self.token_secret is not None:
            # The one validator secret: tokens, draws, task seeds, round secrets, world-cache seals.
            if _placeholder(self.token_secret.get_secret_value()):
                raise ValueError("token_secret is a placeholder; set a real value (or leave it unset)")
            if len(self.token_secret.get_secret_value()) < 16:
                raise ValueError("token_secret must be at least 16 characters")
        if self.tool_server_url() is None:
            raise ValueError(
                f"host {self.host} is not an address miners can reach; "
                "set ARENA_TOOLSERVER_URL (--toolserver-url)"
            )
        return self

    def tool_server_url(self) -> str | None:
        """The tool server URL sent to miners: explicit, else ``http://host:port`` (127.0.0.1 locally)."""
        if self.toolserver_url:
            return self.toolserver_url
        try:
            address = ipaddress.ip_address(self.host)
        except ValueError:
            return None
        if address.is_unspecified:
            return f"http://127.0.0.1:{self.port}" if self.network == "local" else None
        host = f"[{address}]" if address.version == 6 else str(address)
        return f"http://{host}:{self.port}"

    def data_path(self) -> Path:
        """The data directory, ``~`` expanded."""
        return self.data_dir.expanduser()

    def database_url(self) -> str:
        """The SQLAlchemy URL: ``db_url``, else the embedded SQLite file in the data directory."""
        if self.db_url is not None:
            return self.db_url.get_secret_value()
        return f"sqlite:///{self.data_path() / 'validator.db'}"

    def embedded_database(self) -> bool:
        """Whether the database is the embedded SQLite default (migrated automatically at start)."""
        return self.db_url is None

    def index_path(self) -> Path:
        """The search index directory: ``index``, else ``<data_dir>/index``."""
        return (self.index or self.data_path() / "index").expanduser()

    def world_cache_path(self) -> Path:
        """Where compiled world packs are kept: ``world.cache_dir``, else ``<data_dir>/worlds``."""
        return (self.world.cache_dir or self.data_path() / "worlds").expanduser()

    def publish_path(self) -> Path:
        """Where revealed world rounds are published: ``world.publish_dir``, else ``<data_dir>/published``."""
        return (self.world.publish_dir or self.data_path() / "published").expanduser()

    def export_path(self) -> Path:
        """Where periodic exports go: ``export_dir``, else ``<data_dir>/exports``."""
        return (self.export_dir or self.data_path() / "exports").expanduser()
