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

from storage.paths import ValidatorPaths


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
