"""prequential_many over a pandas DataFrame equals the event-by-event loop over its rows.

A DataFrame's columns are encoded with numpy (stream_nb/stats/schema/_runs.py), runs of
plain rows are scored and learned as from dicts, and every other row (a new value,
class or feature, a missing value under EM, a bad value) goes the one-event way with
its row as a dict. The reference is the loop a user writes over ``X.to_dict("records")``
(pandas' missing values, ``pd.NA`` included, as None): the same predictions,
probabilities, errors per row and final counts.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream_nb import (
    AODE,
    EM,
    KDB,
    MDL,
    SPODE,
    TAN,
    Decay,
    EqualFrequency,
    Ignore,
    NaiveBayes,
    Parents,
    SuperParent,
    SuperParents,
    Tree,
)
from stream_nb.exceptions import InvalidEventError
from stream_nb.stats import Columns
from test_running import assert_same, assert_same_counts, loop  # noqa: E402  (the reference loop and checks)

MODELS = {
    "nb": lambda: NaiveBayes(),
    "nb-ignore": lambda: NaiveBayes(alpha=0.5, missing=Ignore()),
    "nb-loss": lambda: NaiveBayes(loss={"b": {"a": 4.0}, "a": {"c": 3.0}}),
    "nb-unlabeled": lambda: NaiveBayes(missing=EM(unlabeled=True, unlabeled_weight=0.5)),
    "nb-bins": lambda: NaiveBayes(numeric=MDL(bins=3, warmup=5)),
    "nb-decay": lambda: NaiveBayes(forgetting=Decay(half_life=3.0)),
    "aode": lambda: AODE(numeric=MDL(bins=3, warmup=5)),
    "aode-ignore": lambda: AODE(numeric=MDL(bins=3, warmup=5), missing=Ignore(), search=SuperParents(m=4)),
    "tan": lambda: TAN(numeric=MDL(bins=3, warmup=5), search=Tree(rebuild_every=7)),
    "spode": lambda: SPODE(numeric=MDL(bins=3, warmup=5), search=SuperParent(rebuild_every=9)),
    "kdb": lambda: KDB(k=2, numeric=EqualFrequency(bins=3, warmup=5), search=Parents(rebuild_every=9)),
}

# Rows as users hand them to pd.DataFrame: pandas chooses each column's dtype (strings, ints turned floats
# by a missing value, booleans with None as objects, lists as objects).
row_values = {
    "colour": st.one_of(st.none(), st.sampled_from(["red", "green", "blue", "red", "green", ["red"]])),
    "size": st.one_of(st.none(), st.integers(0, 3)),
    "flag": st.one_of(st.none(), st.booleans()),
    "weight": st.one_of(
        st.none(), st.just(float("nan")), st.integers(-100_000, 100_000).map(lambda i: i / 100), st.integers(-5, 5)
    ),
    "height": st.one_of(st.floats(0.0, 2.0), st.sampled_from(["tall", 1e200, float("inf")])),
    "code": st.sampled_from([1, "1", True, 2, "x"]),  # one column of three types: each row's own type
}
labels = st.sampled_from(["a", "b", "c", None, "a", "b", float("nan")])
rows = st.lists(st.tuples(st.fixed_dictionaries({}, optional=row_values), labels), min_size=1, max_size=60)


def typed_frame(draw, n: int) -> pd.DataFrame:
    """A frame of columns of one dtype each, in a drawn order: int64, bool, float64 (NaN), strings (None),
    pandas' nullable Int64 and boolean (``pd.NA``), categorical and string dtypes, and an int64 column of
    many values."""
    columns = {
        "n": pd.Series(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype="int64"),
        "b": pd.Series(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool),
        "x": pd.Series(draw(st.lists(st.one_of(st.floats(-3, 3), st.just(float("nan"))), min_size=n, max_size=n)),
                       dtype="float64"),
        "s": pd.Series(draw(st.lists(st.sampled_from(["u", "v", "w", None]), min_size=n, max_size=n)), dtype=object),
        "k": pd.Series(draw(st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=n, max_size=n)), dtype="Int64"),
        "t": pd.Series(draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n)), dtype="int64"),
        "c": pd.Series(draw(st.lists(st.sampled_from(["p", "q", None]), min_size=n, max_size=n)), dtype="category"),
        "g": pd.Series(draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n)), dtype="boolean"),
        "r": pd.Series(draw(st.lists(st.sampled_from(["u", "z", None]), min_size=n, max_size=n)), dtype="str"),
    }
    names = draw(st.permutations(list(columns)))
    keep = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    return pd.DataFrame({name: columns[name] for name in names if name in keep})


@st.composite
def typed_frames(draw):
    n = draw(st.integers(1, 50))
    return typed_frame(draw, n), draw(st.lists(labels, min_size=n, max_size=n))


@st.composite
def matrix_frames(draw):
    """A frame of one dtype (integers, booleans or floats: one array underneath), its columns in a drawn
    order, values and classes appearing for the first time anywhere in it."""
    n, k = draw(st.integers(1, 40)), draw(st.integers(1, 5))
    dtype = draw(st.sampled_from(["int64", "int8", "bool", "float64"]))
    cell = {"int64": st.integers(-2, 3), "int8": st.integers(0, 60), "bool": st.booleans(),
            "float64": st.one_of(st.sampled_from([0.5, 1.0, float("inf"), float("nan")]), st.floats(-2, 2))}[dtype]
    names = draw(st.permutations(["a", "b", "c", "d", "e"]))[:k]
    rows = draw(st.lists(st.lists(cell, min_size=k, max_size=k), min_size=n, max_size=n))
    return pd.DataFrame(rows, columns=names).astype(dtype), draw(st.lists(labels, min_size=n, max_size=n))


def records(X: pd.DataFrame) -> list:
    """The rows a user's loop takes: ``to_dict("records")`` (NaN kept), ``pd.NA`` as None: pandas' missing
    value, which ``learn_one`` would refuse."""
    return [{k: None if v is pd.NA else v for k, v in row.items()} for row in X.to_dict("records")]


def reference(model, X: pd.DataFrame, ys: list) -> list:
    return loop(model, list(zip(records(X), [None if isinstance(y, float) and math.isnan(y) else y for y in ys])))


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", list(MODELS))
@SETTINGS
@given(warm=rows, stream=rows)
def test_a_dataframe_gives_the_loop_over_its_rows(name, warm, stream):
    """Frames built from dicts by pandas, a warm batch then a stream batch with new features, values and
    classes: prequential_many equals the loop over the rows, entry by entry (errors too), and the counts."""
    framed, looped = MODELS[name](), MODELS[name]()
    for part in (warm, stream):
        X, ys = pd.DataFrame([x for x, _ in part], index=range(len(part))), [y for _, y in part]
        assert_same(framed.prequential_many(X, ys), reference(looped, X, ys))
    assert_same_counts(framed, looped)


@pytest.mark.parametrize("name", ["nb", "nb-ignore", "nb-bins", "aode", "tan", "kdb"])
@SETTINGS
@given(warm=typed_frames(), stream=typed_frames(), as_series=st.booleans())
def test_typed_columns_give_the_loop_over_their_rows(name, warm, stream, as_series):
    """Columns of one dtype each (int64, bool, float64, strings, nullable Int64), labels as a list or as a
    Series: the ints of an int64 column stay ints beside a float column, a boolean column is no number."""
    framed, looped = MODELS[name](), MODELS[name]()
    for X, ys in (warm, stream):
        given_ys = pd.Series(ys, dtype=object) if as_series else ys
        assert_same(framed.prequential_many(X, given_ys), reference(looped, X, ys))
    assert_same_counts(framed, looped)


@pytest.mark.parametrize("name", ["nb", "nb-bins", "aode", "tan", "kdb"])
@SETTINGS
@given(frames=st.lists(matrix_frames(), min_size=1, max_size=3))
def test_frames_of_one_dtype_give_the_loop_over_their_rows(name, frames):
    """Integer and boolean frames take the one gather through a table of each column's values (kept from one
    frame to the next of the same values); float frames a column at a time."""
    framed, looped = MODELS[name](), MODELS[name]()
    for X, ys in frames:
        assert_same(framed.prequential_many(X, ys), reference(looped, X, ys))
    assert_same_counts(framed, looped)


def run_lengths(monkeypatch) -> list:
    """The length of every vectorised run from now on (0: none taken at that event)."""
    from stream_nb.learners._runs import VectorisedRuns

    lengths: list = []
    run = VectorisedRuns._prequential_run

    def spy(self, xs, ys, start, out):
        stop, limited = run(self, xs, ys, start, out)
        lengths.append(stop - start)
        return stop, limited

    monkeypatch.setattr(VectorisedRuns, "_prequential_run", spy)
    return lengths


@pytest.mark.parametrize("name", ["nb", "aode"])
def test_a_row_of_a_new_class_starts_no_run_and_no_encoding(name, monkeypatch):
    """A stream's first rows each bring a class (LED's ten): a run tried at such a row stops there before the
    frame's columns are encoded again for it (the schema changed with the class before), with the loop's
    results."""
    from stream_nb.stats.schema import RunEncoder

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.integers(0, 2, size=(200, 6)), columns=[f"f{j}" for j in range(6)])
    ys = [f"c{i}" for i in range(8)] + rng.choice([f"c{i}" for i in range(8)], size=192).tolist()
    ys[5], ys[120] = ys[4], "late"  # (a run may start at row 5; row 120's class comes mid-frame)
    refreshed = []
    refresh = RunEncoder._refresh

    def spy(self, xs, ys, state, start, complete, unseen):
        refreshed.append(start)
        return refresh(self, xs, ys, state, start, complete, unseen)

    monkeypatch.setattr(RunEncoder, "_refresh", spy)
    model, looped = MODELS[name](), MODELS[name]()
    assert_same(model.prequential_many(X, ys), reference(looped, X, ys))
    assert_same_counts(model, looped)
    new = {i for i, y in enumerate(ys) if y not in ys[:i]}
    assert refreshed and not new & set(refreshed), (sorted(new), refreshed)


@pytest.mark.parametrize("name", ["nb", "aode", "kdb"])
def test_a_new_value_or_class_mid_frame_ends_a_run_and_only_its_column_is_encoded_again(name, monkeypatch):
    """A frame of 24 binary columns (LED's shape) with a new value at row 300 and a new class at row 400: the
    rows are scored and learned in the runs the same rows as dicts take (but for the two rows, which the
    dicts' runs may learn in place, and the row after each); after the new value only its column is encoded
    again."""
    from stream_nb.stats.schema import RunEncoder

    rng = np.random.default_rng(7)
    A = rng.integers(0, 2, size=(600, 24))
    A[300, 5] = 2  # a value never seen
    X = pd.DataFrame(A, columns=[f"f{j}" for j in range(24)]).astype({"f3": float, "f4": bool})
    ys = rng.choice(["a", "b", "c"], size=600).tolist()
    ys[400] = "d"  # a class never seen
    X_all, ys_all = X, ys
    warm = MODELS[name]()
    warm.prequential_many(X.iloc[:100], ys[:100])
    looped = MODELS[name]()
    loop(looped, list(zip(records(X.iloc[:100]), ys[:100])))
    lengths = run_lengths(monkeypatch)
    encoded = []
    column = RunEncoder._encode_array

    def spy(self, name, f, values, start, state, complete):
        encoded.append((name, start))
        return column(self, name, f, values, start, state, complete)

    monkeypatch.setattr(RunEncoder, "_encode_array", spy)
    X, ys = X.iloc[100:], ys[100:]
    assert_same(warm.prequential_many(X, ys), reference(looped, X, ys))
    assert_same_counts(warm, looped)
    in_runs = sum(n for n in lengths if n >= 2)
    lengths.clear()
    as_dicts = MODELS[name]()
    as_dicts.prequential_many(records(X_all.iloc[:100]), ys_all[:100])
    lengths.clear()
    as_dicts.prequential_many(records(X), ys)
    assert in_runs >= sum(n for n in lengths if n >= 2) - 4 and in_runs >= 400, (in_runs, lengths)
    assert ("f5", 201) in encoded and not [e for e in encoded if e[1] > 0 and e[0] != "f5"], encoded


def test_a_bad_value_is_that_rows_error_and_the_rest_goes_on():
    model, looped = NaiveBayes(), NaiveBayes()
    X = pd.DataFrame({"sky": ["sun", "rain", "sun", "sun"], "temp": [20.5, 18.0, 1e300, 21.0]})
    ys = ["play", "stay", "play", "play"]
    out = model.prequential_many(X, ys)
    assert isinstance(out[2], InvalidEventError) and "temp" in str(out[2])
    assert out[3][0] == "play"
    assert_same(out, reference(looped, X, ys))
    assert_same_counts(model, looped)


@pytest.mark.parametrize("name", ["nb", "nb-loss", "aode", "tan", "kdb"])
def test_a_dataframes_results_are_the_list_the_same_events_as_dicts_give(name):
    """prequential_many over a DataFrame returns a sequence built from the kernel's arrays: each element the
    very ``(prediction, proba)`` pair (or error) the same events as dicts give, built once when first read;
    it equals that list, and its ``predictions`` are the pairs' predictions (None for an error)."""
    from stream_nb.learners._results import PrequentialResults

    rng = np.random.default_rng(11)
    n = 700
    X = pd.DataFrame({f"f{j}": rng.choice(["p", "q", "r"], n) for j in range(5)})
    X.loc[300, "f2"] = "new"  # a value never seen: that row goes the one-event way
    X["temp"] = rng.normal(size=n)
    X.loc[450, "temp"] = 1e300  # refused
    ys = rng.choice(["a", "b", "c"], n).tolist()
    ys[500] = "d"  # a class never seen
    framed, listed = MODELS[name](), MODELS[name]()
    results = framed.prequential_many(X, ys)
    expected = listed.prequential_many(records(X), ys)
    assert isinstance(results, PrequentialResults) and type(expected) is list and len(results) == n
    assert results.predictions == [None if isinstance(r, InvalidEventError) else r[0] for r in expected]
    assert isinstance(results[450], InvalidEventError) and str(results[450]) == str(expected[450])
    expected[450] = results[450]  # (two errors are equal only if they are one object, in lists too)
    assert results == expected and expected == results and not results != expected
    for got, want in zip(results, expected):
        if not isinstance(want, InvalidEventError):
            assert type(got) is tuple and type(got[1]) is dict and got == want
            assert all(type(p) is float for p in got[1].values())
    assert results[10] is results[10] and results[-1] == expected[-1] and results[5:9] == expected[5:9]
    assert repr(results) == repr(expected) and results.predictions == [r[0] for r in expected[:450]] + [None] + [
        r[0] for r in expected[451:]]
    assert list(results) + [] == results + [] == [] + results == expected
    assert results != expected[:-1] and results != expected[:-1] + [(None, {})]
    assert_same_counts(framed, listed)


@pytest.mark.parametrize("as_frame", [False, True])
def test_an_infinite_category_is_that_rows_error_in_a_run_too(as_frame):
    """An unlabeled event with an infinite value of a categorical feature is refused in a run as by the loop
    (it is no category), not scored as a value never seen."""
    xs = [{"a": 1.0}, {"a": 2.0}, {"a": 1.0}, {"a": float("inf")}, {"a": 2.0}]
    ys = ["p", "q", "p", None, "q"]
    model, looped = NaiveBayes(types={"a": "categorical"}), NaiveBayes(types={"a": "categorical"})
    out = model.prequential_many(pd.DataFrame(xs) if as_frame else xs, ys)
    assert isinstance(out[3], InvalidEventError)
    assert_same(out, loop(looped, list(zip(xs, ys))))


def test_ints_beside_floats_stay_ints():
    """A row of a frame of int and float columns reads each value from its own column: 2 stays the
    category 2 (pandas' row would make it 2.0, a new numeric feature)."""
    model = NaiveBayes()
    X = pd.DataFrame({"n": [1, 2, 1, 2], "x": [0.5, 1.5, 0.25, 1.0]})
    model.prequential_many(X, ["a", "b", "a", "b"])
    assert model._stats.vtypes[model._stats.feature_index["n"]] == "number"
    assert model._stats.value_keys[1:] == [1, 2]


def test_labels_as_an_array_and_a_series_with_missing_ones():
    """Labels as a numpy array or a Series: NaN and None are unlabeled (predicted, not learned)."""
    X = pd.DataFrame({"a": ["x", "y", "x", "y", "x"]})
    for ys in (np.array([1.0, 2.0, np.nan, 1.0, 2.0]), pd.Series(["p", None, "q", "p", None])):
        framed, looped = NaiveBayes(), NaiveBayes()
        assert_same(framed.prequential_many(X, ys), reference(looped, X, list(ys)))
        assert_same_counts(framed, looped)


@pytest.mark.parametrize("name", ["nb", "aode", "kdb"])
def test_learn_events_and_blocks_take_a_dataframe(name):
    X = pd.DataFrame({"a": ["x", "y", "x", "y", "z", "x"], "n": [1, 2, 1, 3, 1, 2]})
    ys = ["p", "q", "p", None, "q", "p"]
    a, b = MODELS[name](), MODELS[name]()
    assert a.learn_events(X, ys) == b.learn_events(records(X), ys)
    assert_same_counts(a, b)
    blocks = MODELS[name]().prequential_blocks(X, ys)
    assert sum(item.stop - item.start if hasattr(item, "stop") else 1 for item in blocks) == len(X)


@pytest.mark.parametrize("half_life", [None, 40.0])
def test_a_time_column_is_each_rows_time(half_life):
    """With ``time_field``, the frame's time column gives each row its time (decay in event time), as the
    loop over the rows; a time the model refuses is that row's error; a missing one (NaN) is no time."""
    rng = np.random.default_rng(3)
    n = 300
    X = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "v": rng.normal(size=n), "ts": np.arange(n) * 3.0})
    X.loc[100, "ts"] = np.inf  # refused: bad_time
    ys = rng.choice(["p", "q"], n).tolist()
    # without decay the time field is the event's time all the same: a column of type time
    kw = dict(types={"ts": "time"}) if half_life is None else dict(forgetting=Decay(half_life=half_life, time_field="ts"))
    framed, looped = (NaiveBayes(**kw) for _ in range(2))
    results = framed.prequential_many(X, ys)
    assert isinstance(results[100], InvalidEventError) and results[100].reason == "bad_time"
    assert_same(results, reference(looped, X, ys))
    assert_same_counts(framed, looped)
    X.loc[7, "ts"] = np.nan
    rows = records(X)
    del rows[7]["ts"]
    framed, looped = (NaiveBayes(**kw) for _ in range(2))
    assert_same(framed.prequential_many(X, ys), loop(looped, list(zip(rows, ys))))


