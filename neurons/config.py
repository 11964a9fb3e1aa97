"""Process settings (pydantic-settings, env prefix ``ARENA_``): the shared part, the miner's, the validator's.

The only place environment variables and ``.env`` are read. Each process builds one settings
object in ``main()`` (CLI flags passed as keyword overrides win over the environment), and
validation runs there, at start-up, so a bad value stops the process before it serves anything.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from arena.tools import TOOLSETS
from arena.types import Intent
from judging.scores import ScorePolicy

NETWORKS = ("finney", "test", "local")
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
# Values people leave in templates; refused for every secret so a half-configured node stops.
_PLACEHOLDERS = frozenset({"changeme", "change-me", "changethis", "secret", "xxx", "todo", "your-api-key"})


def _placeholder(secret: str) -> bool:
    text = secret.strip().lower()
    return text in _PLACEHOLDERS or text.startswith(("replace", "changeme", "change-me"))


class NeuronSettings(BaseSettings):
    """What every neuron needs: the network, the subnet, its wallet and logging."""

    model_config = SettingsConfigDict(
        env_prefix="ARENA_",
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",  # one .env may hold the validator's and the miner's variables
        validate_default=True,
    )

    network: str = "finney"
    netuid: int = Field(ge=0, le=65535)
    wallet_name: str = "default"
    wallet_hotkey: str = "default"
    wallet_path: Path = Path("~/.bittensor/wallets")
    local_chain: Path | None = None  # the local chain file, for network "local" only
    chain_read_timeout: float = Field(default=30.0, gt=0)
    chain_write_timeout: float = Field(default=120.0, gt=0)
    log_level: LogLevel = "INFO"

    @field_validator("network")
    @classmethod
    def _known_network(cls, value: str) -> str:
        if value in NETWORKS or value.startswith(("ws://", "wss://")):
            return value
        raise ValueError(f"network must be one of {', '.join(NETWORKS)} or a ws:// / wss:// URL")

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check_common(self) -> NeuronSettings:
        if self.network == "local" and self.local_chain is None:
            raise ValueError("network 'local' needs the local chain file (ARENA_LOCAL_CHAIN / --local-chain)")
        for name, value in self:
            if isinstance(value, SecretStr) and _placeholder(value.get_secret_value()):
                raise ValueError(f"{name} is a placeholder; set a real value")
        return self

    def revealed(self) -> dict[str, Any]:
        """Every field as JSON-able values, secrets included (to hand settings to worker processes)."""
        out = json.loads(self.model_dump_json())
        for name, value in self:
            if isinstance(value, SecretStr):
                out[name] = value.get_secret_value()
        return dict(out)


class MinerSettings(NeuronSettings):
    """The miner: where it listens and advertises, its agent, and how it admits validators."""

    host: str = "0.0.0.0"
    port: int = Field(default=8091, ge=1, le=65535)
    external_ip: str | None = None  # the IP advertised on chain; defaults to host, 127.0.0.1 locally
    serve_on_chain: bool = True
    workers: int = Field(default=1, ge=1, le=64)

    agent: str = "scripted"  # "llm", "scripted" or "package.module:function"
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr = SecretStr("none")
    max_steps: int = Field(default=20, ge=1, le=200)

    min_stake: float = Field(default=0.0, ge=0)  # a caller needs a validator permit and this much stake
    auth_max_age: float = Field(default=10.0, gt=0, le=60)  # freshness window of signed requests
    metagraph_ttl: float = Field(default=30.0, ge=0)  # seconds a metagraph snapshot is reused
    nonce_db: Path | None = None  # SQLite replay store; required (or derived) with several workers
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_request_depth: int = Field(default=32, ge=4, le=256)
    max_concurrent_tasks: int = Field(default=16, ge=1)  # per worker; beyond it the miner answers 503
    deadline_margin: float = Field(default=1.0, ge=0)  # seconds kept back to sign and send the answer

    @field_validator("external_ip")
    @classmethod
    def _ip_literal(cls, value: str | None) -> str | None:
        if value is not None:
            ipaddress.ip_address(value)  # chain.serve needs an IP literal, not a host name
        return value

    @model_validator(mode="after")
    def _check_miner(self) -> MinerSettings:
        if self.agent == "llm" and not (self.llm_base_url and self.llm_model):
            raise ValueError(
                "the llm agent needs ARENA_LLM_BASE_URL and ARENA_LLM_MODEL (--llm-base-url/--llm-model)"
            )
        if self.serve_on_chain and self.advertised_ip() is None:
            raise ValueError(
                f"host {self.host} cannot be advertised on chain; set ARENA_EXTERNAL_IP (--external-ip)"
            )
        return self

    def advertised_ip(self) -> str | None:
        """The IP literal served on chain: ``external_ip``, else ``host`` when it is a concrete IP."""
        if self.external_ip:
            return self.external_ip
        try:
            address = ipaddress.ip_address(self.host)
        except ValueError:
            return None
        if address.is_unspecified:
            return "127.0.0.1" if self.network == "local" else None
        return self.host

    def agent_options(self) -> dict[str, Any]:
        """Keyword options for ``load_agent(self.agent, ...)``."""
        if self.agent == "llm":
            return {
                "base_url": self.llm_base_url,
                "model": self.llm_model,
                "api_key": self.llm_api_key.get_secret_value(),
            }
        return {}


class JudgeSettings(BaseModel):
    """The LLM reasoning judge (``ARENA_JUDGE__*``): an OpenAI-compatible endpoint; none: unscored."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr = SecretStr("none")
    timeout: float = Field(default=60.0, gt=0, le=3600)  # seconds per LLM call before a retry
    retries: int = Field(default=2, ge=0, le=10)  # retries with exponential backoff, then unscored
    concurrency: int = Field(default=8, ge=1, le=1024)  # LLM judge calls in flight at once
    # Constrained decoding asked of the endpoint: json_schema (vLLM, OpenAI), json_object, or none.
    response_format: Literal["none", "json_object", "json_schema"] = "none"

    @model_validator(mode="after")
    def _complete(self) -> JudgeSettings:
        if self.base_url and not self.model:
            raise ValueError("the judge needs ARENA_JUDGE__MODEL (--judge-model) with its base URL")
        if _placeholder(self.api_key.get_secret_value()):
            raise ValueError("judge api_key is a placeholder; set a real value")
        return self


