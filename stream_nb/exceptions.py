"""Every error stream_nb raises on purpose.

The tree::

    StreamNBError
    ├── ConfigError              a parameter or config key that is unknown or out of range
    ├── InvalidEventError        an event that cannot be used (the daemon dead-letters it)
    │   ├── EventTypeError       an event that is no dict of features (JSON: no object)
    │   ├── FeatureTypeError     one feature value of a type the model cannot take
    │   ├── LabelTypeError       a label of another JSON type than the model's labels
    │   └── CapacityError        learning it would grow a bounded count table past its limit
    ├── MergeError               two models whose statistics cannot be added exactly
    ├── UnlearnError             unlearning an event the model never learned (or cannot take back exactly)
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
    "EventTypeError",
    "FeatureTypeError",
    "LabelTypeError",
    "CapacityError",
    "MergeError",
    "UnlearnError",
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


class EventTypeError(InvalidEventError, TypeError):
    """An event that is not a dict of feature name -> value (``learn_one([1, 2], "a")``): the Python
    side of the daemon's ``not_an_object``, the reason it carries."""

    def __init__(self, message: str):
        super().__init__(message, reason="not_an_object")


class FeatureTypeError(InvalidEventError, TypeError):
    """A feature value has a type the model cannot use (e.g. a string for a numeric feature)."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message, reason="bad_feature_type", field=field)


class LabelTypeError(InvalidEventError, TypeError):
    """A label whose JSON type (string, number, boolean) is not the type of the model's labels.

    The first label fixes the type: ``True`` would merge with the class ``1``, and ``"1"`` be a second class
    with the same JSON key. The model is left unchanged; the daemon's reason is ``label_type_conflict``.

    Attributes
    ----------
    value
        The rejected label.
    received, expected
        Its JSON type, and the type of the model's labels.
    first
        The model's first label, which fixed that type.
    """

    def __init__(self, value, received: str, expected: str, first, *, field: str | None = None,
                 where: str | None = None):
        self.value, self.received, self.expected, self.first, self.where = value, received, expected, first, where
        what = "label" + (f" {field!r}" if field else "") + (f" at {where}" if where else "")
        super().__init__(
            f"{what}: expected {_a(expected)}, the type of this model's labels (set by its first label, "
            f"{_show(first)}), got {_a(received)}, {_show(value)}; one stream's labels must share one JSON type",
            reason="label_type_conflict",
            field=field,
        )

    def for_field(self, field: str) -> "LabelTypeError":
        """The same error, naming the event field the label came from."""
        return LabelTypeError(self.value, self.received, self.expected, self.first, field=field, where=self.where)

    def __reduce__(self):
        return _label_type_error, (self.value, self.received, self.expected, self.first, self.field, self.where)


def _label_type_error(value, received, expected, first, field, where):
    return LabelTypeError(value, received, expected, first, field=field, where=where)


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _show(value) -> str:
    """A label as its JSON text when it has one (``true``, ``"1"``, ``1``), else its repr, cut at 60 characters."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class CapacityError(InvalidEventError):
    """Learning the event would grow a count table past its bound (KDB's ``max_table_cells``).

    The model is left unchanged; the daemon dead-letters the event with reason ``table_full``.
    """

    def __init__(self, message: str):
        super().__init__(message, reason="table_full")


class MergeError(StreamNBError, ValueError):
    """Two models cannot be merged into exactly the model trained on both streams."""


class UnlearnError(StreamNBError, ValueError):
    """``unlearn_one`` was asked to take back an event the model cannot have learned (a class,
    feature or value it never saw, or counts that would fall below zero), or one it cannot take
    back exactly without the receipt its learning returned; the model is left unchanged.

    Attributes
    ----------
    reason
        ``"not_learned"``, ``"needs_receipt"``, ``"forgets"`` (a model with a window, decay or a
        drift detector: the event's counts may be gone already), or ``"partial_pairs"`` (candidate
        pairs came back with fresh counts, see :mod:`stream_nb.stats.selection._candidates`).
    """

    def __init__(self, message: str, *, reason: str = "not_learned"):
        super().__init__(message)
        self.reason = reason


class SnapshotError(StreamNBError, ValueError):
    """A snapshot cannot be written, or a file is not a readable, valid snapshot."""


class CommitError(StreamNBError, RuntimeError):
    """A source could not commit positions, e.g. because its consumer group rebalanced.

    Nothing is lost: the uncommitted records are delivered again after a
    restart (at-least-once). The engine logs it, keeps the positions pending
    and commits them at the next checkpoint.
    """
