"""The value types of categorical features, alone: what each first value lets in, against the rule written
out by hand (JSON's string, number and boolean), and against a store learning the same values."""

import pytest

from stream_nb.exceptions import FeatureTypeError
from stream_nb.stats import Stats
from stream_nb.stats.schema import ValueTypes

#: first value, declared type, the later values taken, the later values refused
CASES = [
    ("red", None, ["blue", ""], [3, 2.5, True]),
    (3, None, [4, 7], ["3", False]),  # (a fraction would turn the store's feature numeric)
    (True, None, [False], [1, "True", 0.0]),
    ("02134", "categorical", ["x", 94110, 1.5], [True]),
    (94110, "categorical", ["02134", 7], [False]),
    (False, "categorical", [True], ["no", 0]),
]


def typed(first, declared):
    vt = ValueTypes()
    vt.add_feature()
    vt.set(0, "f", ValueTypes.first(first, declared), {first: 1})
    return vt


@pytest.mark.parametrize("first, declared, taken, refused", CASES)
def test_a_first_value_lets_in_its_json_type_alone(first, declared, taken, refused):
    vt = typed(first, declared)
    for v in taken:
        vt.check(0, "f", v, declared=declared)
    for v in refused:
        with pytest.raises(FeatureTypeError, match="feature 'f' is categorical with"):
            vt.check(0, "f", v, declared=declared)
    assert {type(v) for v in [first, *taken]} <= vt.ok[0]  # each type taken is checked once, then known


@pytest.mark.parametrize("first, declared, taken, refused", CASES)
def test_a_store_takes_and_refuses_the_same_values(first, declared, taken, refused):
    s = Stats(pairs=False, numeric="gaussian", types={"f": declared} if declared else None)
    s.learn_one({"f": first}, "y")
    for v in taken:
        s.learn_one({"f": v}, "y")
    for v in refused:
        with pytest.raises(FeatureTypeError):
            s.learn_one({"f": v}, "y")
    assert s.vtypes == typed(first, declared).types


def test_the_fast_lookup_hits_the_plain_types_of_the_value_type_and_forgets_a_feature_turned_numeric():
    values = {"a": 1, "b": 2}
    vt = ValueTypes()
    vt.add_feature()
    vt.add_feature()
    vt.set(1, "g", "string", values)
    assert vt.by_python[str]["g"] is values and "g" not in vt.by_python.get(int, {})
    vt.set(1, "g", None, None)  # it turned numeric: no lookup, nothing checked
    assert all("g" not in table for table in vt.by_python.values()) and vt.ok[1] == set()
    vt.check(1, "g", 2.5)  # a feature without a value type takes anything
    assert vt.types == [None, None]


def test_a_numeric_feature_counted_by_value_says_it_wants_a_number():
    error = ValueTypes.error("temp", "number", "hot", numeric=True)
    assert str(error) == "feature 'temp' is numeric: expected a number, got str 'hot'" and error.field == "temp"
