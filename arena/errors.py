"""Errors of the shopping world.

ArenaError
├── CatalogError      a catalog file is missing, unreadable or unusable (our input; bad rows are data)
├── SearchIndexError  the search index is missing, corrupt or of another catalog version
├── InvalidTask       a task file row or a task definition is invalid
├── WorldError        a world pack cannot be compiled, or a saved pack is missing, corrupt or tampered
└── EpisodeError      an episode token is forged, expired or closed, or a budget is spent
    ├── TokenInvalid      missing, malformed or forged token (HTTP 401)
    ├── TokenExpired      authentic token past its expiry (HTTP 401)
    ├── EpisodeClosed     authentic token, but its episode is closed, unknown or not the one asked for (403)
    └── BudgetExhausted   the episode's call or wall-time budget is spent (HTTP 429)

Agent faults (bad tool arguments, unknown product ids) are never exceptions: they are
``ToolResult(error=True)`` returned to the agent.
"""

from __future__ import annotations


class ArenaError(Exception):
    """Base of every error raised by the arena package."""


class CatalogError(ArenaError):
    """A catalog file is missing or unreadable."""


class SearchIndexError(ArenaError):
    """The search index is missing, corrupt, or does not match what was asked for."""


class InvalidTask(ArenaError):
    """A task row or definition is invalid."""


class WorldError(ArenaError):
    """A world pack cannot be compiled, or a saved pack fails its manifest (``arena.world``)."""


class EpisodeError(ArenaError):
    """An episode token is invalid or a per-episode budget is exhausted."""


class TokenInvalid(EpisodeError):
    """An episode token is missing, malformed, or its signature does not verify."""


class TokenExpired(EpisodeError):
    """An authentic episode token is past its expiry."""


class EpisodeClosed(EpisodeError):
    """An authentic token names an episode that is closed, unknown here, or not the one requested."""


class BudgetExhausted(EpisodeError):
    """A per-episode budget (tool calls, wall time) is spent; the message says which."""
