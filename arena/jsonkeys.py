"""Duplicate keys in a JSON text: the one check every JSON door runs before a parser keeps the last one.

JSON parsers (``json``, pydantic's) silently keep the last of two equal keys, so a body whose
signer and reader see different values (``{"page": 1, "page": 5}``) would pass unnoticed. Every
door that reads JSON from outside refuses such a text: tool arguments
(``arena.arguments.parse_arguments``), the practice body (``arena.toolserver``) and both signed
bodies between validator and miner (``TaskRequest``, ``TaskResponse``).
"""

from __future__ import annotations

import json
from typing import Any


class DuplicateKey(ValueError):
    """A JSON object holds the same key twice; ``key`` is the first repeated one."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key[:64]!r}")
        self.key = key


def _first_repeat(pairs: list[tuple[str, Any]]) -> str | None:
    if len(pairs) < 2:
        return None
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` ``object_pairs_hook``: the object, or ``DuplicateKey`` when a key repeats."""
    if (key := _first_repeat(pairs)) is not None:
        raise DuplicateKey(key)
    return dict(pairs)


def _check_only(pairs: list[tuple[str, Any]]) -> None:
    # The check's own hook builds nothing: the caller parses the text again into its model.
    if (key := _first_repeat(pairs)) is not None:
        raise DuplicateKey(key)


def duplicate_key(text: str | bytes) -> str | None:
    """The first key some object of ``text`` repeats, or None (also for text that is not JSON).

    Run before a model parser reads the same text; a text that is not JSON is left for that
    parser to refuse with its own message. Callers bound the text's size and depth first.
    """
    try:
        json.loads(text, object_pairs_hook=_check_only)
    except DuplicateKey as exc:
        return exc.key
    except (ValueError, RecursionError):
        return None
    return None
