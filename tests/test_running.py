"""prequential_many equals the event-by-event loop: predict_and_proba_one, then learn_one.

Every model scores and learns runs of events in its compiled kernel
(stream_nb/learners/_runs.py, stream_nb/kernels/), and takes the other events
one at a time. Either way the predictions,
the probabilities, the errors and the counts left behind must be those of the
plain loop. Hypothesis draws streams with new values and classes, missing
values, unlabeled events, bad values and huge numbers, which all end a run.
"""

from __future__ import annotations

import math
import operator
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
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
from stream_nb.stats import Columns, SparseTable, TwoLayerStats
from stream_nb.stats.tables import _counts as _adding
from stream_nb.stats.tables import _working

MODELS = {
    "nb": lambda: NaiveBayes(),
    "nb-ignore": lambda: NaiveBayes(alpha=0.5, missing=Ignore()),
    "nb-loss": lambda: NaiveBayes(loss={"b": {"a": 4.0}, "a": {"c": 3.0}}),
    "nb-unlabeled": lambda: NaiveBayes(missing=EM(unlabeled=True, unlabeled_weight=0.5)),
    # decay in runs: each row weighed as its event; the store renormalised every 16 half-lives (48 events)
    "nb-decay": lambda: NaiveBayes(forgetting=Decay(half_life=3.0)),
    "nb-decay-ddm": lambda: NaiveBayes(drift_detector="ddm", forgetting=Decay(half_life=5.0), missing=Ignore()),
    "aode": lambda: AODE(numeric=MDL(bins=3, warmup=5)),
    "aode-ddm": lambda: AODE(drift_detector="ddm", numeric=MDL(bins=3, warmup=5)),
    "aode-decay": lambda: AODE(forgetting=Decay(half_life=4.0), numeric=MDL(bins=3, warmup=5), search=SuperParents(m=2)),
    "aode-m": lambda: AODE(numeric=MDL(bins=3, warmup=5), missing=Ignore(), search=SuperParents(m=4)),
    "tan": lambda: TAN(numeric=MDL(bins=3, warmup=5), search=Tree(rebuild_every=7)),
    "tan-ddm": lambda: TAN(drift_detector="ddm", numeric=MDL(bins=3, warmup=5), search=Tree(rebuild_every=7)),
    "tan-decay": lambda: TAN(forgetting=Decay(half_life=4.0), numeric=MDL(bins=3, warmup=5), search=Tree(rebuild_every=7)),
    "spode": lambda: SPODE(numeric=MDL(bins=3, warmup=5), search=SuperParent(rebuild_every=9)),
    "spode-parent": lambda: SPODE(numeric=MDL(bins=3, warmup=5), search=SuperParent(parent="size", rebuild_every=9)),
    "spode-decay": lambda: SPODE(forgetting=Decay(half_life=4.0), numeric=MDL(bins=3, warmup=5), search=SuperParent(rebuild_every=9)),
    "spode-parent-decay": lambda: SPODE(forgetting=Decay(half_life=4.0), numeric=MDL(bins=3, warmup=5), search=SuperParent(parent="size", rebuild_every=9)),
    "kdb": lambda: KDB(k=2, numeric=EqualFrequency(bins=3, warmup=5), search=Parents(rebuild_every=9)),
    "kdb-decay": lambda: KDB(k=2, forgetting=Decay(half_life=4.0), numeric=EqualFrequency(bins=3, warmup=5), search=Parents(rebuild_every=9)),
    "kdb1": lambda: KDB(k=1, numeric=EqualFrequency(bins=3, warmup=5), search=Parents(rebuild_every=9)),
    "kdb3": lambda: KDB(k=3, numeric=EqualFrequency(bins=3, warmup=5), search=Parents(rebuild_every=9)),
}

