r"""Tool-call arguments, read once: the one parser the tool server, the trajectory type and the judge share.

A tool call's ``arguments`` is the JSON text the model wrote. :func:`parse_arguments` turns it
into a JSON object or an :class:`ArgumentError` (a typed cause and the agent-facing detail).
The rules, in one place:

- an empty or all-whitespace string means *no arguments* (``{}``): the tool server has always
  run it so (an HTTP call with an empty body), and some chat servers write ``""`` for a
  function without parameters, so the judge reads it the same way;
- anything else must be one JSON object, decoded strictly: ``NaN`` and ``Infinity`` are
  refused (no argument needs them, and they are not JSON), and so are texts over
  ``MAX_ARGUMENT_CHARS`` (a runaway generation), and objects that repeat a key (a parser
  would keep the last value silently; ``arena.jsonkeys``);
- every string in it (keys included) must be text UTF-8 can encode: JSON's ``\ud800``
  escape decodes to a lone surrogate, which no log, hash or database can hold, so such
  arguments are refused here, at the one door every call passes, and never reach a tool.

:func:`split_product_ids` is the one reading of a ``product_ids`` argument, and
:func:`loads_finite` the one NaN-refusing JSON decoder (tool arguments, judge replies).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from arena.jsonkeys import DuplicateKey, unique_object

# Arguments are a handful of short strings; anything this long is a runaway generation.
MAX_ARGUMENT_CHARS = 16_384

ArgumentCause = Literal["too_long", "not_json", "not_object", "duplicate_key", "not_text"]


@dataclass(frozen=True)
class ArgumentError:
    """Why a call's arguments are not a JSON object: a typed cause and the detail an agent can read."""

    cause: ArgumentCause
    detail: str

    def __str__(self) -> str:
        return self.detail


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def loads_finite(text: str | bytes) -> Any:
    """Decode JSON strictly: ``NaN``, ``Infinity`` and ``-Infinity`` literals are refused.

    Raises:
        ValueError: the text is not JSON, or holds a non-finite literal.
        RecursionError: the text nests deeper than the interpreter can decode.
    """
    return json.loads(text, parse_constant=_refuse_constant)


def parse_arguments(arguments: str) -> dict[str, Any] | ArgumentError:
    """Read a tool call's JSON-string arguments into an object, or return why they cannot be one.

    See the module docstring for the rules (``""`` is ``{}``; strict, finite, size-capped).
    """
    if len(arguments) > MAX_ARGUMENT_CHARS:
        return ArgumentError("too_long", f"arguments are longer than {MAX_ARGUMENT_CHARS} characters")
    if not arguments.strip():
        return {}
    try:
        value = _loads_arguments(arguments)
    except DuplicateKey as exc:
        return ArgumentError("duplicate_key", f"arguments repeat a key ({exc})")
    except (ValueError, RecursionError) as exc:
        return ArgumentError("not_json", f"arguments are not valid JSON ({_first_line(exc)})")
    if not isinstance(value, dict):
        return ArgumentError("not_object", f"arguments must be a JSON object, got {type(value).__name__}")
    if not encodable(value):
        detail = "arguments hold a lone surrogate (\\ud800-\\udfff), which is not text"
        return ArgumentError("not_text", detail)
    return value


def _loads_arguments(arguments: str) -> Any:
    """``loads_finite`` that also refuses an object repeating a key (``DuplicateKey``)."""
    return json.loads(arguments, parse_constant=_refuse_constant, object_pairs_hook=unique_object)


def encodable(value: Any) -> bool:
    r"""Whether every string in a decoded JSON value (keys included) can be encoded as UTF-8.

    False exactly when one holds a lone surrogate: what ``json.loads`` makes of an unpaired
    ``\ud800``-``\udfff`` escape, and what ``str.encode`` (so every hash and database) refuses.
    """
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


def split_product_ids(raw: Any) -> tuple[tuple[str, ...], str | None]:
    """Read a ``product_ids`` argument into clean ids, or return why it cannot be read.

    A comma-separated string (ShoppingBench, ORO) or a list of ids (strings or integers). Each
    id is trimmed, empty pieces are dropped, and repeats are dropped keeping the first
    occurrence, so ``"a, a,"`` is one id, not two.

    Returns:
        ``(ids, None)``, or ``((), reason)`` when ``raw`` is neither form, holds a piece that is
        not an id, or names no id at all.
    """
    if isinstance(raw, str):
        pieces: list[Any] = raw.split(",")
    elif isinstance(raw, list):
        pieces = raw
    else:
        return (), f"product_ids is a {type(raw).__name__}, not a string or list"
    ids: dict[str, None] = {}
    for piece in pieces:
        if isinstance(piece, bool) or not isinstance(piece, str | int):
            return (), f"product id {piece!r} is not a string"
        text = str(piece).strip()
        if text:
            ids.setdefault(text, None)
    if not ids:
        return (), "product_ids is empty"
    return tuple(ids), None
