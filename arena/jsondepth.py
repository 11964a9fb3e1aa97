"""Nesting depth of a JSON text, scanned without parsing it (a guard run before any JSON parser)."""

from __future__ import annotations

import re

_JSON_SPECIAL = re.compile(rb'["\\\[\]{}]')
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPENERS, _CLOSERS = (ord("["), ord("{")), (ord("]"), ord("}"))


class JsonDepthGuard:
    """Tracks the nesting depth of a JSON text fed in chunks, without parsing it.

    Only quotes, backslashes and brackets are visited (a regex scan), so the cost stays linear
    on hostile input and the check can run while a body streams in, before any parser (whose
    recursion a deep document would exhaust) sees it.
    """

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.deepest = 0
        self._depth = 0
        self._in_string = False
        self._escape_pending = False  # the previous chunk ended on a backslash inside a string

    def feed(self, chunk: bytes) -> bool:
        """Scan the next chunk; False as soon as the depth exceeds ``max_depth``."""
        skip_at = 0 if self._escape_pending else -1
        self._escape_pending = False
        for match in _JSON_SPECIAL.finditer(chunk):
            pos = match.start()
            if pos == skip_at:
                continue
            char = chunk[pos]
            if self._in_string:
                if char == _BACKSLASH:
                    skip_at = pos + 1
                    self._escape_pending = skip_at == len(chunk)
                elif char == _QUOTE:
                    self._in_string = False
            elif char == _QUOTE:
                self._in_string = True
            elif char in _OPENERS:
                self._depth += 1
                if self._depth > self.deepest:
                    self.deepest = self._depth
                    if self._depth > self.max_depth:
                        return False
            elif char in _CLOSERS:
                self._depth -= 1
        return True


def deeper_than(body: bytes, max_depth: int) -> bool:
    """Whether a JSON text nests objects and arrays deeper than ``max_depth`` (``json_depth > max_depth``).

    A text cannot nest deeper than it has opening brackets, so a short count (two passes in C)
    answers most bodies, such as every tool call's arguments, without the scan.
    """
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return False
    return json_depth(body) > max_depth


def json_depth(body: bytes) -> int:
    """The deepest nesting of objects and arrays in a JSON text (0 for a scalar)."""
    guard = JsonDepthGuard(max_depth=len(body) + 1)
    guard.feed(body)
    return guard.deepest
