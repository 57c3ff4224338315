"""The two-layer store's fine layer stays exact through promotions, EM, batches, snapshots, merges and forgetting.

Each test compares against something independent of the path under test:

- a promoted feature against the same events with the feature declared numeric from the start
  (the fine counts, the waiting events, the cut points, the predictions);
- EM's observed-only twin of the fine layer against the fine layer of ``missing=Ignore()``;
- EM's counts, where the E-step has one answer (a missing feature with one value), against
  ``missing=Ignore()`` on the events completed by hand;
- the count identities every additive store keeps (block sums, the pair diagonal), by brute force;
- the coarse layer against the sums of the fine cells;
- batches and vectorised runs against one event at a time; a snapshot or a merge against the
  model that never left.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from stream_nb import AODE, EM, KDB, MDL, SPODE, TAN, Decay, Edges, EqualFrequency, Ignore, NaiveBayes, Parents, SuperParent, Tree
from stream_nb.stats import TwoLayerStats
from test_discretise import brute_coarse, learn


def int_then_float_events(n=400, seed=3, ints=5, missing=0.0):
    """``commission`` starts with ``ints`` integers (a categorical feature of integers), then floats
    promote it; ``k`` categorical, ``b`` numeric from the start; some values missing."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(2))
        x = {"commission": int(rng.integers(3)) if i < ints else float(np.round(rng.normal(10 + 5 * y, 3), 2)),
             "k": f"k{int(rng.integers(3)) + y}", "b": float(rng.normal(y, 1.0))}
        for key in list(x):
            if rng.random() < missing:
                x[key] = None
        out.append((x, y))
    return out


def fine_counts(model):
    return model._stats.fine.counts()


def assert_counts_close(got: dict, want: dict, atol=1e-9):
    assert got.keys() == want.keys()
    for k in want:
        if isinstance(want[k], dict):
            assert_counts_close(got[k], want[k], atol)
        else:
            assert got[k] == pytest.approx(want[k], abs=atol), k


def observed_counts(store) -> dict:
    """The observed-only value and pair counts of a store (its counts without a twin), by feature and value."""
    view, C = store.observed(), store.n_classes
    cols = [(c, (store.features[store.value_feature[c]], store.value_keys[c])) for c in range(1, len(store.value_keys))
            if store.value_feature[c] >= 0]
    out = {k: view.value_count[:C, c].tolist() for c, k in cols}
    if store.pairs:
        out.update({(a, b): view.pair_count[:C, ca, cb].tolist() for ca, a in cols for cb, b in cols})
    return out


def waiting(entries, s):
    """Entries as comparable values: (feature -> value key of each column, waiting values, class, weight)."""
    fine = s.fine
    return sorted((tuple((fine.features[f], fine.value_keys[c]) for c, f in zip(e[0].tolist(), e[1].tolist())),
                   tuple((fine.features[f], x) for f, x in e[2]), e[3], e[4]) for e in entries)


#: The models that count in bins; each test gives the numeric option, FINE (16 fine bins placed from 40 values) or Edges with rest=FINE.
MAKERS = {
    "aode": lambda **kw: AODE(**kw),
    "tan": lambda **kw: TAN(search=Tree(rebuild_every=50), **kw),
    "spode": lambda **kw: SPODE(search=SuperParent(parent="k"), **kw),
    "kdb": lambda **kw: KDB(k=2, search=Parents(rebuild_every=50), **kw),
    "nb-bins": lambda **kw: NaiveBayes(**kw),
}
FINE = MDL(fine_bins=16, warmup=40)


