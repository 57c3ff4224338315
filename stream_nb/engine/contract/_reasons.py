"""The reason codes of the daemon's dead letters: one registry, which ``stream-nb run --help`` lists.

Every record the daemon rejects (an event of the input, or a label of
``--feedback`` / ``--feedback-topic``) gives one dead letter whose ``reason`` is
one of :data:`DEAD_LETTER_REASONS`. The codes themselves are raised where the
check is made (:class:`~stream_nb.exceptions.InvalidEventError` and its
subclasses, ``reason=...``); ``tests/test_reasons.py`` reads every code raised
in the package and checks it is here, and that the table of reasons in docs/daemon/reasons.md
and the help list exactly these.

>>> list(DEAD_LETTER_REASONS)[:3]
['oversize', 'invalid_utf8', 'invalid_json']
>>> print(describe_reasons(width=60).splitlines()[0])
  oversize             longer than --max-event-bytes
"""

from __future__ import annotations

import textwrap

__all__ = ["DEAD_LETTER_REASONS", "describe_reasons"]

#: reason code -> what it means: the event's checks (the decoder's, the model's), then the --feedback labels'.
DEAD_LETTER_REASONS: dict[str, str] = {
    "oversize": "longer than --max-event-bytes",
    "invalid_utf8": "the bytes are not UTF-8",
    "invalid_json": "not one JSON document",
    "not_an_object": "JSON, but not an object",
    "nested_value": "a feature holds an object or an array",
    "bad_label": "a fractional float, an object or an array as the label",
    "label_type_conflict": "a label of another JSON type than the model's first label",
    "bad_id": "an object, an array, an infinite number or an integer outside 64 bits as the id",
    "table_full": "learning the event would grow KDB's count table past --max-table-cells",
    "bad_feature_type": "a value of another type than the feature's, or an infinite number",
    "bad_time": "the --time-field value is not a finite number",
    "missing_id": "a --feedback label record without the id field",
    "missing_label": "a --feedback label record without the label field",
    "unmatched_label": "a --feedback label whose event did not come within --label-ttl",
}


def describe_reasons(width: int = 78, indent: int = 2) -> str:
    """The codes and their meanings as an indented two-column text (``stream-nb run --help``).

    Examples
    --------
    >>> print(describe_reasons().splitlines()[0])
      oversize             longer than --max-event-bytes
    """
    column = indent + max(map(len, DEAD_LETTER_REASONS)) + 2
    lines = []
    for code, meaning in DEAD_LETTER_REASONS.items():
        first = " " * indent + code.ljust(column - indent)
        lines.append(textwrap.fill(meaning, width=width, initial_indent=first, subsequent_indent=" " * column))
    return "\n".join(lines)
