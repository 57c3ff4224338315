"""The label rule: what a class label may be, in an event and in the store.

One rule, used by the learners (``learn_one``, ``learn_many``,
``prequential_many``), the engine's event decoder and ``stream-nb evaluate``:

1. :func:`validate_label`, for a label read from an event (JSON, CSV, a river
   stream): a string, an integer or a boolean is the class; a float is accepted
   only when integral and exactly representable (``|x| <= 2**53``) and becomes
   the ``int`` (JSON has one number type: ``1.0`` and ``1`` are the same
   class); ``None`` (absent or ``null``) or NaN means *no label*, as
   everywhere (:func:`is_missing_label`); anything else is rejected.
2. :meth:`Labels.check_label`, what the store requires of a class: present
   (not ``None`` nor NaN) and hashable (Python callers of the learners may use
   any hashable class), and of the JSON type of the store's first label
   (:func:`~stream_nb.stats.json_type`: ``True`` would merge with the class
   ``1``, and ``"1"`` would be a second class written with the key of ``1``).

A rejected label raises :class:`~stream_nb.exceptions.InvalidEventError` with
reason ``bad_label``, or :class:`~stream_nb.exceptions.LabelTypeError`
(``label_type_conflict``) for a label of another type.
"""

from __future__ import annotations

import typing

from ..exceptions import InvalidEventError, LabelTypeError
from ._values import NONE_TYPE, describe_type, is_nan, json_type

__all__ = ["MAX_EXACT_FLOAT_INT", "Labels", "is_missing_label", "validate_label"]

#: Largest integer a float represents exactly; integral float labels beyond it are rejected.
MAX_EXACT_FLOAT_INT = 2**53


def is_missing_label(y: typing.Any) -> bool:
    """True for no label: ``None`` or NaN.

    >>> is_missing_label(None), is_missing_label(float("nan")), is_missing_label(0)
    (True, True, False)
    """
    return y is None or is_nan(y)


def validate_label(value: typing.Any, field: str = "label") -> str | int | bool | None:
    """Return an event's label ``value`` as a usable class label, ``None`` for no label.

    ``field`` names the label's field in the error message.

    >>> validate_label("yes"), validate_label(3), validate_label(True), validate_label(2.0)
    ('yes', 3, True, 2)
    >>> validate_label(None) is None, validate_label(float("nan")) is None
    (True, True)
    >>> validate_label(0.5)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.InvalidEventError: label 'label' must be a string, an integer or a boolean (or an integral float), got the float 0.5
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if is_nan(value):
        return None
    if isinstance(value, float):
        if value.is_integer() and abs(value) <= MAX_EXACT_FLOAT_INT:
            return int(value)
        detail = f"the float {value!r}"
    else:
        detail = describe_type(value)
    raise InvalidEventError(
        f"label {field!r} must be a string, an integer or a boolean (or an integral float), got {detail}",
        reason="bad_label",
        field=field,
    )


class Labels:
    """The label checks of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    def check_label(self, y, where: str | None = None) -> None:
        """Raise unless ``y`` can be learned as a label: present, hashable, and of :attr:`label_type`
        (``where`` locates it in the error, e.g. a row of a batch).

        >>> from stream_nb.stats import Stats
        >>> s = Stats(pairs=False, numeric="gaussian")
        >>> s.learn_one({"sky": "sun"}, 1)
        >>> s.check_label(2)
        >>> s.check_label(None)
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.InvalidEventError: the label is missing (None or NaN)
        >>> s.check_label(["a"])
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.InvalidEventError: the label must be a hashable class (str, int, bool), got list
        """
        if type(y) in self._label_ok and y == y:  # the usual case: a type already checked (y == y: not NaN)
            return
        if is_missing_label(y):
            raise InvalidEventError("the label is missing (None or NaN)", reason="bad_label")
        try:
            hash(y)
        except TypeError:
            raise InvalidEventError(
                f"the label must be a hashable class (str, int, bool), got {type(y).__name__}",
                reason="bad_label",
            ) from None
        if self.label_type is not None:
            t = json_type(y)
            if t != self.label_type:
                raise LabelTypeError(y, t, self.label_type, self.classes[0], where=where)
            self._label_ok.add(type(y))

    def check_labels(self, labels: list) -> None:
        """Raise for the first label of a batch that :meth:`check_label` would refuse after the
        ones before it were learned (the first label of a fresh store fixes the type); change nothing.

        Missing labels (None, NaN) are skipped: the caller decides about them.
        """
        if set(map(type, labels)) <= self._label_ok | {NONE_TYPE}:
            return  # every label of a checked type (NaN included: the caller's business)
        expected, first = self.label_type, self.classes[0] if self.classes else None
        for i, y in enumerate(labels):
            if is_missing_label(y):
                continue
            if expected is None:
                self.check_label(y)
                expected, first = json_type(y), y
                continue
            t = json_type(y)
            if t != expected:
                raise LabelTypeError(y, t, expected, first, where=f"row {i} of the batch")
            self.check_label(y, where=f"row {i} of the batch")