def test_unlearn_events_takes_back_a_dataframe():
    """learn_events then unlearn_events of one DataFrame leave the counts of a model that never saw it."""
    X = pd.DataFrame({"a": ["x", "y", "x", "y"], "n": [1, 2, 1, 2], "t": [0.5, 1.5, -1.0, 2.0]})
    ys = ["p", "q", "p", "q"]
    before, model = NaiveBayes(), NaiveBayes()
    for m in (before, model):
        m.learn_events(X.iloc[:2], ys[:2])
    model.learn_events(X.iloc[2:], ys[2:])
    model.unlearn_events(X.iloc[2:], ys[2:])
    assert_same_counts(model, before)


def test_columns_of_arrays_are_the_events_as_dicts():
    """Columns of numpy arrays (not only a DataFrame's) go through the same numpy encoding."""
    xs = Columns({"a": np.array(["x", "y", None, "x"], dtype=object), "t": np.array([0.5, np.nan, 1.5, 2.0]),
                  "n": np.array([1, 2, 2, 1])})
    assert xs[1] == {"a": "y", "n": 2} and type(xs[1]["n"]) is int
    ys = ["p", "q", "p", "q"]
    framed, looped = AODE(), AODE()
    assert_same(framed.prequential_many(xs, ys), loop(looped, list(zip(list(xs), ys))))
    assert_same_counts(framed, looped)