# ---------------------------------------------------------------- promotion


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
def test_a_promoted_feature_enters_the_fine_layer_as_if_numeric_from_the_start(name, missing):
    make = MAKERS[name]
    events = int_then_float_events(300, missing=0.1)
    model = make(numeric=FINE, missing=missing)
    ref = make(numeric=FINE, missing=missing, types={"commission": "numeric"})
    for i, (x, y) in enumerate(events):
        model.learn_one(x, y)
        ref.learn_one(x, y)
        if i in (3, 20, 60):  # before the promotion, waiting for the fine edges, counted
            s, r = model._stats, ref._stats
            if i > 5:
                assert waiting(s.waiting.backlog, s) == waiting(r.waiting.backlog, r)
                assert_counts_close(observed_counts(s.fine), observed_counts(r.fine))
    s, r = model._stats, ref._stats
    assert isinstance(s, TwoLayerStats) and s.fine.kinds[s.fine.feature_index["commission"]] == 2
    assert not s.waiting.backlog and not r.waiting.backlog and not s.waiting.candidates
    # what was observed is counted alike, so MDL (which reads the observed counts) cuts alike
    assert_counts_close(observed_counts(s.fine), observed_counts(r.fine))
    assert s.cut_points() == r.cut_points()
    if missing == EM():
        # EM's expected counts differ: while commission was a category its values informed the
        # E-step, where a numeric feature in warm-up informs nothing
        assert_identities(s.fine)
        return
    assert_counts_close(s.fine.counts(), r.fine.counts())
    assert_counts_close(s.counts(), r.counts())
    for x, _ in int_then_float_events(30, seed=9, ints=0, missing=0.2):
        assert model.predict_proba_one(x) == pytest.approx(ref.predict_proba_one(x), abs=1e-9)


def test_without_the_log_the_promoted_warmup_values_would_be_lost():
    """The old way (the equal-frequency store) counts the first integers as missing for good; the
    two-layer store counts them once the fine edges exist."""
    events = int_then_float_events(200, ints=8)
    mdl = learn(TAN(numeric=MDL(fine_bins=16, warmup=40), missing=Ignore()), events)
    old = learn(TAN(numeric=EqualFrequency(warmup=40), missing=Ignore()), events)
    n = len(events)
    assert sum(sum(v.values()) for v in mdl._stats.fine.counts()["value_count"]["commission"].values()) == n
    assert sum(sum(v.values()) for v in old._stats.counts()["value_count"]["commission"].values()) == n - 40


def test_a_late_promotion_moves_every_fine_count_into_its_bin():
    """With ``warmup`` integers or more before the first fraction, the fine edges come from all of them
    and every count moves into its bin: the fine layer equals a store given those edges up front."""
    events = int_then_float_events(300, ints=60, missing=0.1)
    model = learn(MAKERS["aode"](numeric=FINE, missing=Ignore()), events)
    fine = model._stats.fine
    f = fine.feature_index["commission"]
    edges = {"commission": fine.disc[f].edges.tolist(), "b": fine.disc[fine.feature_index["b"]].edges.tolist()}
    ref = learn(MAKERS["aode"](numeric=Edges(edges, rest=FINE), missing=Ignore()), events)
    assert_counts_close(model._stats.fine.counts(), ref._stats.fine.counts())
    vc, pc = brute_coarse(model._stats)
    s = model._stats
    np.testing.assert_allclose(s.value_count[: s.n_classes, : len(s.value_keys)], vc, atol=1e-9)


# ---------------------------------------------------------------- EM


def assert_identities(store):
    """What every additive store keeps, EM's fractional counts included: a feature's value counts sum
    to its feature count, pair_feat is the block sums of pair_count, the pair diagonal is the value count."""
    C = store.n_classes
    for p in ("", "obs_") if store.keeps_observed else ("",):
        vc, fc = getattr(store, p + "value_count")[:C], getattr(store, p + "feat_count")[:C]
        for f in range(len(store.features)):
            if store.kinds[f] != 1 and not store.values[f]:  # a feature without values yet counts nothing
                assert not fc[:, f].any() and (not store.pairs or not getattr(store, p + "pair_feat")[:C, :, f].any())
            elif store.kinds[f] != 1:
                cols = store.columns_of(f)
                np.testing.assert_allclose(vc[:, cols].sum(1), fc[:, f], atol=1e-9)
                if store.pairs:
                    pcount, pfeat = getattr(store, p + "pair_count")[:C], getattr(store, p + "pair_feat")[:C]
                    np.testing.assert_allclose(pcount[:, :, cols].sum(2), pfeat[:, :, f], atol=1e-9)
        if store.pairs:
            V = len(store.value_keys)
            pcount = getattr(store, p + "pair_count")[:C, :V, :V]
            np.testing.assert_allclose(np.diagonal(pcount, axis1=1, axis2=2), vc[:, :V], atol=1e-9)


