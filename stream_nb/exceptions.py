"""Every error stream_nb raises on purpose.

The tree::

    StreamNBError
    ├── ConfigError              a parameter or config key that is unknown or out of range
    ├── InvalidEventError        an event that cannot be used (the daemon dead-letters it)
    │   ├── FeatureTypeError     one feature value of a type the model cannot take
    │   └── CapacityError        learning it would grow a bounded count table past its limit
    ├── MergeError               two models whose statistics cannot be added exactly
    ├── SnapshotError            a snapshot that cannot be written or read
    └── CommitError              a source could not commit its positions (nothing is lost)

Each subclass also derives from the built-in it refines (``ValueError``,
``TypeError`` or ``RuntimeError``), so ``except ValueError`` keeps working for callers who do not
know about stream_nb. Messages name the field and say what was expected and
what was received.
"""

from __future__ import annotations

__all__ = [
    "StreamNBError",
    "ConfigError",
    "InvalidEventError",
    "FeatureTypeError",
    "CapacityError",
    "MergeError",
    "SnapshotError",
    "CommitError",
]


class StreamNBError(Exception):
    """Base class of every error raised by stream_nb."""


class ConfigError(StreamNBError, ValueError):
    """A parameter or configuration key is unknown or has an unusable value."""


class InvalidEventError(StreamNBError, ValueError):
    """An event cannot be decoded or validated.

    Attributes
    ----------
    reason
        A short machine-friendly code, e.g. ``"invalid_json"``, ``"bad_feature_type"``.
    field
        The offending field, or ``None`` when the whole event is at fault.
    """

    def __init__(self, message: str, *, reason: str = "invalid_event", field: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.field = field


class FeatureTypeError(InvalidEventError, TypeError):
    """A feature value has a type the model cannot use (e.g. a string for a numeric feature)."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message, reason="bad_feature_type", field=field)


class CapacityError(InvalidEventError):
    """Learning the event would grow a count table past its bound (KDB's ``max_table_cells``).

    The model is left unchanged; the daemon dead-letters the event with reason ``table_full``.
    """

    def __init__(self, message: str):
        super().__init__(message, reason="table_full")


class MergeError(StreamNBError, ValueError):
    """Two models cannot be merged into exactly the model trained on both streams."""


class SnapshotError(StreamNBError, ValueError):
    """A snapshot cannot be written, or a file is not a readable, valid snapshot."""


class CommitError(StreamNBError, RuntimeError):
    """A source could not commit positions, e.g. because its consumer group rebalanced.

    Nothing is lost: the uncommitted records are delivered again after a
    restart (at-least-once). The engine logs it, keeps the positions pending
    and commits them at the next checkpoint.
    """