def test_the_same_columns_given_twice_with_other_labels():
    """What a call encoded of a Columns is not read by the next call, whose labels (or arrays) may differ."""
    xs = Columns({"a": np.array(["x", "y", "x", "y"], dtype=object), "n": np.array([1, 2, 1, 2])})
    framed, looped = NaiveBayes(), NaiveBayes()
    for ys in (["p", "q", "p", "q"], ["q", "p", "q", "p"], [None, "p", None, "r"]):
        assert_same(framed.prequential_many(xs, ys), loop(looped, list(zip(list(xs), ys))))
    assert_same_counts(framed, looped)


def test_a_frame_with_a_column_twice_is_refused():
    X = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(ValueError, match="column 'a' twice"):
        NaiveBayes().prequential_many(X, ["p"])


# Events of four integer features, as a user's stream of dicts gives them (LED's kind), now and then one
# that the integer matrix of a window cannot hold: a missing value (None or the key left out), an extra
# feature, a value never seen, a boolean, a float, a string, an int beyond int64, a list (an error), or the
# keys in another order.
int_event = st.fixed_dictionaries({k: st.integers(0, 2) for k in "abcd"})
odd_event = st.one_of(
    int_event.map(lambda x: {**x, "b": None}),
    int_event.map(lambda x: {k: v for k, v in x.items() if k != "c"}),
    int_event.map(lambda x: {**x, "e": 1}),
    int_event.map(lambda x: {**x, "a": 7}),
    int_event.map(lambda x: {**x, "d": True}),
    int_event.map(lambda x: {**x, "d": 1.0}),
    int_event.map(lambda x: {**x, "c": "1"}),
    int_event.map(lambda x: {**x, "a": 2**70}),
    int_event.map(lambda x: {**x, "b": [1]}),
    int_event.map(lambda x: dict(reversed(list(x.items())))),
)