@pytest.mark.parametrize("name", ["aode", "tan", "kdb", "nb-bins"])
def test_em_observed_twin_of_the_fine_layer_is_what_ignore_counts(name):
    make = MAKERS[name]
    events = int_then_float_events(250, missing=0.15)  # warm-up values, a promotion, missing values
    em, ignore = learn(make(numeric=FINE), events), learn(make(numeric=FINE, missing=Ignore()), events)
    got, want = em._stats.fine.state()[0], ignore._stats.fine.state()[0]
    assert "obs_value_count" in got
    for k in [k for k in want if f"obs_{k}" in got]:
        np.testing.assert_allclose(got[f"obs_{k}"], want[k], rtol=0, atol=1e-9, err_msg=k)
    assert_identities(em._stats.fine)
    if em._stats.pairs:
        vc, pc = brute_coarse(em._stats)
        s = em._stats
        np.testing.assert_allclose(s.value_count[: s.n_classes, : len(s.value_keys)], vc, atol=1e-9)


@pytest.mark.parametrize("name", ["aode", "tan", "kdb"])
def test_em_counts_equal_ignore_on_the_completed_events_when_the_estep_is_certain(name):
    """A missing feature that has one value only: EM's completion is that value with weight 1, so EM's
    fine counts (warm-up events replayed once the edges exist) are ignore's on the completed events."""
    make = MAKERS[name]
    rng = np.random.default_rng(5)
    events = [({"k": "k0" if i == 0 or rng.random() < 0.7 else None, "b": float(rng.normal(y, 1)),
                "a": float(rng.normal(-y, 1))}, y) for i, y in enumerate(rng.integers(0, 2, 200).tolist())]
    filled = [({**x, "k": "k0"}, y) for x, y in events]
    em, ref = learn(make(numeric=FINE), events), learn(make(numeric=FINE, missing=Ignore()), filled)
    assert sum(1 for x, _ in events[:40] if x["k"] is None) > 5  # EM events waited for the fine edges
    assert_counts_close(em._stats.fine.counts(), ref._stats.fine.counts())


def test_em_fractional_counts_keep_the_identities_through_the_replay():
    events = int_then_float_events(250, missing=0.3)
    model = MAKERS["tan"](numeric=MDL(fine_bins=16, warmup=60))
    for i, (x, y) in enumerate(events):
        model.learn_one(x, y)
        if i in (30, 59, 61, 249):
            assert_identities(model._stats.fine)
    fvc = model._stats.fine.value_count
    assert np.any((fvc % 1 > 1e-9) & (fvc % 1 < 1 - 1e-9))  # fractional counts are there


# ---------------------------------------------------------------- batches, snapshots, merges, forgetting