values = {
    "colour": st.one_of(st.none(), st.sampled_from(["red", "green", "blue", "red", "green", ["red"]])),
    "size": st.one_of(st.none(), st.integers(0, 3)),
    "flag": st.one_of(st.none(), st.booleans()),
    # numbers on a grid: equal values, close values and spread ones, without the subnormal and
    # overflowing ranges where one-at-a-time and summed moments round apart (see `extreme` below)
    "weight": st.one_of(
        st.none(), st.just(float("nan")), st.integers(-100_000, 100_000).map(lambda i: i / 100), st.integers(-5, 5)
    ),
    "height": st.one_of(st.floats(0.0, 2.0), st.sampled_from(["tall", [1.0]])),
}
# values at the limit of a numeric value (1e100) and beyond it (refused, by both paths alike): the two
# paths round differently there (Welford one at a time, sums over a run), so they are checked for sane
# output, not for equality
extreme = dict(
    values,
    height=st.one_of(st.floats(0.0, 2.0), st.sampled_from([1e100, -1e100, 9e99, 2e100, 1e154, 1e300, -1e300])),
    weight=st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False), st.sampled_from([5e-324, -5e-324, 1e-300])),
)
events = st.lists(
    st.tuples(
        st.fixed_dictionaries({}, optional=values),
        st.sampled_from(["a", "b", "c", None, "a", "b"]),
    ),
    min_size=1,
    max_size=80,
)
extreme_events = st.lists(
    st.tuples(st.fixed_dictionaries({}, optional=extreme), st.sampled_from(["a", "b", None])), min_size=1, max_size=60
)
# complete events over few values (the bins models run them): new values, new classes, unlabeled
# events and a bad value now and then end a run
complete = {
    "colour": st.sampled_from(["red", "green", "blue", "red", "green", "red", "green"]),
    "size": st.sampled_from([0, 1, 2, 1, 0, 1, 3]),
    "flag": st.booleans(),
    "height": st.sampled_from([0.2, 0.7, 1.2, 1.7, 0.2, 1.7, 0.9]),
}
complete_events = st.lists(
    st.tuples(
        st.integers(0, 24).flatmap(  # one event in 25 has a bad value
            lambda i: st.fixed_dictionaries(dict(complete, colour=st.just([1])) if i == 0 else complete)
        ),
        st.sampled_from(["a", "b", "a", "b", "c", None]),
    ),
    min_size=5,
    max_size=80,
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def loop(model, stream):
    """The reference: the plain prequential loop, as the engine ran it one event at a time."""
    out = []
    for x, y in stream:
        try:
            result = model.predict_and_proba_one(x)
            if y is not None or model.learn_unlabeled:
                model.learn_one(x, y)
        except InvalidEventError as exc:
            result = exc
        out.append(result)
    return out


def assert_same(batched, looped):
    assert len(batched) == len(looped)
    for i, (b, r) in enumerate(zip(batched, looped)):
        if isinstance(r, InvalidEventError):
            assert type(b) is type(r) and str(b) == str(r), i
            continue
        assert not isinstance(b, Exception), (i, b)
        assert b[1].keys() == r[1].keys(), i
        for c in r[1]:
            assert b[1][c] == pytest.approx(r[1][c], rel=1e-7, abs=1e-9), (i, c)
        if b[0] != r[0]:  # a tie between classes may fall either way after rounding
            assert b[1][b[0]] == pytest.approx(r[1][r[0]], rel=1e-7, abs=1e-9), i


def assert_same_counts(a, b):
    sa, sb = a._stats, b._stats
    assert sa.classes == sb.classes and sa.features == sb.features and sa.value_keys == sb.value_keys
    C, V, F, G = sa.n_classes, len(sa.value_keys), len(sa.features), sa.n_gauss
    np.testing.assert_allclose(sa.class_count[:C], sb.class_count[:C], rtol=1e-12)
    np.testing.assert_allclose(sa.value_count[:C, :V], sb.value_count[:C, :V], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sa.feat_count[:C, :F], sb.feat_count[:C, :F], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sa.g_n[:C, :G], sb.g_n[:C, :G], rtol=1e-12)
    np.testing.assert_allclose(sa.g_mean[:C, :G], sb.g_mean[:C, :G], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sa.g_m2[:C, :G], sb.g_m2[:C, :G], rtol=1e-9, atol=1e-6)
    # EM's observed-only twin (the E-step's counts) follows the runs too
    assert sa.keeps_observed == sb.keeps_observed
    if sa.keeps_observed:
        np.testing.assert_allclose(sa.obs_value_count[:C, :V], sb.obs_value_count[:C, :V], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(sa.obs_feat_count[:C, :F], sb.obs_feat_count[:C, :F], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
@SETTINGS
@given(warm=events, stream=events)
# one value repeated in a class (the other never saw the feature): no spread, the prior (test_constant_gaussian.py)
@example(warm=[({}, "a")], stream=[({}, "a")] * 8 + [({"weight": 0.03}, "a"), ({}, "a"), ({"weight": 0.03}, "a"),
                                                     ({}, "b"), ({"weight": 0.0}, "a")])
@example(warm=[({}, "a")], stream=[({"weight": 0.03}, "a")] * 3 + [({}, "b"), ({"weight": 0.0}, "a")])
def test_prequential_many_equals_the_event_by_event_loop(name, warm, stream):
    batched, looped = MODELS[name](), MODELS[name]()
    assert_same(batched.prequential_many([x for x, _ in warm], [y for _, y in warm]), loop(looped, warm))
    assert_same(batched.prequential_many([x for x, _ in stream], [y for _, y in stream]), loop(looped, stream))
    assert_same_counts(batched, looped)


def as_columns(xs: list) -> Columns:
    names = list(dict.fromkeys(name for x in xs for name in x))
    return Columns({name: [x.get(name) for x in xs] for name in names}, len(xs))


@pytest.mark.parametrize("name", ["nb", "nb-ignore", "nb-unlabeled", "aode", "tan", "kdb"])
@SETTINGS
@given(warm=events, stream=events)
def test_events_given_as_columns_are_the_events_given_as_dicts(name, warm, stream):
    """Columns (the pending store's joined events) go through the runs' column reader: the same results and
    counts as the same events as dicts, including runs cut by new features, values and bad values."""
    by_columns, by_dicts = MODELS[name](), MODELS[name]()
    for part in (warm, stream):
        xs, ys = as_columns([x for x, _ in part]), [y for _, y in part]
        assert_same(by_columns.prequential_many(xs, ys), by_dicts.prequential_many(list(xs), ys))
    assert_same_counts(by_columns, by_dicts)
    xs, ys = as_columns([x for x, _ in warm]), [y for _, y in warm]
    assert [(i, str(e)) for i, e in by_columns.learn_events(xs, ys)] == \
        [(i, str(e)) for i, e in by_dicts.learn_events(list(xs), ys)]
    assert_same_counts(by_columns, by_dicts)


# an event's time under ``time_field="ts"``: a number, absent, or one the model refuses (bad_time)
timed_events = st.lists(
    st.tuples(
        st.fixed_dictionaries({}, optional=dict(values, ts=st.one_of(
            st.floats(0.0, 1e6), st.integers(0, 10**6), st.sampled_from([None, float("nan"), float("inf"), "9", True])
        ))),
        st.sampled_from(["a", "b", "c", None, "a", "b"]),
    ),
    min_size=1,
    max_size=80,
)


TIMED = {"nb": lambda: NaiveBayes(types={"ts": "time"}),
         # decay in event time: times up to 10^6 are 33 half-lives, so some jumps scale the cells themselves
         "nb-decay": lambda: NaiveBayes(forgetting=Decay(half_life=30000.0, time_field="ts")),
         "nb-unlabeled": lambda: NaiveBayes(types={"ts": "time"}, missing=EM(unlabeled=True, unlabeled_weight=0.5)),
         "aode": lambda: AODE(types={"ts": "time"}, numeric=MDL(bins=3, warmup=5)),
         "tan": lambda: TAN(types={"ts": "time"}, numeric=MDL(bins=3, warmup=5), search=Tree(rebuild_every=7)),
         "kdb": lambda: KDB(k=2, types={"ts": "time"}, numeric=EqualFrequency(bins=3, warmup=5), search=Parents(rebuild_every=9))}


def learn_loop(model, stream):
    """The reference of learn_events: learn_one on each event it learns; the indices refused."""
    refused = set()
    for i, (x, y) in enumerate(stream):
        if y is not None or model.learn_unlabeled:
            try:
                model.learn_one(x, y)
            except InvalidEventError:
                refused.add(i)
    return refused


@pytest.mark.parametrize("name", list(TIMED))
@SETTINGS
@given(warm=timed_events, stream=timed_events)
def test_a_time_field_without_decay_gives_the_loops_results(name, warm, stream):
    """A ``time_field`` (no feature) without decay, or with naive Bayes' decay in event time: runs read the
    events without it; prequential_many and learn_events give the loop's results, its ``bad_time`` errors at
    the same events, and its counts."""
    batched, looped, learned, reference = (TIMED[name]() for _ in range(4))
    for part in (warm, stream):
        xs, ys = [x for x, _ in part], [y for _, y in part]
        assert_same(batched.prequential_many(xs, ys), loop(looped, part))
        assert {i for i, _ in learned.learn_events(xs, ys)} == learn_loop(reference, part)
    assert_same_counts(batched, looped)
    assert_same_counts(learned, reference)
    assert "ts" not in batched._stats.features
    assert_same_decay(batched, looped)
    assert_same_decay(learned, reference)


def assert_same_decay(a, b):
    """The same decay state (inflation, halvings, clock): a run leaves it as its events one by one do."""
    fa, fb = a._forget, b._forget
    if fa is not None:
        assert (fa.inflation, fa.halvings, fa.clock) == (fb.inflation, fb.halvings, fb.clock)


def run_lengths(monkeypatch) -> list:
    """The length of every vectorised run tried from now on (0: none taken at that event), in a list."""
    from stream_nb.learners._runs import VectorisedRuns

    lengths: list = []
    run = VectorisedRuns._prequential_run

    def spy(self, xs, ys, start, out):
        stop, limited = run(self, xs, ys, start, out)
        lengths.append(stop - start)
        return stop, limited

    monkeypatch.setattr(VectorisedRuns, "_prequential_run", spy)
    return lengths


@pytest.mark.parametrize("time_field", [None, "ts"])
def test_decayed_counts_go_through_runs(time_field, monkeypatch):
    """Naive Bayes with ``half_life`` scores and learns runs (before, decay sent every event the one-event
    way), stopping where the store is renormalised, and before a jump in event time that scales the cells
    (here 5,000 half-lives, past the float range of the inflation): the loop's predictions, counts and
    decay state."""
    lengths = run_lengths(monkeypatch)
    rng = np.random.default_rng(5)
    stream = [({"colour": ["red", "blue"][i % 2], "weight": float(rng.normal(i % 3)),
                "ts": 10.0 * i + (i > 300) * 4e3 + (i > 450) * 1e5}, "ab"[i % 3 == 0] if i % 7 else None)
              for i in range(600)]
    batched, looped = (NaiveBayes(forgetting=Decay(half_life=20.0, time_field=time_field)) for _ in range(2))  # 2**16: 320 events
    xs, ys = [x if time_field else {k: v for k, v in x.items() if k != "ts"} for x, _ in stream], [y for _, y in stream]
    assert_same(batched.prequential_many(xs, ys), loop(looped, list(zip(xs, ys))))
    assert_same_counts(batched, looped)
    assert_same_decay(batched, looped)
    assert sum(n for n in lengths if n >= 2) >= 550 and max(lengths) < 600  # runs, cut by renormalisations


DECAYED = {
    "tan": lambda **kw: TAN(**kw),
    "tan-backoff": lambda **kw: TAN(search=Tree(backoff=2.0), **kw),
    "aode": lambda **kw: AODE(search=SuperParents(m=3), **kw),
    "spode": lambda **kw: SPODE(**kw),
    "spode-parent": lambda **kw: SPODE(search=SuperParent(parent="car"), **kw),
    "kdb1": lambda **kw: KDB(k=1, **kw),
    "kdb2": lambda **kw: KDB(k=2, **kw),
    "kdb3": lambda **kw: KDB(k=3, **kw),
}


@pytest.mark.parametrize("time_field", [None, "ts"])
@pytest.mark.parametrize("name", list(DECAYED))
def test_the_structured_kernels_weigh_decayed_rows(name, time_field):
    """TAN, AODE, SPODE and KDB with ``half_life`` score and learn runs in their kernels (before, decay sent
    every event the one-event way): each row scored with the smoothing of its inflation and counted with its
    weight, the runs cut where the store is renormalised or a jump in event time scales the cells; the loop's
    predictions, counts (pairs and (k+1)-tuples to the last bit), structure and decay state."""
    stream = agrawal_like(900, seed=3)
    stream = [({**x, "ts": 10.0 * i + (i > 500) * 4e3 + (i > 700) * 1e5}, y if i % 9 else None)
              for i, (x, y) in enumerate(stream)]
    xs, ys = [x if time_field else {k: v for k, v in x.items() if k != "ts"} for x, _ in stream], [y for _, y in stream]
    # 2**16: 320 events
    batched, looped = (DECAYED[name](forgetting=Decay(half_life=20.0, time_field=time_field)) for _ in range(2))
    spy = Spy(batched)
    results = []
    for lo in range(0, len(xs), 300):
        results += batched.prequential_many(xs[lo : lo + 300], ys[lo : lo + 300])
    assert_same(results, loop(looped, list(zip(xs, ys))))
    assert_same_counts(batched, looped)
    assert_same_decay(batched, looped)
    sa, sb = batched._stats, looped._stats
    np.testing.assert_array_equal(sa.pair_count, sb.pair_count)
    np.testing.assert_array_equal(sa.pair_feat, sb.pair_feat)
    if sa.tuples:
        np.testing.assert_array_equal(sa.tuple_count, sb.tuple_count)
        np.testing.assert_array_equal(sa.tuple_feat, sb.tuple_feat)
    for attribute in ("n_rebuilds", "tree", "super_parent", "structure"):
        assert getattr(batched, attribute, None) == getattr(looped, attribute, None)
    if name == "spode":  # the running scores of the candidate parents, decayed rows scored alike
        assert batched.scores == pytest.approx(looped.scores, rel=1e-9)
    assert spy.rows > 0.8 * len(stream)


@pytest.mark.parametrize("name", ["nb", "aode", "tan", "kdb"])  # learn_unlabeled takes no runs, timed or not
def test_events_with_a_time_field_go_through_the_runs_they_would_without_it(name, monkeypatch):
    """With a ``time_field`` and no decay, timed events are scored and learned in the vectorised runs the same
    events without the field take (before, a time field turned the runs off); an event whose time is refused
    ends its run as an event with a bad value does."""
    lengths = run_lengths(monkeypatch)
    plain = [({"colour": "red" if i % 3 else "blue", "size": i % 2}, "ab"[i % 2]) for i in range(80)]
    timed = [({**x, "ts": float(i)}, y) for i, (x, y) in enumerate(plain)]
    timed[45][0]["ts"] = "late"  # refused: bad_time
    plain[45][0]["colour"] = ["red"]  # refused: a bad value
    taken = []
    for stream in (timed, plain):
        model = TIMED[name]()
        lengths.clear()
        results = model.prequential_many([x for x, _ in stream], [y for _, y in stream])
        assert isinstance(results[45], InvalidEventError)
        taken.append(list(lengths))
    assert taken[0] == taken[1] and sum(taken[0]) >= 40, taken  # most events in runs (TAN: between rebuilds)


BINNED_MODELS = ["aode", "aode-m", "aode-decay", "tan", "tan-decay", "spode", "spode-parent", "spode-decay", "spode-parent-decay", "kdb", "kdb-decay", "kdb1", "kdb3"]


@pytest.mark.parametrize("name", BINNED_MODELS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(warm=complete_events, stream=complete_events)
def test_complete_streams_match_the_event_by_event_loop(name, warm, stream):
    """Mostly complete events of known values: the discretised models' runs, beside the loop."""
    batched, looped = MODELS[name](), MODELS[name]()
    for part in (warm, stream):
        assert_same(batched.prequential_many([x for x, _ in part], [y for _, y in part]), loop(looped, part))
    assert_same_counts(batched, looped)
    np.testing.assert_array_equal(batched._stats.pair_count, looped._stats.pair_count)
    if batched._stats.tuples:
        np.testing.assert_array_equal(batched._stats.tuple_count, looped._stats.tuple_count)
    assert getattr(batched, "n_rebuilds", 0) == getattr(looped, "n_rebuilds", 0)
    assert getattr(batched, "super_parent", None) == getattr(looped, "super_parent", None)
    assert getattr(batched, "structure", None) == getattr(looped, "structure", None)


@pytest.mark.parametrize("name", ["nb", "nb-ignore", "tan"])
@SETTINGS
@given(stream=extreme_events)
def test_values_beyond_the_float_range_squared_still_give_distributions(name, stream):
    batched, looped = MODELS[name](), MODELS[name]()
    got = batched.prequential_many([x for x, _ in stream], [y for _, y in stream])
    want = loop(looped, stream)
    for b, r in zip(got, want):
        assert isinstance(b, Exception) == isinstance(r, Exception)
        if not isinstance(b, Exception):
            assert b[1].keys() == r[1].keys()
            assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in b[1].values())
            assert not b[1] or sum(b[1].values()) == pytest.approx(1.0)
            assert b[0] in b[1] or (b[0] is None and not b[1])
    assert batched._stats.class_count.tolist() == looped._stats.class_count.tolist()


def agrawal_like(n, seed):
    """Complete events of known values once warmed up: long runs for the vectorised path."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(0, 3))
        x = {
            "salary": float(rng.normal(50_000 + 20_000 * y, 15_000)),
            "age": float(rng.normal(40 + 5 * y, 10)),
            "loan": float(rng.lognormal(10 + 0.2 * y, 0.5)),
            "car": int(rng.integers(0, 5)) if y else int(rng.integers(0, 3)),
            "zip": str(rng.integers(0, 4 + y)),
        }
        out.append((x, ["low", "mid", "high"][y]))
    return out


class Spy:
    """Counts the events a model scored in runs (its compiled kernel)."""

    def __init__(self, model):
        self.model, self.rows = model, 0
        kernel_run = model._kernel_run

        def counting_kernel(xs, start, stop, D, G, yc, out, decay=None):
            self.rows += len(yc)
            return kernel_run(xs, start, stop, D, G, yc, out, decay)

        model._kernel_run = counting_kernel


LONG = {
    "tan": lambda: TAN(search=Tree(rebuild_every=200)),
    "tan-ignore": lambda: TAN(missing=Ignore(), search=Tree(rebuild_every=300)),
    "aode": lambda: AODE(),
    "aode-m": lambda: AODE(missing=Ignore(), search=SuperParents(m=40)),  # rare values are no parent: some rows fall back
    "spode": lambda: SPODE(search=SuperParent(rebuild_every=250)),
    "spode-parent": lambda: SPODE(search=SuperParent(parent="car", rebuild_every=250)),
    "kdb1": lambda: KDB(k=1, search=Parents(250)),
    "kdb2": lambda: KDB(k=2, search=Parents(250)),
    "kdb3": lambda: KDB(k=3, search=Parents(250)),
    "kdb2-sparse": lambda: KDB(k=2, search=Parents(250), memory_budget=0),  # the 3-way tables sparse
}


@pytest.mark.parametrize("name", ["nb", "nb-loss", "nb-ignore", *LONG])
def test_long_runs_match_the_loop(name):
    make = LONG.get(name, MODELS.get(name))
    stream = agrawal_like(3000, seed=7)
    if name.endswith("-ignore"):  # a few missing values: they end runs, the rest still runs
        for i, (x, _) in enumerate(stream):
            if i % 97 == 0:
                x["car"] = None
    batched, looped = make(), make()
    spy = Spy(batched)
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    results = []
    for lo in range(0, len(xs), 500):  # as the engine feeds it: one poll at a time
        results += batched.prequential_many(xs[lo : lo + 500], ys[lo : lo + 500])
    assert_same(results, loop(looped, stream))
    assert_same_counts(batched, looped)
    if name in LONG:  # the pair and (k+1)-way counts, and the structure at every rebuild point
        assert batched._stats.pairs_sparse == looped._stats.pairs_sparse == name.endswith("-sparse")
        tables = ("pair_count", "pair_feat") + (("tuple_count", "tuple_feat") if batched._stats.tuples else ())
        if batched._stats.tuples:
            assert batched._stats.tuples_sparse == looped._stats.tuples_sparse == name.endswith("-sparse")
        for table in tables:
            want, got = getattr(looped._stats, table), getattr(batched._stats, table)
            if name.endswith("-sparse"):
                (want_idx, want), (got_idx, got) = want.cells(), got.cells()
                np.testing.assert_array_equal(np.stack(got_idx), np.stack(want_idx))
            np.testing.assert_array_equal(got, want)
    if name.startswith("tan"):
        assert batched.tree == looped.tree and batched.n_rebuilds == looped.n_rebuilds >= 9
    if name.startswith("spode"):
        assert batched.super_parent == looped.super_parent and batched.n_rebuilds == looped.n_rebuilds >= 9
        assert batched.scores.keys() == looped.scores.keys()
        for f, score in looped.scores.items():
            assert batched.scores[f] == pytest.approx(score, rel=1e-9)
    if name.startswith("kdb"):
        assert batched.structure == looped.structure and batched.n_rebuilds == looped.n_rebuilds >= 9
    if name.endswith("-sparse"):  # sparse tables: one event at a time (the kernels read dense tables)
        assert spy.rows == 0
    else:  # and most events went through the kernel's runs
        assert spy.rows > 0.8 * len(stream)


@pytest.mark.parametrize("make", [
    AODE, TAN, lambda **kw: TAN(loss={"low": {"high": 4.0}}, **kw), SPODE,
    lambda **kw: SPODE(search=SuperParent(parent="car"), loss={"mid": {"low": 2.7}}, **kw),
    lambda **kw: KDB(k=2, **kw), lambda **kw: KDB(k=1, loss={"low": {"high": 4.0}}, **kw),
])
@pytest.mark.parametrize("detector", ["ddm", "eddm", "adwin"])
def test_the_kernels_runs_feed_a_drift_detector(make, detector):
    """AODE's, TAN's, SPODE's and KDB's kernels feed the compiled twin of a drift detector each labelled
    event's error in order (the decision under a loss matrix too) and stop at the event it acts on, which the
    model then acts on and learns: the loop's predictions, counts, drift positions and structure (SPODE's
    running scores of its candidate parents too), with most events in the kernel's runs."""
    stream = agrawal_like(3000, seed=11)
    flip = {"low": "high", "high": "mid", "mid": "low"}
    stream = [(x, flip[y] if i >= 1500 else y) for i, (x, y) in enumerate(stream)]  # the concept changes
    batched, looped = make(drift_detector=detector), make(drift_detector=detector)
    spy = Spy(batched)
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    results = []
    for lo in range(0, len(xs), 500):
        results += batched.prequential_many(xs[lo : lo + 500], ys[lo : lo + 500])
    assert_same(results, loop(looped, stream))
    assert_same_counts(batched, looped)
    assert batched.drifts == looped.drifts and batched.drifts
    for attribute in ("n_rebuilds", "tree", "super_parent", "structure"):
        assert getattr(batched, attribute, None) == getattr(looped, attribute, None)
    if isinstance(batched, SPODE):
        assert batched.scores == pytest.approx(looped.scores, rel=1e-9)
    assert spy.rows > 0.8 * len(stream)


@pytest.mark.parametrize("name", ["kdb2-sparse"])
def test_batches_beyond_the_working_set_limit_are_added_in_pieces(name, monkeypatch):
    """A batch of rows added at once to sparse tables (KDB's EM adds the completions of an event with missing
    values, each with its posterior weight) whose 3-way keys (F^3 a row) would exceed the working-set limit is
    added in pieces of tuples, its sparse pairs row by row in compiled code (no index arrays), and the counts
    and predictions stay those of the same events added whole, under the usual limit."""
    stream = [({k: v for k, v in x.items() if not (i % 5 == 4 and k in ("car", "zip", "age"))}, y)
              for i, (x, y) in enumerate(agrawal_like(400, seed=3))]  # one event in five misses three values
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    looped = LONG[name]()
    for x, y in stream:  # under the usual limit: each batch of completions whole
        looped.learn_one(x, y)
    limit = 4 * 5**2  # 4 rows of the 5 (binned) features
    monkeypatch.setattr(_working, "WORKING_CELLS", limit)
    pieces, keys = [], []
    add_pairs, add = _adding.add_pair_rows, SparseTable.add

    def recording(pc, pf, D, *args):
        pieces.append(D.shape)
        return add_pairs(pc, pf, D, *args)

    def recording_keys(table, idx, w):  # the adds of events (not the copies of a table that grows)
        if sys._getframe(1).f_code.co_name in ("_count_sparse_tuples", "_add_tuples_sparse"):
            keys.append(np.broadcast_shapes(*(np.shape(i) for i in idx)))
        return add(table, idx, w)

    monkeypatch.setattr(_adding, "add_pair_rows", recording)
    monkeypatch.setattr(SparseTable, "add", recording_keys)
    batched = LONG[name]()
    for lo in range(0, len(xs), 200):
        batched.learn_many(pd.DataFrame(xs[lo : lo + 200]), pd.Series(ys[lo : lo + 200]))
    assert_same_counts(batched, looped)
    assert_same([batched.predict_and_proba_one(x) for x in xs[:50]], [looped.predict_and_proba_one(x) for x in xs[:50]])
    for table in ("pair_count", "pair_feat"):  # kdb2-sparse: the pair tables are sparse too (budget 0)
        got, want = getattr(batched._stats, table), getattr(looped._stats, table)
        if isinstance(want, SparseTable):
            (got_idx, got), (want_idx, want) = got.cells(), want.cells()
            np.testing.assert_array_equal(np.stack(got_idx), np.stack(want_idx))
        np.testing.assert_array_equal(got, want)
    batches = [(r, k) for r, k in pieces if r > 1]  # a complete event is added alone
    assert len(batches) >= len(xs) // 5 // 2, "the completions were not added as batches"
    if name == "kdb2-sparse":  # every key batch within the limit, and the same cells and counts as the loop
        assert keys and max(math.prod(k) for k in keys) <= limit
        for table in ("tuple_count", "tuple_feat"):
            (got_idx, got), (want_idx, want) = getattr(batched._stats, table).cells(), getattr(looped._stats, table).cells()
            got_order, want_order = np.lexsort(got_idx[::-1]), np.lexsort(want_idx[::-1])
            np.testing.assert_array_equal(np.stack(got_idx)[:, got_order], np.stack(want_idx)[:, want_order])
            np.testing.assert_array_equal(got[got_order], want[want_order])
    elif name == "kdb2":
        np.testing.assert_array_equal(batched._stats.tuple_count, looped._stats.tuple_count)


UNSEEN_MODELS = {
    "nb": lambda: NaiveBayes(),
    "nb-bins": lambda: NaiveBayes(numeric=MDL(warmup=20)),
    "nb-decay": lambda: NaiveBayes(forgetting=Decay(half_life=50.0)),
    "tan": lambda: TAN(numeric=EqualFrequency(bins=4, warmup=20), search=Tree(rebuild_every=25)),
    "tan-mdl": lambda: TAN(numeric=MDL(warmup=20), search=Tree(rebuild_every=25)),
    "aode": lambda: AODE(numeric=EqualFrequency(bins=4, warmup=20)),
    "aode-mdl": lambda: AODE(numeric=MDL(warmup=20)),
    "spode": lambda: SPODE(numeric=EqualFrequency(bins=4, warmup=20), search=SuperParent(rebuild_every=25)),
    "spode-parent": lambda: SPODE(numeric=MDL(bins=4, warmup=20), search=SuperParent(parent="colour", rebuild_every=25)),
    "kdb": lambda: KDB(k=2, numeric=EqualFrequency(bins=4, warmup=20), search=Parents(rebuild_every=25)),
}


def unseen_stream(n: int, seed: int = 3) -> tuple[list, list]:
    """A warm-up of labeled events, then ``n`` events, four in five unlabeled, a third of them with a colour
    never seen and numbers far beyond the warm-up's (bins no labeled event reached)."""
    rng = np.random.default_rng(seed)
    warm = [({"colour": ["red", "blue"][i % 2], "size": int(rng.integers(0, 2)), "height": float(rng.normal(i % 3))},
             "ab"[i % 3 == 0]) for i in range(60)]
    stream = [({"colour": ["red", "blue", f"new-{i}"][i % 3], "size": int(rng.integers(0, 4)),
                "height": float(rng.normal(0.0, 6.0))}, None if i % 5 else "ab"[i % 2]) for i in range(n)]
    return warm, stream


@pytest.mark.parametrize("name", list(UNSEEN_MODELS))
def test_unlabeled_events_with_values_never_seen_stay_in_runs(name, monkeypatch):
    """With labels coming later, most events come unlabeled, and many carry a value no label has taught yet
    (a new merchant, a bin of a number no labeled event reached). Every model scores such an event in its
    run, the value as column 0, where each ended its run before and went the one-event way: the loop's
    predictions and counts, and far fewer unlabeled events one at a time than with such values ending runs
    (``encode_run(unseen=False)``); none for naive Bayes on Gaussian numbers, whose runs nothing else cuts here."""
    from stream_nb.learners._base import BayesClassifier

    one_by_one = []
    one = BayesClassifier.prequential_one
    monkeypatch.setattr(BayesClassifier, "prequential_one",
                        lambda self, x, y: one_by_one.append(y is None) or one(self, x, y))
    warm, stream = unseen_stream(300)
    taken = {}
    for unseen in (False, True):
        with monkeypatch.context() as patch:
            batched, looped = UNSEEN_MODELS[name](), UNSEEN_MODELS[name]()
            encode_run_with(patch, type(batched._stats), unseen=unseen)
            assert_same(batched.prequential_many([x for x, _ in warm], [y for _, y in warm]), loop(looped, warm))
            one_by_one.clear()
            assert_same(batched.prequential_many([x for x, _ in stream], [y for _, y in stream]),
                        loop(looped, stream))
            assert_same_counts(batched, looped)
            taken[unseen] = sum(one_by_one)  # unlabeled events taken one at a time
    assert taken[False] >= 80 and 2 * taken[True] <= taken[False], taken
    if name in ("nb", "nb-decay"):
        assert taken[True] == 0, taken


def encode_run_with(monkeypatch, store: type, **fixed) -> None:
    """Make ``store.encode_run`` take the options ``fixed`` whatever its caller passes."""
    encode_run = store.encode_run
    monkeypatch.setattr(store, "encode_run", lambda self, *args, **kw: encode_run(self, *args, **{**kw, **fixed}))


NEW_VALUE_MODELS = {
    "nb": NaiveBayes, "nb-em": lambda: NaiveBayes(missing=EM()), "nb-decay": lambda: NaiveBayes(forgetting=Decay(half_life=40.0)),
    "nb-ddm": lambda: NaiveBayes(drift_detector="ddm"), "nb-columns": NaiveBayes,
    "tan": lambda: TAN(numeric=EqualFrequency(warmup=20), search=Tree(rebuild_every=50)),
    "aode": lambda: AODE(numeric=EqualFrequency(warmup=20)),
    "aode-em": lambda: AODE(numeric=EqualFrequency(warmup=20), missing=EM()),
    "spode": lambda: SPODE(numeric=EqualFrequency(warmup=20), search=SuperParent(rebuild_every=50)),
    "spode-parent": lambda: SPODE(numeric=EqualFrequency(warmup=20), search=SuperParent(parent="country")),
    "kdb1": lambda: KDB(k=1, numeric=EqualFrequency(warmup=20), search=Parents(rebuild_every=50)),
    "kdb2": lambda: KDB(k=2, numeric=EqualFrequency(warmup=20), search=Parents(rebuild_every=50)),  # t-way tables: the run ends
    "tan-mdl": lambda: TAN(numeric=MDL(warmup=20), search=Tree(rebuild_every=50)),  # two layers, each registering the values
    "aode-mdl": lambda: AODE(numeric=MDL(warmup=20)),
    "aode-mdl-categorical": lambda: AODE(numeric=MDL(warmup=20)),  # no numeric feature: the layers mirror each other
    "nb-bins": lambda: NaiveBayes(numeric=MDL(warmup=20)),
}


@pytest.mark.parametrize("name", list(NEW_VALUE_MODELS))
def test_labeled_events_with_new_categories_stay_in_runs(name, monkeypatch):
    """A labeled event with a categorical value never seen (a new merchant) no longer ends its run where the
    store holds it without growing a table (no t-way or sparse pair tables, room in the arrays): the run gives
    the value the column learning it would give (in row order, and within a row in the event's order of
    features, as learn_one registers them), later rows find it there, and each row's smoothing counts the
    values registered by then. The one-event path's predictions, counts, value order and drifts, and far
    fewer events one at a time than with new values ending runs (``encode_run(new_values=False)``), but where a
    table would grow (KDB's t-way tables: the run ends there, as before). A two-layer store registers the
    values in both layers."""
    from stream_nb.learners._base import BayesClassifier

    one_by_one = []
    one = BayesClassifier.prequential_one
    monkeypatch.setattr(BayesClassifier, "prequential_one", lambda self, x, y: one_by_one.append(y) or one(self, x, y))
    rng = np.random.default_rng(8)
    warm = [({"merchant": f"m{i % 2}", "country": "fr" if i % 3 else "de", "amount": float(rng.normal(i % 2, 1.0))},
             "ok" if i % 2 else "fraud") for i in range(40)]  # past the discretisers' warm-up
    stream = []
    for i in range(400):
        x = {"merchant": f"m{int(rng.integers(0, 4))}" if i % 7 else f"new-{i}",
             "country": "fr" if i % 11 else f"c{i}", "amount": float(rng.normal(i % 2, 1.0))}
        if i % 22 == 0:  # two new values in one event, features in another order: registered in this order
            x = {"country": x["country"], "amount": x["amount"], "merchant": x["merchant"]}
        y = None if i % 4 == 3 else ("fraud" if (i % 7 == 0) ^ (rng.random() < 0.2) else "ok")
        stream.append((x, y))
    if name.endswith("categorical"):
        warm = [({k: v for k, v in x.items() if k != "amount"}, y) for x, y in warm]
        stream = [({k: v for k, v in x.items() if k != "amount"}, y) for x, y in stream]
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    if name == "nb-columns":  # the events as columns: each in the columns' order of features
        xs = as_columns(xs)
        stream = list(zip(list(xs), ys))

    taken = {}
    for new_values in (False, True):
        with monkeypatch.context() as patch:
            batched, looped = NEW_VALUE_MODELS[name](), NEW_VALUE_MODELS[name]()
            if not new_values:  # as the store would without registering values in runs
                encode_run_with(patch, type(batched._stats), new_values=False)

            def steps(events):  # the one-event path prequential_many takes
                return [(step.prediction, step.proba) for step in (one(looped, x, y) for x, y in events)]

            assert_same(batched.prequential_many([x for x, _ in warm], [y for _, y in warm]), steps(warm))
            one_by_one.clear()
            results = batched.prequential_many(xs, ys)
            taken[new_values] = len(one_by_one)
            assert_same(results, steps(stream))
            assert_same_counts(batched, looped)
            assert batched.drifts == looped.drifts
    assert len(batched._stats.value_keys) > 60 and taken[False] >= 50, taken
    if name == "kdb2":  # t-way tables: the run ends there, as before
        assert taken[True] == taken[False], taken
    else:  # runs still cut where the arrays grow (doubling), the decay renormalises, the detector acts, the
        # structure is rebuilt, the cut points are chosen again or a number falls in a fine bin never seen
        assert taken[False] - taken[True] >= 40, taken  # of the 66 labeled events with a new value
        if name in ("nb", "nb-em", "nb-columns", "aode"):  # one layer: nothing else cuts these
            assert 5 * taken[True] <= taken[False], taken


@pytest.mark.parametrize("name", ["aode", "tan", "spode", "kdb"])
def test_a_run_that_stops_at_its_length_is_followed_by_another_run(name, monkeypatch):
    """A run stops where the model must look at its counts (a rebuild, a two-layer store's choice of cut
    points): the next event starts another run instead of going the one-event way, so a warm stream of known
    values and classes takes hardly an event one at a time, with the loop's results and counts."""
    from stream_nb.learners._base import BayesClassifier

    one_by_one = []
    one = BayesClassifier.prequential_one
    monkeypatch.setattr(BayesClassifier, "prequential_one", lambda self, x, y: one_by_one.append(y) or one(self, x, y))
    rng = np.random.default_rng(5)
    stream = [({"colour": ["red", "green", "blue"][int(rng.integers(0, 3))], "size": "sml"[int(rng.integers(0, 3))],
                "flag": "yn"[i % 2]}, "ab"[int(rng.integers(0, 2))]) for i in range(300)]
    batched, looped = MODELS[name](), MODELS[name]()
    lengths = run_lengths(monkeypatch)
    assert_same(batched.prequential_many([x for x, _ in stream[:40]], [y for _, y in stream[:40]]),
                loop(looped, stream[:40]))
    one_by_one.clear()
    lengths.clear()
    assert_same(batched.prequential_many([x for x, _ in stream[40:]], [y for _, y in stream[40:]]),
                loop(looped, stream[40:]))
    assert_same_counts(batched, looped)
    schedule = operator.attrgetter("next_choice", "n_events")  # a two-layer store's choices of cut points
    assert not isinstance(batched._stats, TwoLayerStats) or schedule(batched._stats) == schedule(looped._stats)
    if name == "aode":  # no rebuild, and on categorical features a choice of cut points has nothing to change: a
        # run passes it (TwoLayerStats.learn_limit) and the whole call is one run
        assert lengths == [260] and not one_by_one, (one_by_one, lengths)
        return
    # only a two-layer store's single events left between two stops go the one-event way (it registers values
    # in its own order): without the next run after a stop, about one event a stop would
    assert len(one_by_one) < len(lengths) / 4 and len(lengths) > 5, (one_by_one, lengths)
    assert sum(lengths) + len(one_by_one) == 260
