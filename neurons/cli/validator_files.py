"""Where the traces of a validator's database are converted: the search index and the world packs it used.

``arena curate`` and ``arena convert`` replay each trace against the index it was judged on, and
a world trace on its world's pack. A flag names them; without one, the directories the validator
recorded in its database at start-up (``storage.paths``), where they exist on this machine; then
the validator's own defaults (``~/.arena/validator/index`` and ``worlds``). Where no index is
found, ``ConversionFiles.missing`` says why, for the command's warning and the funnel's note.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from storage.paths import ValidatorPaths


class ConversionSettings(BaseSettings):
    """What ``arena curate`` and ``arena convert`` convert with: the index, the packs, the workers.

    Each command's settings extend it with their own, read from ``ARENA_CURATE_*`` or
    ``ARENA_CONVERT_*`` variables (and ``.env``) where no flag is given.
    """

    model_config = SettingsConfigDict(
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",  # one .env may hold the validator's variables too
        frozen=True,
        populate_by_name=True,
    )

    index: Path | None = Field(
        default=None,
        description="Search index the traces were judged on; conversion replays against it "
        "(default: the one the validator recorded in the database, else ~/.arena/validator/index).",
    )
    worlds: Path | None = Field(
        default=None,
        description="World packs the traces ran on, a pack or a directory of packs (default: the "
        "validator's world cache as recorded in the database, else ~/.arena/validator/worlds).",
    )
    workers: int = Field(
        default=0,
        ge=0,
        description="Conversion worker processes (0: one per core, started once the run needs them; "
        "a teacher converts in this process); the output is the same with any number.",
    )


@dataclass(frozen=True)
class ConversionFiles:
    """The index and world packs to convert with, and where no index was found, why not."""

    index: Path | None
    worlds: Path | None
    missing: str = ""


def default_data_dir() -> Path:
    """The validator's default data directory (``ValidatorSettings.data_dir``), ``~`` expanded."""
    from neurons.validator.settings import ValidatorSettings

    default: Path = ValidatorSettings.model_fields["data_dir"].default
    return default.expanduser()


def conversion_files(index: Path | None, worlds: Path | None, recorded: ValidatorPaths) -> ConversionFiles:
    """The given directories, else those the validator recorded (where they exist here), else its defaults.

    A recorded world pack directory is taken even where it is missing here: its world traces
    then drop as ``unknown_world``, and the funnel's fix names ``--worlds``.
    """
    data = default_data_dir()
    worlds = worlds or recorded.worlds or data / "worlds"
    if index is not None:
        return ConversionFiles(index, worlds)
    if recorded.index is not None and recorded.index.is_dir():
        return ConversionFiles(recorded.index, worlds)
    if (data / "index").is_dir():
        return ConversionFiles(data / "index", worlds)
    where = (
        f"the validator recorded {recorded.index}, which is not on this machine"
        if recorded.index is not None
        else f"no validator recorded one, and there is none at {data / 'index'}"
    )
    return ConversionFiles(None, worlds, missing=f"no search index: {where}")