class ValidatorSettings(NeuronSettings):
    """The validator: its HTTP app (tool server), database, index, rounds, judge, weights and jobs.

    Paths left unset derive from ``data_dir``: the SQLite database ``validator.db``, the index
    ``index/``, exports ``exports/`` and the secret file ``validator.secret`` (created on first
    start when ``token_secret`` is unset).
    """

    # ---- HTTP: the tool server miners' agents call, /health and /metrics
    host: str = "0.0.0.0"
    port: int = Field(default=8092, ge=1, le=65535)
    workers: int = Field(default=1, ge=1)
    toolserver_url: str | None = None  # how miners reach our tool server (sent in every task)
    token_secret: SecretStr | None = None  # HMAC secret: episode tokens, round draws, task seeds

    # ---- storage and the shopping world
    data_dir: Path = Path("~/.arena/validator")
    db_url: SecretStr | None = None  # default: sqlite:///<data_dir>/validator.db
    db_upgrade: bool = False  # run migrations at start (always done for the embedded default)
    catalog: Path | None = None  # built into ``index`` at start when no index is there yet
    index: Path | None = None
    toolset: str = "sb-1"

    # ---- rounds and episodes
    round_interval: float = Field(default=600.0, ge=1)
    tasks_per_round: int = Field(default=4, ge=1, le=256)
    miners_per_round: int = Field(default=64, ge=0)  # 0: every serving miner
    max_tool_calls: int = Field(default=30, ge=1, le=1000)
    episode_seconds: float = Field(default=180.0, gt=0, le=3600)
    max_response_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    query_concurrency: int = Field(default=64, ge=1, le=4096)
    metagraph_interval: float = Field(default=300.0, ge=1)

    # ---- judge and weights
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    weights_interval: float = Field(default=600.0, ge=1)  # how often the weights job checks
    weights_min_blocks: int | None = Field(default=None, ge=1)  # between submissions; None: the tempo
    policy: ScorePolicy = Field(default_factory=ScorePolicy)

    # ---- task rotation
    rotation_interval: float = Field(default=600.0, ge=1)
    min_held_out: int = Field(default=64, ge=1)  # generate when the held-out pool falls below this
    task_batch: int = Field(default=256, ge=1, le=100_000)
    practice_share: float = Field(default=0.1, ge=0, le=1)
    never_touch_share: float = Field(default=0.05, ge=0, le=1)
    task_intents: tuple[Intent, ...] = ("product", "shop", "voucher")
    task_findable: bool = True  # keep only tasks whose gold a search finds on page 1

    # ---- periodic export (curation)
    export_interval: float = Field(default=3600.0, ge=1)
    export_dir: Path | None = None

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
        if self.token_secret is not None and len(self.token_secret.get_secret_value()) < 16:
            raise ValueError("token_secret must be at least 16 characters")
        if self.practice_share + self.never_touch_share > 1:
            raise ValueError("practice_share + never_touch_share must be at most 1")
        if not self.task_intents:
            raise ValueError("task_intents must name at least one intent")
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

    def export_path(self) -> Path:
        """Where periodic exports go: ``export_dir``, else ``<data_dir>/exports``."""
        return (self.export_dir or self.data_path() / "exports").expanduser()
