"""The class axis of the count store (``Labels``), alone: indices in order of first appearance, one JSON
type per stream, worked out independently from the labels themselves."""

import numpy as np
import pytest

from stream_nb.exceptions import InvalidEventError, LabelTypeError
from stream_nb.stats import validate_label
from stream_nb.stats.values import Labels


def kind(y) -> str:
    """JSON's name for a label's type, written out for this test."""
    if isinstance(y, (bool, np.bool_)):
        return "boolean"
    return "number" if isinstance(y, (int, float, np.integer)) else "string"


def learn(labels: Labels, y) -> int:
    """What the store does with a label: check it, register its class if new."""
    labels.check(y)
    c = validate_label(y)
    return labels.index[c] if c in labels.index else labels.add(c)


@pytest.mark.parametrize("stream", [
    ["b", "a", "b", "c", "a"],
    [3, 1.0, np.int64(3), 2, 1],
    [True, False, np.bool_(True)],
])
def test_classes_are_numbered_in_order_of_first_appearance(stream):
    labels, first_seen = Labels(), {}
    for y in stream:
        c = validate_label(y)
        assert learn(labels, y) == first_seen.setdefault(c, len(first_seen))
    assert labels.classes == list(first_seen) and labels.type == kind(stream[0])


@pytest.mark.parametrize("first, other", [("a", 1), (1, "1"), (True, 1), (1, False)])
def test_a_label_of_another_type_than_the_first_is_refused_and_nothing_changes(first, other):
    labels = Labels()
    learn(labels, first)
    assert kind(first) != kind(other)
    with pytest.raises(LabelTypeError):
        learn(labels, other)
    with pytest.raises(LabelTypeError, match="row 1 of the batch"):
        labels.check_many([first, other])
    assert labels.classes == [validate_label(first)]


def test_missing_and_malformed_labels():
    labels = Labels()
    for bad in (None, float("nan"), 1.5, ("a", 1)):
        with pytest.raises(InvalidEventError):
            labels.check(bad)
    labels.check_many([None, "a", float("nan"), "b"])  # missing labels are the caller's business
    assert labels.classes == [] and labels.type is None


def test_a_restored_type_holds_before_any_class():
    labels = Labels()
    labels.set_type("string")
    with pytest.raises(LabelTypeError):
        labels.check(1)
