"""Settings every neuron shares (pydantic-settings, env prefix ``ARENA_``): network, subnet, wallet, logs.

The role packages build on this: ``neurons.miner.settings`` and ``neurons.validator.settings``.
Environment variables and ``.env`` are read only through these classes, once, in each
process's ``main()`` (CLI flags passed as keyword overrides win over the environment). Each
field's ``description`` is also the help of its command-line flag (``neurons/cli/flags.py``).

A role groups related settings into sections: frozen models nested under its settings, read
from ``ARENA_<SECTION>__<FIELD>`` (``env_nested_delimiter``), and taken typed by the code that
uses them, so each default is written once. A role's ``renamed`` table maps the flat names those
settings had before (``ARENA_TASKS_PER_ROUND``) to their section; they are still read, below the
current names, with a ``FutureWarning`` naming the new variable.
"""

from __future__ import annotations

import ipaddress
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

NETWORKS = ("finney", "test", "local")
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
# Values people leave in templates; refused for every secret so a half-configured node stops.
_PLACEHOLDERS = frozenset({"changeme", "change-me", "changethis", "secret", "xxx", "todo", "your-api-key"})


def _placeholder(secret: str) -> bool:
    text = secret.strip().lower()
    return text in _PLACEHOLDERS or text.startswith(("replace", "changeme", "change-me"))


class Section(BaseModel):
    """A frozen group of settings, read from ``ARENA_<SECTION>__<FIELD>``."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ConnectionBounds(Section):
    """How a public port bounds its clients (``ARENA_SERVING__*``, ``neurons.serving``).

    Read times and the head size, connections in all, and per peer (a source address; an IPv6
    /64): open at once, and pending (no complete first request head yet, what a slow-loris
    holds). Peers in ``exempt_networks`` skip the per-peer bounds: a reverse proxy in front.
    """

    header_seconds: float = Field(
        default=10.0, gt=0, le=600, description="Seconds a client may take to send a request head."
    )
    body_seconds: float = Field(
        default=30.0, gt=0, le=3600, description="Seconds a request body may take after its head."
    )
    keep_alive_seconds: int = Field(
        default=5, ge=1, le=600, description="Seconds an idle connection is kept."
    )
    max_header_bytes: int = Field(
        default=16 * 1024, ge=1024, le=1024 * 1024, description="Largest request head read."
    )
    max_connections: int = Field(
        default=1024, ge=1, le=1_000_000, description="Connections the port holds open at once."
    )
    max_connections_per_peer: int = Field(
        default=256, ge=1, le=1_000_000, description="Connections one peer (source address) holds at once."
    )
    max_pending_per_peer: int = Field(
        default=64, ge=1, le=1_000_000, description="Connections of one peer still sending their first head."
    )
    exempt_networks: tuple[str, ...] = Field(
        default=(), description="Networks (CIDRs) whose peers skip the per-peer bounds: a reverse proxy."
    )

    @field_validator("exempt_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            ipaddress.ip_network(entry, strict=False)  # e.g. 10.0.0.5/32 or fd00::/8
        return value


class _RenamedVariables(PydanticBaseSettingsSource):
    """Reads a role's ``renamed`` flat ``ARENA_*`` names from the environment and ``.env``, with a warning."""

    def __init__(
        self,
        settings_cls: type[BaseSettings],
        renamed: Mapping[str, tuple[str, str]],
        *sources: EnvSettingsSource,
    ) -> None:
        super().__init__(settings_cls)
        self.renamed = renamed
        self.sources = sources  # in priority order: the environment, then .env

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Unused: ``__call__`` reads the old names directly."""
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        """The values found under old names, nested as the sections expect."""
        found: dict[str, dict[str, Any]] = {}
        for source in reversed(self.sources):  # the lower priority first, so the higher overwrites it
            for old, (section, name) in self.renamed.items():
                raw = source.env_vars.get(f"arena_{old}")
                if raw:
                    new = f"ARENA_{section.upper()}__{name.upper()}"
                    warnings.warn(
                        f"ARENA_{old.upper()} is deprecated: set {new}", FutureWarning, stacklevel=2
                    )
                    found.setdefault(section, {})[name] = _decoded(raw)
        return found


def _decoded(raw: str) -> Any:
    # The environment source decodes a complex value (a list) from JSON; so does this.
    try:
        return json.loads(raw)
    except ValueError:
        return raw


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

    network: str = Field(default="finney", description="finney, test, local or a ws:// / wss:// URL.")
    netuid: int = Field(ge=0, le=65535, description="The subnet id.")
    wallet_name: str = Field(default="default", description="Wallet (coldkey) name.")
    wallet_hotkey: str = Field(default="default", description="Hotkey name in the wallet.")
    wallet_path: Path = Field(default=Path("~/.bittensor/wallets"), description="Wallets directory.")
    local_chain: Path | None = Field(default=None, description="Local chain file, for network local.")
    chain_read_timeout: float = Field(default=30.0, gt=0, description="Seconds for a chain read.")
    chain_write_timeout: float = Field(default=120.0, gt=0, description="Seconds for a chain write.")
    log_level: LogLevel = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")

    # Flat names of settings that moved into a section -> (section, field); still read, with a warning.
    renamed: ClassVar[Mapping[str, tuple[str, str]]] = {}

    def __init__(self, **values: Any) -> None:
        """Build from the environment, ``.env`` and ``values`` (which win); unknown names are refused.

        Unknown *variables* are ignored (one ``.env`` may serve the validator and the miner), but
        an unknown keyword is a caller's mistake, e.g. a setting that moved into a section.
        """
        # Names with a leading underscore are pydantic-settings' own options (``_env_file``...).
        unknown = sorted(n for n in values if n not in type(self).model_fields and not n.startswith("_"))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting {', '.join(unknown)}")
        super().__init__(**values)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The usual sources, with the role's renamed variables below the current names."""
        readers = [s for s in (env_settings, dotenv_settings) if isinstance(s, EnvSettingsSource)]
        renamed = _RenamedVariables(settings_cls, cls.renamed, *readers)
        return init_settings, env_settings, dotenv_settings, renamed, file_secret_settings

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
