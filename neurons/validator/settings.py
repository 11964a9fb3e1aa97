"""The validator's settings (``ARENA_*``): HTTP, storage, rounds, judge, weights, rotation and export."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from arena.tools import TOOLSETS
from arena.types import Intent
from judging.scores import ScorePolicy
from neurons.settings import NeuronSettings, _placeholder


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
    # Non-global networks whose miner addresses are queried anyway (a private testnet, e.g.
    # "10.0.0.0/8"); otherwise only global addresses are, except on the local network.
    miner_networks: tuple[str, ...] = ()

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

    @field_validator("miner_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            ipaddress.ip_network(entry, strict=False)  # e.g. 10.0.0.0/8 or fd00::/8
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
