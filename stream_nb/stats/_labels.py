"""The label rule: what a class label may be, in the store and in an event.

One rule, in two steps, used by the learners (``learn_one``, ``learn_many``,
``prequential_many``), the engine's event decoder and ``stream-nb evaluate``:

1. :func:`validate_label`, for a label read from an event (JSON, CSV, a river
   stream): a string, an integer or a boolean is the class; a float is accepted
   only when integral and exactly representable (``|x| <= 2**53``) and becomes
   the ``int`` (JSON has one number type: ``1.0`` and ``1`` are the same
   class); ``None`` (absent or ``null``) or NaN means *no label*, as
   everywhere (:func:`is_missing_label`); anything else is rejected.
2. :func:`check_label`, what the store itself requires of a class: present
   (not ``None`` nor NaN, :func:`is_missing_label`) and hashable. A label that
   passed step 1 always passes it; Python callers of the learners may use any
   hashable class.

A rejected label raises :class:`~stream_nb.exceptions.InvalidEventError` with
reason ``bad_label``.
"""

from __future__ import annotations

import typing

from ..exceptions import InvalidEventError
from ._values import describe_type, is_nan

__all__ = ["MAX_EXACT_FLOAT_INT", "check_label", "is_missing_label", "validate_label"]

#: Largest integer a float represents exactly; integral float labels beyond it are rejected.
MAX_EXACT_FLOAT_INT = 2**53


def is_missing_label(y: typing.Any) -> bool:
    """True for no label: ``None`` or NaN.

    >>> is_missing_label(None), is_missing_label(float("nan")), is_missing_label(0)
    (True, True, False)
    """
    return y is None or is_nan(y)


def check_label(y: typing.Any) -> None:
    """Raise ``InvalidEventError`` (``bad_label``) unless ``y`` can be a class of the store.

    >>> check_label("yes")
    >>> check_label(None)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.InvalidEventError: the label is missing (None or NaN)
    >>> check_label(["a"])
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.InvalidEventError: the label must be a hashable class (str, int, bool), got list
    """
    if is_missing_label(y):
        raise InvalidEventError("the label is missing (None or NaN)", reason="bad_label")
    try:
        hash(y)
    except TypeError:
        raise InvalidEventError(
            f"the label must be a hashable class (str, int, bool), got {type(y).__name__}",
            reason="bad_label",
        ) from None


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
