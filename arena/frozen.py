"""The base of every domain model (frozen, strict, finite) and the content hashes built on it.

:mod:`arena.types` re-exports every name here; import them from there.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)


class Frozen(BaseModel):
    """Base for every domain model: immutable, no unknown fields, no NaN or infinity."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Sparse(Frozen):
    """A model whose ``omitted_at_default`` fields are left out of its dump while at their default.

    A field added to a stored shape is named here, so records (and content hashes) made before
    the field existed keep their form: a static episode's tool log has no ``world_version``.
    """

    omitted_at_default: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _leave_out_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        fields = type(self).model_fields
        for name in self.omitted_at_default:
            if getattr(self, name) == fields[name].get_default(call_default_factory=True):
                data.pop(name, None)
        return data


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