@st.composite
def int_stream(draw):
    """Up to 120 integer events, a few odd ones among them at drawn places (so that most windows hold none),
    labels of two classes and now and then a third (new mid-batch) or none."""
    n = draw(st.integers(1, 120))
    events = draw(st.lists(int_event, min_size=n, max_size=n))
    for _ in range(draw(st.integers(0, 3))):
        events[draw(st.integers(0, n - 1))] = draw(odd_event)
    labels = draw(st.lists(st.sampled_from(["a", "b"] * 8 + ["c", None]), min_size=n, max_size=n))
    return list(zip(events, labels))


@pytest.mark.parametrize("name", ["nb", "nb-ignore", "nb-loss", "aode", "tan", "kdb"])
@SETTINGS
@given(warm=int_stream(), stream=int_stream())
def test_dicts_of_integers_give_the_loop(name, warm, stream):
    """A list of dicts of integers is read a window at a time into one integer matrix (``_window_matrix``);
    any event it cannot hold sends the window the value-by-value way. Either way each result equals the
    one-event loop's (rel 1e-9), errors included, and so do the counts."""
    batched, looped = MODELS[name](), MODELS[name]()
    for part in (warm, stream):
        xs, ys = [x for x, _ in part], [y for _, y in part]
        got, want = batched.prequential_many(xs, ys), loop(looped, part)
        assert len(got) == len(want)
        for i, (b, r) in enumerate(zip(got, want)):
            if isinstance(r, InvalidEventError):
                assert type(b) is type(r) and str(b) == str(r), i
                continue
            assert b[1].keys() == r[1].keys(), i
            for c in r[1]:
                assert b[1][c] == pytest.approx(r[1][c], rel=1e-9, abs=1e-12), (i, c)
    assert_same_counts(batched, looped)


