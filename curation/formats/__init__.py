"""The export formats as TRL documents them, one record each (``Format``), in ``FORMATS``.

- ``sft`` (``curation.formats.sft``): ``messages``, ``tools``; conversational language modeling
  with tools (``SFTTrainer``);
- ``kto``: ``prompt``, ``completion``, ``label``, ``tools``; conversational unpaired preference
  (``KTOTrainer``);
- ``dpo``: ``prompt``, ``chosen``, ``rejected``, ``tools``; conversational preference with an
  explicit prompt (``DPOTrainer``);
- ``grpo``: ``prompt``, ``tools``, ``task_id``, ``intent``, ``ground_truth``, ``observed_*``;
  conversational prompt-only, the extra columns reach the reward functions (``GRPOTrainer``).

Adding a format is a module holding its ``Format`` (schema, row builder, row checks, card line)
and its entry below; the export, the card and ``arena curate --format`` take it from there
(docs/recipes/add-an-export-format.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from curation.errors import CurationError
from curation.formats import dpo, grpo, kto, sft
from curation.formats.checks import validate_row
from curation.formats.format import (
    NATIVE_COLUMNS,
    ORIGINS,
    PROVENANCE_COLUMNS,
    STATIC_WORLD,
    WORLD_COLUMNS,
    ExportRow,
    Format,
)

__all__ = [
    "FORMATS",
    "NATIVE_COLUMNS",
    "ORIGINS",
    "PROVENANCE_COLUMNS",
    "STATIC_WORLD",
    "WORLD_COLUMNS",
    "ExportRow",
    "Format",
    "format_names",
    "formats_named",
    "validate_row",
]

FORMATS: tuple[Format, ...] = (sft.FORMAT, kto.FORMAT, dpo.FORMAT, grpo.FORMAT)


def format_names() -> tuple[str, ...]:
    """The names of ``FORMATS``, in order (read when called: the default of ``--format``)."""
    return tuple(fmt.name for fmt in FORMATS)


def formats_named(names: Iterable[str]) -> tuple[Format, ...]:
    """The formats of ``names``, in that order (each once).

    Raises:
        CurationError: a name that is no format's.
    """
    known = {fmt.name: fmt for fmt in FORMATS}
    chosen = tuple(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise CurationError(f"unknown export format(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return tuple(known[name] for name in chosen)
