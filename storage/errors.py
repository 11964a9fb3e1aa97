"""Errors of the storage package.

StorageError
├── SchemaError      the database has no schema version, an unknown (newer) one, or is behind head
├── ConflictError    a write reuses a key (episode id, task id, round id) with different content
├── MissingRecord    a write refers to a record that is not stored (task, round, episode)
└── UnstorableContent  an episode holds text no encoding can store (a lone surrogate)

Every database failure leaves storage as a ``StorageError`` (raised ``from`` the driver's
error), so callers never need to import SQLAlchemy or a driver to handle one.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base of every error raised by the storage package."""


class SchemaError(StorageError):
    """The database schema is not the one this code knows; the process must not run on it."""


class ConflictError(StorageError):
    """A key is already stored with different content (a retried write with the same content is fine)."""


class MissingRecord(StorageError):
    """A write refers to a task, round or episode that is not stored."""


class UnstorableContent(StorageError):
    """An episode's trajectory or tool log holds text that cannot be encoded (a lone surrogate).

    Its content hash cannot be computed, so nothing of it is written; the content came from the
    miner, so the caller stores the episode as a miner fault instead (``storable_log`` keeps the
    tool log).
    """