@pytest.mark.parametrize("name", ["tan", "aode"])
def test_batches_and_runs_through_a_promotion_equal_one_event_at_a_time(name):
    make = MAKERS[name]
    events = int_then_float_events(300, missing=0.05)
    xs, ys = [x for x, _ in events], [y for _, y in events]
    one, many = make(numeric=FINE), make(numeric=FINE)
    want = [one.prequential_one(x, y) for x, y in events]
    got = many.prequential_many(xs, ys)
    for w, g in zip(want, got):
        assert g[0] == w.prediction and g[1] == pytest.approx(w.proba, abs=1e-9)
    assert_counts_close(many._stats.fine.counts(), one._stats.fine.counts())
    assert many._stats.cut_points() == one._stats.cut_points()
    # a data frame column holding floats is numeric from its first row (pandas makes the integers
    # floats): the promoted feature must count as it does there (under Ignore(): EM's E-step saw the
    # integers as categories, see test_a_promoted_feature_enters_the_fine_layer_as_if_numeric_from_the_start)
    one, frames = learn(make(numeric=FINE, missing=Ignore()), events), make(numeric=FINE, missing=Ignore())
    for lo in range(0, len(events), 70):
        frames.learn_many(pd.DataFrame(xs[lo : lo + 70]), pd.Series(ys[lo : lo + 70]))
    assert_counts_close(frames._stats.fine.counts(), one._stats.fine.counts())
    assert frames._stats.cut_points() == one._stats.cut_points()


@pytest.mark.parametrize("name", ["tan", "aode"])
def test_a_run_passes_the_idle_choices_of_cut_points_and_keeps_their_schedule(name, monkeypatch):
    """While the fine layer bins no feature, choosing the cut points changes nothing but the next choice's
    count, and a run passes it rather than stopping there; the schedule after each call is the one runs cut
    at each choice, and one event at a time, keep, and once a numeric feature comes the results, counts and
    cut points equal both."""
    rng = np.random.default_rng(7)
    events = []
    for i in range(900):
        y = int(rng.integers(2))
        x = {"k": f"k{int(rng.integers(3)) + y}", "j": f"j{int(rng.integers(2))}"}
        if i >= 600:  # a numeric feature from here on: the choices have edges to choose from
            x["b"] = float(np.round(rng.normal(y, 1.0), 3))
        events.append((x, y))
    make = MAKERS[name]
    one, passing, cut = (make(numeric=FINE) for _ in range(3))
    want, schedule = [], {}
    for i, (x, y) in enumerate(events, 1):
        want.append(one.prequential_one(x, y))
        schedule[i] = (one._stats.n_events, one._stats.next_choice)
    got, limits = {}, {}
    for model in (passing, cut):
        with monkeypatch.context() as patch:
            if model is cut:  # runs stop at every choice, as before a run could pass one
                patch.setattr(TwoLayerStats, "_choice_idle", lambda self: False)
            got[model], limits[model] = [], []
            for lo in range(0, len(events), 150):
                part = events[lo : lo + 150]
                limits[model].append(model._stats.learn_limit())
                got[model].extend(model.prequential_many([x for x, _ in part], [y for _, y in part]))
                assert (model._stats.n_events, model._stats.next_choice) == schedule[lo + len(part)]
    assert got[passing] == got[cut]  # to the last digit
    for w, g in zip(want, got[passing]):
        assert g[0] == w.prediction and g[1] == pytest.approx(w.proba, abs=1e-9)
    for model in (passing, cut):
        assert model._stats.cut_points() == one._stats.cut_points()
        assert_counts_close(model._stats.fine.counts(), one._stats.fine.counts())
    assert one._stats.cut_points()["b"]  # (chosen on the numeric feature's fine edges)
    # no stop while the stream is categorical, up to its first numeric value (the first call learns the first
    # events one at a time)
    assert min(limits[passing][1:5]) > 10**9 and max(limits[cut] + limits[passing][5:]) < 10**9, limits


@pytest.mark.parametrize("name", ["tan", "kdb"])
def test_a_snapshot_keeps_the_waiting_events_of_em_and_of_a_young_feature(name):
    make = MAKERS[name]
    events = int_then_float_events(300, missing=0.2, ints=30)
    model = learn(make(numeric=FINE), events[:25])  # integers: candidates logged
    assert model._stats.waiting.candidates
    arrays, meta = model.state()
    copy = type(model).from_state(arrays, json.loads(json.dumps(meta)))
    model = learn(model, events[25:39])  # promoted at 30; EM events wait for the fine edges
    copy = learn(copy, events[25:39])
    assert any(e[5] is not None for e in model._stats.waiting.backlog)
    arrays, meta = copy.state()
    copy = type(copy).from_state(arrays, json.loads(json.dumps(meta)))
    for m in (model, copy):
        learn(m, events[70:])
    assert_counts_close(copy._stats.fine.counts(), model._stats.fine.counts())
    assert copy._stats.cut_points() == model._stats.cut_points()


