"""The schema and encoder alone (:class:`~stream_nb.stats.schema.Schema`, no store): events, runs and DataFrames
to codes, new values, features and classes, type errors and promotions, checked against a plain encoder
written out here and against a store fed the same events."""

import numpy as np
import pandas as pd
import pytest

from stream_nb.exceptions import CapacityError, FeatureTypeError
from stream_nb.stats import BINNED, CAT, GAUSS, Stats
from stream_nb.stats.schema import Schema


def first_appearance(events):
    """The columns a schema gives the categorical values of ``events``: one per (feature, value), numbered
    from 1 in order of first appearance (column 0 stands for a value never seen), written out by hand."""
    columns = {}
    for x in events:
        for name, v in x.items():
            columns.setdefault((name, v), len(columns) + 1)
    return columns


def random_events(n, seed=0):
    rng = np.random.default_rng(seed)
    names = ["colour", "size", "shape"]
    return [{name: f"{name[0]}{rng.integers(0, 3 + j)}" for j, name in enumerate(names) if rng.random() < 0.8}
            for _ in range(n)]


def test_values_get_columns_in_order_of_first_appearance_and_unseen_values_column_0():
    events = random_events(200)
    s = Schema(numeric="gaussian")
    want = first_appearance(events)
    for x in events:
        enc = s.register(x)  # (the values known first, then the new ones)
        assert dict(zip(enc.feats.tolist(), enc.cols.tolist())) == {
            s.feature_index[name]: want[(name, v)] for name, v in x.items()}
    V = len(want) + 1
    assert s.value_keys[1:] == [v for _, v in want]
    assert [s.features[f] for f in s.value_feature[1:V].tolist()] == [name for name, _ in want]
    assert s.n_values[: len(s.features)].tolist() == [sum(1 for name, _ in want if name == f) for f in s.features]
    # to predict: a value never seen is column 0, a feature never seen is ignored, nothing registers
    epoch = s.epoch
    enc = s.encode({"colour": "c0", "size": "never", "weight": "heavy"})
    assert enc.cols.tolist() == [want[("colour", "c0")], 0] and enc.unseen
    assert s.epoch == epoch and "weight" not in s.feature_index


def test_a_schema_alone_encodes_as_the_store_holding_one():
    events = random_events(150, seed=1)
    alone, store = Schema(numeric="gaussian"), Stats(pairs=True, numeric="gaussian")
    for i, x in enumerate(events):
        x = {**x, "temp": float(i % 7) + 0.5}
        y = "ab"[i % 2]
        assert np.array_equal(alone.register(x).cols, store.encode_learn(x, y).cols)
        store.add(store.encode_learn(x, y), store.class_of(y))
    V = len(alone.value_keys)
    assert (alone.features, alone.value_keys, alone.kinds) == (store.features, store.value_keys, store.kinds)
    assert np.array_equal(alone.value_feature[:V], store.value_feature[:V])
    assert alone.gslot == store.gslot and alone.kinds[alone.feature_index["temp"]] == GAUSS


def test_the_schema_asks_its_tables_for_room_before_it_grows():
    asked = []
    s = Schema(numeric="gaussian", grow=lambda c=0, v=0, f=0, g=0: asked.append(
        ((c, v, f, g), (len(s.classes), len(s.value_keys), len(s.features), s.n_gauss))))
    s.register({"outlook": "sunny", "temp": 30.0})
    assert s.add_class("no") == 0
    # each call comes before the schema holds what it makes room for
    assert asked == [((0, 0, 1, 0), (0, 1, 0, 0)), ((0, 1, 0, 0), (0, 1, 1, 0)), ((0, 0, 1, 1), (0, 2, 1, 0)),
                     ((1, 0, 0, 0), (0, 2, 2, 1))]
    s.make_room(64, 32)  # the tables' capacity, as they reallocate: the schema's arrays keep it
    assert (len(s.value_feature), len(s.n_values)) == (64, 32)
    assert s.value_feature[:2].tolist() == [-1, 0] and s.value_feature[2:].max() == -1


def test_a_bad_value_anywhere_or_a_refusal_of_the_tables_leaves_the_schema_untouched():
    s = Schema(numeric="gaussian")
    s.register({"colour": "red", "n": 3})
    before = (list(s.features), list(s.value_keys), s.epoch)
    with pytest.raises(FeatureTypeError, match="feature 'colour' is categorical with string values"):
        s.register({"new": "x", "n": 4, "colour": 7})
    with pytest.raises(FeatureTypeError, match="feature 'temp' is numeric"):
        s.register({"temp": 1.5, "colour": "blue"}) and s.register({"temp": "hot"})
    s2 = Schema(numeric="gaussian")
    s2.register({"colour": "red"})
    before = (list(s2.features), list(s2.value_keys), s2.epoch)

    def refuse(k, new):
        assert (k, new) == (2, 2)  # two values observed, both to register
        raise CapacityError("no room")

    with pytest.raises(CapacityError):
        s2.register({"colour": "blue", "shape": "round"}, room=refuse)
    assert (s2.features, s2.value_keys, s2.epoch) == before


