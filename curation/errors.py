"""Errors of the curation package.

CurationError        curation or export cannot go on (bad configuration, an unwritable output)
├── SplitLeakError   the task audit found a leak across the train / eval split
└── RowError         an export row does not match its format (a bug in the export)

Storage's own failures (``storage.errors.StorageError``) pass through curation unchanged: a
database that cannot be read is a storage fault, not a curation one.
"""

from __future__ import annotations


class CurationError(Exception):
    """Base of every error raised by the curation package: curation or export cannot go on."""


class SplitLeakError(CurationError):
    """The train / eval split leaks: the task audit found tasks on both sides that share an answer."""


class RowError(CurationError):
    """An export row does not match its format (a bug in the export, never a data problem)."""