@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
def test_a_merge_carries_the_waiting_events(missing):
    """Two models still in warm-up merge into the one that learned both streams, the events waiting
    for the fine edges included (counted once the edges exist). Under EM the observed counts are
    exact (the expected ones differ as any merge's do: each side's E-step read its own counts)."""
    s1, s2 = int_then_float_events(15, seed=2, ints=0, missing=0.3), int_then_float_events(15, seed=4, ints=0, missing=0.3)
    make = MAKERS["aode"]
    a, b = learn(make(numeric=FINE, missing=missing), s1), learn(make(numeric=FINE, missing=missing), s2)
    assert b._stats.waiting.backlog and (missing == Ignore() or any(e[5] is not None for e in b._stats.waiting.backlog))
    a.merge(b)
    one = learn(make(numeric=FINE, missing=missing), s1 + s2)
    rest = int_then_float_events(100, seed=6, ints=0, missing=0.3)
    for m in (a, one):
        learn(m, rest)
        m._stats.rediscretise()
    assert not a._stats.waiting.backlog
    assert_counts_close(observed_counts(a._stats.fine), observed_counts(one._stats.fine))
    assert a._stats.cut_points() == one._stats.cut_points()
    if missing == Ignore():
        assert_counts_close(a._stats.fine.counts(), one._stats.fine.counts())
    assert_identities(a._stats.fine)


def test_decay_scales_the_waiting_em_events_as_it_scales_the_counts():
    events = int_then_float_events(200, missing=0.2)
    model = learn(MAKERS["tan"](numeric=FINE, forgetting=Decay(half_life=50)), events)
    assert_identities(model._stats.fine)
    vc, _ = brute_coarse(model._stats)
    s = model._stats
    np.testing.assert_allclose(s.value_count[: s.n_classes, : len(s.value_keys)], vc, atol=1e-9)
    assert np.all(s.fine.value_count >= -1e-9)


# ---------------------------------------------------------------- unlearning


@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
def test_unlearning_an_event_that_waited_for_the_fine_edges(missing):
    """An event learned during the warm-up waits in the backlog; unlearned with its receipt while it
    waits (10) or after its values were counted (20, 90), it leaves no count behind: the fine layer
    equals a store given the same fine edges up front that never learned those events."""
    from stream_nb.stats import Stats

    events = int_then_float_events(200, ints=0, missing=0.2)
    model = MAKERS["tan"](numeric=FINE, missing=missing)
    drop, receipts = {10, 20, 90}, {}
    for i, (x, y) in enumerate(events):
        receipt = model.learn_one_receipt(x, y)
        if i in drop:
            receipts[i] = receipt
        if i == 30:
            key = next(e[1][6] for e in receipts[10].entries if e[0] == "waiting")  # the receipt knows it waits
            assert any(e[6] == key for e in model._stats.waiting.backlog)
            model.unlearn_one(*events[10], receipt=receipts[10])
            assert not any(e[6] == key for e in model._stats.waiting.backlog)
    for i in (20, 90):
        model.unlearn_one(*events[i], receipt=receipts[i])
    fine = model._stats.fine
    edges = {name: fine.disc[f].edges.tolist() for f, name in enumerate(fine.features) if fine.disc[f] is not None}
    ref = Stats(pairs=True, numeric="bins", bin_edges=edges)
    for i, (x, y) in enumerate(events):
        if i not in drop:
            ref.learn_one(x, y)
    assert_counts_close(observed_counts(fine), observed_counts(ref))
    if missing == Ignore():
        assert_counts_close(fine.counts(), ref.counts())
    assert_identities(fine)