def test_labels_are_numbered_and_typed_by_the_schema():
    s = Schema(numeric="bins")
    assert [s.add_class(y) for y in ("b", "a")] == [0, 1]
    assert (s.classes, s.class_index, s.label_type) == (["b", "a"], {"b": 0, "a": 1}, "string")


def test_a_fraction_turns_a_feature_of_integers_gaussian():
    s = Schema(numeric="gaussian")
    for v in (1, 2, 3):
        s.register({"n": v, "c": "x"})
    f = s.feature_index["n"]
    old = s.columns_of(f).tolist()
    assert s.kinds[f] == CAT and f in s.from_int
    enc = s.register({"n": 2.5, "c": "x"})  # (no tables: the schema's own promote)
    assert s.kinds[f] == GAUSS and s.promoted == {f: "gauss"} and f not in s.from_int
    assert s.value_feature[old].tolist() == [-1, -1, -1] and s.n_values[f] == 0
    assert (enc.gslots.tolist(), enc.gx.tolist()) == ([s.gslot[f]], [2.5])


@pytest.mark.parametrize("warmup, rule", [(3, "bins"), (50, "drop")])
def test_a_fraction_turns_a_feature_of_integers_binned(warmup, rule):
    s = Schema(numeric="bins", bins=2, warmup=warmup)
    for v in (1, 2, 3, 4):
        s.register({"n": v})
    f = s.feature_index["n"]
    moved = s.promote(f, np.array([1, 1, 1, 1]))
    assert moved.rule == rule and s.promoted == {f: rule} and s.kinds[f] == BINNED
    assert moved.keys.tolist() == [1.0, 2.0, 3.0, 4.0] and s.value_feature[moved.old].tolist() == [-1] * 4
    if rule == "bins":  # the edges from the four values; each old column's counts go to its bin's column
        edges = s.disc[f].edges
        assert [s.value_keys[c] for c in moved.new.tolist()] == np.searchsorted(edges, [1, 2, 3, 4], side="right").tolist()
    else:  # too few values for edges: they wait as warm-up values, and their counts go
        assert s.disc[f].edges is None and s.disc[f].buffer == [1.0, 2.0, 3.0, 4.0] and not len(moved.new)


def test_a_dataframe_and_a_run_of_dicts_encode_as_one_event_at_a_time():
    events = random_events(60, seed=2)
    s = Schema(numeric="gaussian")
    for x in events[:40]:
        s.register({**x, "temp": 1.0})
    later = [{**x, "temp": float(i)} for i, x in enumerate(events[40:])]
    one = [s.encode(x) for x in later]
    D, dfeats, G, gslots = s.runs.encode_frame(pd.DataFrame(later))
    for row, enc in zip(D, one):
        got = {int(f): int(c) for f, c in zip(dfeats, row) if c >= 0}
        assert got == dict(zip(enc.feats.tolist(), enc.cols.tolist()))
    assert G[:, 0].tolist() == [float(i) for i in range(len(later))]
    # a run of unlabeled dicts: every value known or predicted as column 0, in one run
    stop, D, G, yc = s.runs.encode_run(later, [None] * len(later), 0, False, len(later), unseen=True)
    assert stop == len(later) and yc.tolist() == [-1] * len(later)
    for row, enc in zip(D, one):
        assert sorted(c for c in row.tolist() if c >= 0) == sorted(enc.cols.tolist())


def test_a_dataframe_with_a_value_of_another_type_is_refused_and_new_values_and_classes_are_counted():
    s = Schema(numeric="gaussian")
    s.register({"colour": "red"})
    s.add_class("a")
    with pytest.raises(FeatureTypeError, match="feature 'colour' is categorical with string values"):
        s.runs.validate_frame(pd.DataFrame({"colour": ["blue", 3]}))
    new = s.runs.validate_frame(pd.DataFrame({"colour": ["red", "blue", "green"]}), ["a", "b"], count_new=True)
    assert new == (2, 1) and s.value_keys == [None, "red"]


def test_the_store_holds_no_schema_state_of_its_own():
    s = Stats(pairs=True, numeric="bins")
    s.learn_one({"a": "x", "t": 0.5}, "p")
    own = set(vars(s))
    assert not own & {"features", "feature_index", "kinds", "values", "value_keys", "value_feature", "n_values",
                      "disc", "labels", "from_int", "few", "promoted", "lookup"}
    with pytest.raises(AttributeError):
        s.features = []  # read-only: the schema changes through its own calls
