"""The label rule: what a class label may be, in an event and in the store.

One rule, used by the learners (``learn_one``, ``learn_many``, the
``prequential_*`` methods, ``unlearn_one``), the engine's event decoder and
its feedback labels, and ``stream-nb evaluate``:

1. :func:`validate_label`: a string, an integer or a boolean is the class
   (numpy's integer and boolean scalars are the Python ``int`` and ``bool``).
   A float is a class only when it is exactly an integer the float can tell
   from its neighbours (``|x| < 2**53``), and is then that ``int``: JSON has
   one number type, so ``1.0`` and ``1`` are the same class, in a JSON event
   as in ``learn_one(x, 1.0)``. Any other float is refused: ``1.5`` is no
   class, and a float from ``2**53`` on may not be the integer it was written
   as (``9007199254740993.0`` reads as ``9007199254740992``): send such
   labels as integers or strings. ``None`` (absent or ``null``) or NaN means
   *no label*, as everywhere (:func:`is_missing_label`). Anything else (a
   tuple, an object, an array) is refused.
2. :meth:`Labels.check`, what the store requires of a class: a label
   that rule takes, present (not ``None`` nor NaN), and of the JSON type of
   the store's first label (:func:`~stream_nb.stats.json_type`: ``True``
   would merge with the class ``1``, and ``"1"`` would be a second class
   written with the key of ``1``). A class is registered as the label the
   rule gives (``2.0`` as ``2``).

A rejected label raises :class:`~stream_nb.exceptions.InvalidEventError` with
reason ``bad_label``, or :class:`~stream_nb.exceptions.LabelTypeError`
(``label_type_conflict``) for a label of another type.
"""

from __future__ import annotations

import typing

import numpy as np

from ...exceptions import InvalidEventError, LabelTypeError
from ._values import NONE_TYPE, a_noun, describe_type, is_nan, json_type, short_repr

__all__ = ["MAX_EXACT_FLOAT_INT", "Labels", "is_missing_label", "validate_label"]

#: Integral float labels from this on are refused: a float from 2**53 on may be a rounded neighbour.
MAX_EXACT_FLOAT_INT = 2**53


def is_missing_label(y: typing.Any) -> bool:
    """True for no label: ``None`` or NaN.

    >>> is_missing_label(None), is_missing_label(float("nan")), is_missing_label(0)
    (True, True, False)
    """
    return y is None or is_nan(y)


def validate_label(value: typing.Any, field: str = "label") -> str | int | bool | None:
    """Return a label ``value`` as its class (the label rule above), ``None`` for no label.

    ``field`` names the label's field in the error message (None: "the label", a Python caller's).

    >>> validate_label("yes"), validate_label(3), validate_label(True), validate_label(2.0)
    ('yes', 3, True, 2)
    >>> validate_label(None) is None, validate_label(float("nan")) is None
    (True, True)
    >>> validate_label(0.5)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.InvalidEventError: label 'label' must be a string, an integer or a boolean (or a float that is an integer), got the float 0.5
    >>> validate_label(9007199254740993.0)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.InvalidEventError: label 'label' must be a string, an integer or a boolean (or a float that is an integer), got the float 9007199254740992.0, beyond 2**53 where a float may not be the integer it was written as: send it as an integer or a string
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if is_nan(value):
        return None
    detail = None
    if isinstance(value, (float, np.floating)):
        value = float(value)
        detail = f"the float {value!r}"
        if value.is_integer():
            if abs(value) < MAX_EXACT_FLOAT_INT:
                return int(value)
            detail += ", beyond 2**53 where a float may not be the integer it was written as: " \
                "send it as an integer or a string"
    if detail is None:
        detail = describe_type(value)
        if detail == type(value).__name__:  # no JSON value (a tuple, ...): its type, and the value
            detail = f"{a_noun(detail)} {short_repr(value)}"
    raise InvalidEventError(
        f"{'the label' if field is None else f'label {field!r}'} must be a string, an integer or a boolean "
        f"(or a float that is an integer), got {detail}",
        reason="bad_label",
        field=field,
    )


class Labels:
    """The class axis of the count store: the labels in order of first appearance, their indices, and
    the rule that every label has the JSON type of the first (a part that works alone).

    Examples
    --------
    >>> labels = Labels()
    >>> labels.check(1.0)
    >>> labels.add(validate_label(1.0))  # the class the label stands for
    0
    >>> labels.classes, labels.type
    ([1], 'number')
    >>> labels.check("yes")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.LabelTypeError: label: expected a number, the type of this model's labels (set by its first label, 1), got a string, "yes"; one stream's labels must share one JSON type
    """

    def __init__(self):
        self.classes: list = []
        self.index: dict = {}  # label -> class
        self.type: str | None = None  # JSON type of the labels (json_type), fixed by the first class
        self.checked: set = set()  # Python types checked to be of that type

    def check(self, y, where: str | None = None) -> None:
        """Raise unless ``y`` can be learned as a label: present, a label :func:`validate_label` takes,
        and of :attr:`type` (``where`` locates it in the error, e.g. a row of a batch).

        >>> Labels().check(None)
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.InvalidEventError: the label is missing (None or NaN)
        >>> Labels().check(("a", 1))
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.InvalidEventError: the label must be a string, an integer or a boolean (or a float that is an integer), got a tuple ('a', 1)
        """
        if type(y) in self.checked and y == y:  # the usual case: a type already checked (y == y: not NaN)
            return
        if is_missing_label(y):
            raise InvalidEventError("the label is missing (None or NaN)", reason="bad_label")
        label = validate_label(y, None)
        if self.type is not None:
            t = json_type(label)
            if t != self.type:
                raise LabelTypeError(y, t, self.type, self.classes[0] if self.classes else None, where=where)
            if type(label) is type(y) or isinstance(y, (np.integer, np.bool_)):  # every value of the type is a label
                self.checked.add(type(y))  # (a float's is not: 2.0 is the class 2, 2.5 no label)

    def check_many(self, labels: list) -> None:
        """Raise for the first label of a batch that :meth:`check` would refuse after the ones before it
        were learned (the first label fixes the type if none did); change nothing.

        Missing labels (None, NaN) are skipped: the caller decides about them.
        """
        if set(map(type, labels)) <= self.checked | {NONE_TYPE}:
            return  # every label of a checked type (NaN included: the caller's business)
        expected, first = self.type, self.classes[0] if self.classes else None
        for i, y in enumerate(labels):
            if is_missing_label(y):
                continue
            if expected is None:
                self.check(y)
                expected, first = json_type(y), y
                continue
            t = json_type(validate_label(y, None))  # the rule first: a tuple is no label, of no type
            if t != expected:
                raise LabelTypeError(y, t, expected, first, where=f"row {i} of the batch")
            self.check(y, where=f"row {i} of the batch")

    def add(self, y) -> int:
        """Register the new class ``y`` (a label that passed :meth:`check`, as :func:`validate_label`
        gives it) and return its index."""
        if self.type is None:
            self.type = json_type(y)
            self.checked = {type(y)}
        c = len(self.classes)
        self.classes.append(y)
        self.index[y] = c
        return c

    def set_type(self, label_type: str) -> None:
        """Fix the labels' JSON type (a stored state's), and the Python types of the classes that have it."""
        self.type = label_type
        self.checked = {type(y) for y in self.classes if json_type(y) == label_type}
