"""Two schemas side by side, alone (no store): what a merge refuses, what is new, and the other's classes,
features and values as this schema's indices, checked against lookups by name written out here and
against a schema that registered both streams one after the other."""

import numpy as np
import pytest

from stream_nb.exceptions import MergeError
from stream_nb.stats.schema import (Schema, align, check_feature, check_labels, few_overflow, index_maps,
                                    new_entries, turned_numeric)


def events(n, seed, names=("colour", "size", "shape", "mood")):
    rng = np.random.default_rng(seed)
    return [({name: f"{name[0]}{rng.integers(0, 2 + j + seed % 3)}" for j, name in enumerate(names)
              if rng.random() < 0.7}, f"k{rng.integers(0, 3 + seed % 2)}") for _ in range(n)]


def schema_of(stream):
    s = Schema(numeric="bins")
    for x, y in stream:
        s.register(x)
        if y not in s.labels.index:
            s.add_class(y)
    return s


def held(s):
    """``{(feature name, value)}`` a schema holds a column of."""
    return {(s.features[f], v) for f, v in zip(s.value_feature[1:len(s.value_keys)].tolist(), s.value_keys[1:])}


def class_adder(s):
    return lambda y: s.labels.index.get(y) if y in s.labels.index else s.add_class(y)


@pytest.mark.parametrize("seeds", [(0, 1), (2, 5), (3, 3)])
def test_align_maps_each_class_feature_and_value_to_the_same_name_here(seeds):
    a_stream, b_stream = events(60, seeds[0]), events(60, seeds[1], names=("mood", "size", "weight", "colour"))
    mine, theirs = schema_of(a_stream), schema_of(b_stream)
    values_before, classes_before = held(mine), set(mine.labels.classes)
    assert new_entries(mine, theirs) == (len(held(theirs) - values_before), len(set(theirs.labels.classes) - classes_before))
    cmap, fmap, vmap = align(mine, theirs, class_adder(mine))
    assert [mine.labels.classes[c] for c in cmap] == theirs.labels.classes
    assert [mine.features[f] for f in fmap] == theirs.features
    for col in range(1, len(theirs.value_keys)):
        name = theirs.features[theirs.value_feature[col]]
        assert mine.features[mine.value_feature[vmap[col]]] == name
        assert mine.value_keys[vmap[col]] == theirs.value_keys[col]
    # nothing held before moved, and what is new came in the other's order, as one schema of both streams has it
    both = schema_of(a_stream + b_stream)
    assert mine.features == both.features and mine.value_keys == both.value_keys
    assert mine.labels.classes == both.labels.classes
    assert held(mine) == values_before | held(theirs)
    assert new_entries(mine, theirs) == (0, 0)
    assert all(np.array_equal(m, n) for m, n in zip(index_maps(mine, theirs), (cmap, fmap, vmap)))


def test_labels_of_another_type_are_refused_naming_the_label():
    mine, theirs = schema_of([({"a": "x"}, "yes")]), schema_of([({"a": "x"}, 1)])
    with pytest.raises(MergeError, match=r"this model's labels are strings \(its first: 'yes'\) but the other model has a number label, 1"):
        check_labels(mine, theirs)
    check_labels(mine, schema_of([({"a": "y"}, "no")]))  # the same type: nothing raised


def test_a_feature_of_another_kind_or_value_type_is_refused_naming_it():
    mine, theirs = Schema(numeric="gaussian"), Schema(numeric="gaussian")
    mine.register({"a": "x", "b": 1.5})
    theirs.register({"b": "text"})
    with pytest.raises(MergeError, match=r"feature 'b' is numeric here but categorical in the other model"):
        check_feature(mine, theirs, "b")
    with pytest.raises(MergeError, match=r"feature 'a' is categorical with string values here but boolean values"):
        check_feature(mine, schema_of([({"a": True}, "y")]), "a")
    check_feature(mine, schema_of([({"a": "z"}, "y")]), "a")  # agreeing features: nothing raised
    check_feature(mine, schema_of([({"c": "z"}, "y")]), "c")  # a feature new here: nothing to agree with


def test_features_of_integers_follow_the_side_that_saw_them_turn_numeric():
    mine = Schema(numeric="bins")
    theirs = Schema(numeric="bins")
    mine.register({"n": 3, "a": "x"})
    theirs.register({"n": 4, "a": "y"})
    assert turned_numeric(mine, theirs) == [] and turned_numeric(theirs, mine) == []
    mine.promote(mine.feature_index["n"], np.ones(1, dtype=int))
    assert turned_numeric(mine, theirs) == [theirs.feature_index["n"]] and turned_numeric(theirs, mine) == []


def test_features_counted_by_value_overflow_when_their_values_together_pass_the_limit():
    mine, theirs = Schema(numeric="bins"), Schema(numeric="bins")
    for s, values in ((mine, range(0, 6)), (theirs, range(4, 10))):
        s.set_few_max(8)
        for v in values:
            s.register({"t": v + 0.5})
    assert mine.few and theirs.few
    here, there = mine.feature_index["t"], theirs.feature_index["t"]
    assert len(mine.values[here].keys() | theirs.values[there].keys()) == 10
    assert few_overflow(mine, theirs) == [(here, there)]
    mine.set_few_max(10)
    assert few_overflow(mine, theirs) == []
