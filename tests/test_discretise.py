"""The two-layer MDL discretiser (stream_nb.stats.store._fine, _coarse, _mdl) against independent references.

- the MDL splitter against a textbook implementation over the raw sorted values (Fayyad and Irani
  1993, written the way Weka's ``Discretize.cutPointsForSubset`` walks the instances), and against
  Weka's own cut points on the same events when a JDK and the peers' jars are there;
- the coarse counts against brute-force sums of the fine cells;
- the warm-up backlog against a store whose fine edges existed from the start;
- merge == single pass, snapshot round trip, vectorised == one event at a time, batch == rows.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import math
import random
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from river.datasets import synth

import stream_nb
from stream_nb import AODE, EM, KDB, MDL, SPODE, TAN, Edges, EqualFrequency, Ignore, NaiveBayes
from stream_nb.exceptions import ConfigError, UnlearnError
from stream_nb.stats import Stats, TwoLayerStats, mdl_cuts
from stream_nb.tools.evaluate import format_cut_points
from stream_nb.tools.inspect_snapshot import describe, run_inspect

ROOT = Path(__file__).resolve().parent.parent



# ---------------------------------------------------------------- the MDL splitter


def textbook_cuts(values, labels):
    """Fayyad and Irani's recursive MDL discretisation over raw (value, class) instances, written
    from the paper as Weka walks it: instances sorted by value, a candidate cut between two
    different consecutive values, the first of equally good cuts, N - 1 candidates in the code."""
    classes = sorted(set(labels))
    inst = sorted(zip(values, [classes.index(y) for y in labels]))

    def ent(counts):
        n = sum(counts)
        return -sum(c / n * math.log2(c / n) for c in counts if c > 0) if n else 0.0

    def cuts(lo, hi):
        total = [0.0] * len(classes)
        for _, c in inst[lo:hi]:
            total[c] += 1
        n = hi - lo
        prior = ent(total)
        best, best_e, best_l = None, prior, None
        left = [0.0] * len(classes)
        for i in range(lo, hi - 1):
            left[inst[i][1]] += 1
            if inst[i][0] < inst[i + 1][0]:
                right = [t - a for t, a in zip(total, left)]
                e = (sum(left) * ent(left) + sum(right) * ent(right)) / n
                if e < best_e:
                    best, best_e, best_l = i, e, list(left)
        if best is None or prior - best_e <= 0:
            return []
        best_r = [t - a for t, a in zip(total, best_l)]
        k, k1, k2 = (sum(1 for c in a if c > 0) for a in (total, best_l, best_r))
        delta = math.log2(3**k - 2) - (k * prior - k1 * ent(best_l) - k2 * ent(best_r))
        if not prior - best_e > (math.log2(n - 1) + delta) / n:
            return []
        cut = (inst[best][0] + inst[best + 1][0]) / 2
        return cuts(lo, best + 1) + [cut] + cuts(best + 1, hi)

    return cuts(0, len(inst))


def ours_on_raw(values, labels):
    """mdl_cuts over one interval per distinct value; a boundary is the midpoint of the values beside it."""
    distinct = sorted(set(values))
    classes = sorted(set(labels))
    counts = np.zeros((len(distinct), len(classes)))
    for v, y in zip(values, labels):
        counts[distinct.index(v), classes.index(y)] += 1
    return [(distinct[b - 1] + distinct[b]) / 2 for b in mdl_cuts(counts)]


@pytest.mark.parametrize("seed", range(12))
def test_mdl_cuts_equal_the_textbook_procedure_on_raw_values(seed):
    rng = random.Random(seed)
    n = rng.randint(20, 300)
    k = rng.randint(2, 4)
    # a noisy step function of the value, with ties, so there is something to find and something to refuse
    steps = sorted(rng.uniform(0, 10) for _ in range(rng.randint(0, 3)))
    values = [round(rng.uniform(0, 10), rng.choice([0, 1, 2])) for _ in range(n)]
    labels = [
        (sum(v > s for s in steps) if rng.random() > rng.choice([0.05, 0.3, 0.6]) else rng.randrange(k)) % k
        for v in values
    ]
    want = textbook_cuts(values, labels)
    assert ours_on_raw(values, labels) == pytest.approx(want, abs=1e-12)


def test_mdl_cuts_find_clean_splits_and_refuse_noise():
    assert mdl_cuts([[10, 0], [0, 10]]) == [1]
    assert mdl_cuts([[10, 0, 0], [0, 10, 0], [0, 0, 10]]) == [1, 2]
    assert mdl_cuts([[5, 5], [5, 5]]) == []
    assert mdl_cuts([[7, 0]]) == []
    # an empty fine bin between two others: the cut goes midway
    assert mdl_cuts([[10, 0], [0, 0], [0, 0], [0, 10]]) == [2]
    with pytest.raises(ValueError, match="intervals, classes"):
        mdl_cuts([1, 2, 3])


def _peers():
    spec = importlib.util.spec_from_file_location(
        "bench_peers", ROOT / "bench" / "peers" / "__init__.py", submodule_search_locations=[]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_mdl_cuts_equal_wekas_on_the_same_events(tmp_path):
    peers = _peers()
    reason = peers.ready()
    if reason:
        pytest.skip(reason)
    events = list(synth.RandomTree(seed_tree=1, seed_sample=1, n_classes=3, n_num_features=4, n_cat_features=4,
                                   n_categories_per_feature=3).take(3000))
    attrs, target = peers.declare(events, None)
    arff = peers.write_arff(tmp_path / "rt.arff", events, attrs, target, "RandomTree")
    weka = peers.cut_points(arff, len(events))
    numeric = [a.name for a in attrs if a.kind == "numeric"]
    assert numeric
    for name in numeric:
        values = [x[name] for x, _ in events]
        labels = [y for _, y in events]
        assert ours_on_raw(values, labels) == pytest.approx(weka[str(name)], rel=1e-9, abs=1e-12), name


# ---------------------------------------------------------------- the two layers


def numeric_events(n, seed, missing=0.0, n_classes=3):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(n_classes))
        x = {
            "a": float(rng.normal(y, 1.0)),
            "b": float(rng.uniform(0, 1) + (0.5 if y == 1 else 0.0)),
            "c": str(rng.choice(["p", "q", "r"] if y else ["p", "p", "s"])),
        }
        for k in ("a", "b", "c"):
            if rng.random() < missing:
                x[k] = None
        out.append((x, f"k{y}"))
    return out


def learn(model, events):
    for x, y in events:
        model.learn_one(x, y)
    return model


def brute_coarse(s: TwoLayerStats):
    """The coarse value and pair counts recomputed by summing fine cells, one cell at a time."""
    fine = s.fine
    C = fine.n_classes
    where = {}  # fine column -> coarse column
    for f in range(len(fine.features)):
        for key, fcol in fine.values[f].items():
            if s.disc[f] is None:
                where[fcol] = s.values[f][key]
                continue
            x_in_bin = fine.disc[f].edges[key - 1] if key else -np.inf  # the bin's lower edge
            ckey = int(np.searchsorted(s.disc[f].edges, x_in_bin, side="right")) if key else 0
            where[fcol] = s.values[f].get(ckey)
    V = len(s.value_keys)
    vc, pc = np.zeros((C, V)), np.zeros((C, V, V))
    for a, ca in where.items():
        vc[:, ca] += fine.value_count[:C, a]
        for b, cb in where.items():
            pc[:, ca, cb] += fine.pair_count[:C, a, b]
    return vc, pc


@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
def test_coarse_counts_are_the_sums_of_fine_cells(missing):
    model = learn(AODE(numeric=MDL(fine_bins=16, warmup=30), missing=missing), numeric_events(600, seed=1, missing=0.1))
    s = model._stats
    assert isinstance(s, TwoLayerStats) and set(s.cut_points()) == {"a", "b"}
    vc, pc = brute_coarse(s)
    C, V = s.n_classes, len(s.value_keys)
    np.testing.assert_allclose(s.value_count[:C, :V], vc, atol=1e-9)
    np.testing.assert_allclose(s.pair_count[:C, :V, :V], pc, atol=1e-9)
    # every coarse edge is a fine edge
    for f, name in enumerate(s.features):
        if s.disc[f] is not None:
            assert set(s.disc[f].edges.tolist()) <= set(s.fine.disc[f].edges.tolist())


def test_warmup_values_are_counted_once_the_edges_exist():
    events = numeric_events(400, seed=2, missing=0.05)
    model = learn(TAN(numeric=MDL(fine_bins=16, warmup=50), missing=Ignore()), events)
    fine = model._stats.fine
    assert not model._stats.waiting.backlog
    # the same stream into a store whose edges existed from the start: the same counts
    edges = {name: fine.disc[f].edges.tolist() for f, name in enumerate(fine.features) if fine.disc[f] is not None}
    ref = Stats(pairs=True, numeric="bins", bin_edges=edges)
    for x, y in events:
        ref.learn_one(x, y)
    assert fine.counts() == ref.counts()
    assert fine.n_seen == ref.n_seen == 400
    # and the old discretiser loses them
    old = learn(TAN(numeric=EqualFrequency(warmup=50), missing=Ignore()), events)
    observed = sum(1 for x, _ in events if x["a"] is not None)
    assert sum(sum(v.values()) for v in old._stats.counts()["value_count"]["a"].values()) == observed - 50
    assert sum(sum(v.values()) for v in model._stats.counts()["value_count"]["a"].values()) == observed


@pytest.mark.parametrize("cls", [AODE, TAN, SPODE, KDB, NaiveBayes])
def test_merge_equals_one_pass_over_both_streams(cls):
    base, s1, s2 = numeric_events(120, seed=3), numeric_events(200, seed=4, missing=0.1), numeric_events(150, seed=5)
    a = learn(cls(numeric=MDL(fine_bins=16, warmup=40)), base + s1)
    b = learn(cls(numeric=MDL(fine_bins=16, warmup=40)), base + s2)
    one = learn(cls(numeric=MDL(fine_bins=16, warmup=40)), base + s1 + base + s2)
    a.merge(b)
    for m in (a, one):
        m._stats.rediscretise()
        m._merged()
    assert a._stats.cut_points() == one._stats.cut_points()
    for k, v in one._stats.counts().items():
        assert a._stats.counts()[k] == pytest.approx(v) if k == "class_count" else True
    ca, co = a._stats.counts()["value_count"], one._stats.counts()["value_count"]
    assert set(ca) == set(co)
    for f in co:
        for v in co[f]:
            assert ca[f][v] == pytest.approx(co[f][v], abs=1e-9)
    for x, _ in numeric_events(40, seed=6, missing=0.2):
        pa, po = a.predict_proba_one(x), one.predict_proba_one(x)
        assert pa == pytest.approx(po, abs=1e-9)


@pytest.mark.parametrize("cls", [AODE, TAN, KDB])
def test_snapshot_round_trip_then_learning_goes_on_alike(cls):
    events = numeric_events(300, seed=7, missing=0.1)
    model = learn(cls(numeric=MDL(fine_bins=16, warmup=40)), events[:130])  # 130: some warm-up values may still wait
    copy = type(model).from_state(*model.state())
    assert copy.state()[1] == model.state()[1]
    for x, y in events[130:]:
        assert copy.predict_proba_one(x) == pytest.approx(model.predict_proba_one(x), abs=1e-12)
        model.learn_one(x, y)
        copy.learn_one(x, y)
    assert copy._stats.cut_points() == model._stats.cut_points()


def test_a_state_with_a_bad_backlog_is_refused():
    model = learn(AODE(numeric=MDL(warmup=500)), numeric_events(50, seed=8))
    arrays, meta = model.state()
    assert meta["stats"]["two_layer"]["backlog"]
    meta["stats"]["two_layer"]["backlog"][0][3] = 99
    with pytest.raises(ValueError, match="backlog\\[0\\]: expected a class index"):
        AODE.from_state(arrays, meta)
    del meta["stats"]["two_layer"]
    with pytest.raises(ValueError, match="fine layer"):
        AODE.from_state(arrays, meta)


@pytest.mark.parametrize("cls,missing", [(TAN, EM()), (TAN, Ignore()), (AODE, EM()), (NaiveBayes, EM())],
                         ids=["tan-em", "tan-ignore", "aode-em", "nb-em"])
def test_vectorised_runs_equal_one_event_at_a_time(cls, missing):
    events = numeric_events(900, seed=9, missing=0.02)
    xs, ys = [x for x, _ in events], [y for _, y in events]
    one, many = cls(numeric=MDL(fine_bins=16, warmup=40), missing=missing), cls(numeric=MDL(fine_bins=16, warmup=40), missing=missing)
    want = [one.prequential_one(x, y) for x, y in events]
    got = many.prequential_many(xs, ys)
    for w, g in zip(want, got):
        assert g[0] == w.prediction
        assert g[1] == pytest.approx(w.proba, abs=1e-9)
    assert many._stats.cut_points() == one._stats.cut_points()
    assert many._stats.n_events == one._stats.n_events == 900


def test_learn_many_equals_learn_one_rows():
    events = numeric_events(500, seed=10)
    rows = learn(TAN(numeric=MDL(fine_bins=16, warmup=40), missing=Ignore()), events)
    batch = TAN(numeric=MDL(fine_bins=16, warmup=40), missing=Ignore())
    X = pd.DataFrame([x for x, _ in events])
    y = pd.Series([y for _, y in events])
    for lo in range(0, 500, 100):
        batch.learn_many(X.iloc[lo:lo + 100], y.iloc[lo:lo + 100])
    assert batch._stats.cut_points() == rows._stats.cut_points()
    assert batch._stats.fine.counts() == rows._stats.fine.counts()
    for x, _ in events[:50]:
        assert batch.predict_proba_one(x) == pytest.approx(rows.predict_proba_one(x), abs=1e-9)


def test_discretiser_settings_are_checked_and_equal_frequency_stays():
    # the keywords of the earlier release are checked as well (before they are mapped), for the release they
    # still work in
    with pytest.raises(ConfigError, match="discretiser: expected one of 'mdl', 'equal_frequency'"):
        TAN(discretiser="quantile")
    with pytest.raises(ConfigError, match="fine_bins"):
        AODE(fine_bins=1)
    with pytest.raises(ConfigError, match="numeric: expected one of 'gaussian', 'bins'"):
        NaiveBayes(numeric="histogram")
    with pytest.raises(ConfigError, match="fine_bins"):
        MDL(fine_bins=1)
    assert type(TAN(numeric=EqualFrequency())._stats) is Stats
    assert type(NaiveBayes()._stats) is Stats
    assert type(NaiveBayes(numeric=MDL())._stats) is TwoLayerStats
    for cls in (AODE, TAN, SPODE, functools.partial(NaiveBayes, numeric=MDL())):  # the default
        assert type(cls()._stats) is TwoLayerStats and cls().discretiser == "mdl"
    # KDB's default stays equal-frequency (its fine layer's (k+1)-way table is slow), mdl by name
    assert type(KDB()._stats) is Stats and KDB().discretiser == "equal_frequency"
    assert type(KDB(numeric=MDL())._stats) is TwoLayerStats
    # bin_edges still fix the edges, in both layers
    model = learn(AODE(numeric=Edges(edges={"a": [0.0, 1.0]}, rest=MDL(warmup=20))), numeric_events(200, seed=11))
    assert model._stats.cut_points()["a"] == [0.0, 1.0]


def test_unlearn_with_receipts_equals_the_model_that_never_saw_the_events():
    missing = Ignore()  # under EM the later events' expected counts depend on the dropped ones
    events = numeric_events(400, seed=12, missing=0.1)
    drop = set(range(150, 400, 7))  # after the warm-up, so both models place the same fine edges
    a, b = TAN(numeric=MDL(fine_bins=16, warmup=40), missing=missing), TAN(numeric=MDL(fine_bins=16, warmup=40), missing=missing)
    receipts = {}
    for i, (x, y) in enumerate(events):
        receipts[i] = a.learn_one_receipt(x, y)
    for i, (x, y) in enumerate(events):
        if i not in drop:
            b.learn_one(x, y)
    for i in sorted(drop, reverse=True):
        a.unlearn_one(*events[i], receipt=receipts[i])
    assert a.n_learned == pytest.approx(b.n_learned)
    fa, fb = a._stats.fine.counts()["value_count"], b._stats.fine.counts()["value_count"]
    for f in fb:
        for v in fb[f]:
            assert fa[f][v] == pytest.approx(fb[f][v], abs=1e-9)
    for m in (a, b):
        m._stats.rediscretise()
    assert a.cut_points() == b.cut_points()


def test_unlearn_without_a_receipt_takes_back_what_the_journal_names_or_refuses():
    events = [({"c": c, "x": x}, y) for c, x, y in [("p", 0.5, "u"), ("q", 3.5, "v")] * 60]
    model = learn(AODE(numeric=MDL(bins=1, fine_bins=4, warmup=20), missing=Ignore()), events)
    ref = learn(AODE(numeric=MDL(bins=1, fine_bins=4, warmup=20), missing=Ignore()), events[:-1])
    model.unlearn_one(*events[-1])  # two values, one fine bin in each coarse bin: exact
    assert model._stats.fine.counts() == ref._stats.fine.counts()
    wide = learn(AODE(numeric=MDL(bins=1, fine_bins=8, warmup=20), missing=Ignore()),
                 [({"x": float(i % 40)}, "u" if i % 40 < 20 else "v") for i in range(200)])
    before = wide.state()
    with pytest.raises(UnlearnError, match="'x'.*fine bins.*receipt"):
        wide.unlearn_one({"x": 3.0}, "u")
    assert wide.state()[1] == before[1]


def test_unlearn_with_a_receipt_takes_back_em_expected_counts_exactly():
    events = numeric_events(300, seed=13, missing=0.2)
    model = learn(AODE(numeric=MDL(fine_bins=16, warmup=40)), events[:250])
    before = model._stats.fine.state()[0]
    x, y = {"a": None, "b": 0.7, "c": None}, "k1"
    receipt = model.learn_one_receipt(x, y)
    assert any(e[0] == "fine" and e[1][0] == "expected" for e in receipt.entries)
    model.unlearn_one(x, y, receipt=receipt)
    after = model._stats.fine.state()[0]
    for k, v in before.items():
        np.testing.assert_allclose(after[k], v, atol=1e-9, err_msg=k)


def test_snapshot_inspect_and_the_tools_show_the_cut_points(tmp_path, capsys):
    model = learn(TAN(numeric=MDL(fine_bins=16, warmup=40)), numeric_events(300, seed=14))
    cuts = model.cut_points()
    assert set(cuts) == {"a", "b"} and all(cuts.values())
    path = tmp_path / "m.snb"
    stream_nb.save(model, path)
    assert stream_nb.load(path).cut_points() == cuts  # a snapshot keeps them
    assert describe(stream_nb.snapshots.read(path))["model"]["cut_points"] == cuts
    assert run_inspect(argparse.Namespace(path=str(path), json=False)) == 0
    out = capsys.readouterr().out
    for name, edges in cuts.items():
        assert f"cuts       {name}: " + ", ".join(f"{c:.6g}" for c in edges) in out
    text = format_cut_points(model)
    assert text.count("\n") == 1 and f"({len(cuts['a']) + 1} bins)" in text
