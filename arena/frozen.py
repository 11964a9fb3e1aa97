"""The base of every domain model (frozen, strict, finite) and the content hashes built on it.

:mod:`arena.types` re-exports every name here; import them from there.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError


class Frozen(BaseModel):
    """Base for every domain model: immutable, no unknown fields, no NaN or infinity."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


F = TypeVar("F", bound=Frozen)


def validate_row(model: type[F], row: Any) -> F:
    """Validate one decoded JSON row (an object) as ``model``.

    Raises:
        ValueError: the row is not an object, or fails validation; the message names the first
            problem as ``where: why`` (what a file reader reports with the line number).
    """
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    try:
        return model.model_validate(row)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "row"
        raise ValueError(f"{where}: {first['msg']}") from exc


def canonical_json(value: Any) -> str:
    """Serialise a JSON-able value canonically (sorted keys, no spaces) for hashing and comparison."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any, *, prefix: str = "") -> str:
    """Return a short, stable content address (sha256 of the canonical JSON) with an optional prefix."""
    digest = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    return f"{prefix}{digest[:32]}"


def result_hash(content: str) -> str:
    """Hash a tool result's content string, as stored in the tool log."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def finite(value: float) -> bool:
    """Return whether ``value`` is a finite float (not NaN, not infinite)."""
    return math.isfinite(value)