def test_a_window_of_plain_integer_dicts_is_read_as_one_matrix(monkeypatch):
    """The usual stream of dicts of integers goes through the matrix; a window with a value never seen does
    not (it is met value by value, and learned in the run), and the results equal the loop's."""
    from stream_nb.stats.schema import RunEncoder  # (the schema's encoder of runs)

    taken = []
    window = RunEncoder._window_matrix

    def spy(self, xs, start, stop):
        D = window(self, xs, start, stop)
        taken.append(D is not None)
        return D

    monkeypatch.setattr(RunEncoder, "_window_matrix", spy)
    rng = np.random.default_rng(3)
    xs = [dict(zip("abcd", row)) for row in rng.integers(0, 2, size=(400, 4)).tolist()]
    ys = rng.choice(["p", "q"], size=400).tolist()
    xs[300] = {**xs[300], "b": 5}
    model, looped = NaiveBayes(), NaiveBayes()
    assert_same(model.prequential_many(xs[:200], ys[:200]), loop(looped, list(zip(xs[:200], ys[:200]))))
    assert taken and taken[-1]
    taken.clear()
    assert_same(model.prequential_many(xs[200:], ys[200:]), loop(looped, list(zip(xs[200:], ys[200:]))))
    assert taken[0] is False  # the window holding the new value
    assert_same_counts(model, looped)
