"""Process settings (pydantic-settings, env prefix ``ARENA_``): the shared chain/wallet part and the miner's.

The only place environment variables and ``.env`` are read. Each process builds one settings
object in ``main()`` (CLI flags passed as keyword overrides win over the environment), and
validation runs there, at start-up, so a bad value stops the process before it serves anything.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

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
