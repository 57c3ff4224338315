"""SPODE (and KDB) against brute force, and the choice of the super-parent."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pandas as pd
import pytest
from river import checks

import reference as ref
from stream_nb import SPODE, EqualFrequency, Ignore, SuperParent, Tree
from stream_nb.kernels import compiled
from test_learners import assert_proba_close, learn, random_events


@pytest.mark.parametrize("parent", ["f0", "f2"])
def test_spode_equals_the_seeds_formula_with_its_parent_observed_or_missing(parent):
    events = random_events(200, n_feats=4, missing=0.15, seed=51)
    model = learn(SPODE(missing=Ignore(), search=SuperParent(parent=parent)), events)
    for x, _ in random_events(40, n_feats=4, missing=0.3, seed=52) + [({"f1": "new"}, None)]:
        assert_proba_close(model.predict_proba_one(x), ref.spode_posterior(events, x, parent, 1.0))


def test_spode_chooses_the_parent_with_the_lowest_prequential_log_loss():
    events = random_events(300, n_feats=4, seed=53)
    model = SPODE(search=SuperParent(rebuild_every=0))
    # the running scores, recomputed independently: each event scored by each candidate before learning it
    want = {f: [] for f in ("f0", "f1", "f2", "f3")}
    for i, (x, y) in enumerate(events):
        if i:
            for f in want:
                p = ref.spode_posterior(events[:i], x, f, 1.0)
                if y in p:
                    want[f].append(-math.log(p[y]))
        model.learn_one(x, y)
    scores = model.scores
    for f, losses in want.items():
        assert scores[f] == pytest.approx(np.mean(losses), rel=1e-9)
    assert model.super_parent is None  # not chosen before a rebuild: naive Bayes
    model.rebuild()
    assert model.super_parent == min(scores, key=scores.get)
    x = events[0][0]
    assert_proba_close(model.predict_proba_one(x), ref.spode_posterior(events, x, model.super_parent, 1.0), 1e-10)


def test_spode_learn_many_equals_learn_one():
    events = random_events(240, n_feats=4, missing=0.1, seed=54)
    one = learn(SPODE(search=SuperParent(rebuild_every=50)), events)
    many = SPODE(search=SuperParent(rebuild_every=50))
    for lo in range(0, len(events), 70):
        chunk = events[lo : lo + 70]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
    assert one.super_parent == many.super_parent and one.scores == pytest.approx(many.scores)
    X = pd.DataFrame([x for x, _ in events[:30]])
    got = many.predict_proba_many(X)
    for i, (x, _) in enumerate(events[:30]):
        assert_proba_close(got.iloc[i].to_dict(), one.predict_proba_one(x), 1e-9)


# SPODE's and KDB's E-steps and imputations are checked against enumeration in test_em.py


def test_spode_state_round_trips():
    import json

    model = learn(SPODE(search=SuperParent(rebuild_every=40)), random_events(120, seed=57))
    arrays, meta = model.state()
    back = SPODE.from_state(arrays, json.loads(json.dumps(meta)))
    assert back.super_parent == model.super_parent and back.scores == model.scores
    x = random_events(1, seed=58)[0][0]
    assert back.predict_proba_one(x) == model.predict_proba_one(x)


@pytest.mark.slow
@pytest.mark.parametrize("model", [SPODE(**p) for p in SPODE._unit_test_params()], ids=repr)
def test_river_check_estimator(model):
    checks.check_estimator(model)


# ---------------------------------------------------------------- KDB

from stream_nb import KDB, TAN, Parents  # noqa: E402
from stream_nb.exceptions import CapacityError  # noqa: E402


@pytest.mark.parametrize("k,missing", [(1, 0.0), (2, 0.0), (3, 0.0), (2, 0.3)])
def test_kdb_structure_follows_sahamis_rule_by_brute_force(k, missing):
    # with missing values, the reference counts the observed values: the structure
    # comes from the observed counts, not from the ones EM imputed under the old structure
    events = random_events(300, n_feats=5, n_vals=3, missing=missing, seed=61)
    model = learn(KDB(k=k, search=Parents(0)), events)
    model.rebuild()
    order, parents = ref.kdb_structure(events, [f"f{i}" for i in range(5)], k)
    assert list(model.structure) == order
    assert model.structure == parents


@pytest.mark.parametrize("k", [0, 1, 2])
def test_kdb_posterior_equals_brute_force_complete_and_with_missing_values(k):
    events = random_events(250, n_feats=4, n_vals=3, seed=62)
    model = learn(KDB(k=k, missing=Ignore(), search=Parents(rebuild_every=0)), events)
    model.rebuild()
    feats = [f"f{i}" for i in range(4)]
    parents = model.structure
    for x, _ in random_events(25, n_feats=4, n_vals=3, seed=63) + random_events(25, n_feats=4, missing=0.4, seed=64):
        assert_proba_close(model.predict_proba_one(x), ref.kdb_posterior(events, x, parents, 1.0, feats), 1e-10)


def test_kdb_with_k1_builds_tans_tree_when_the_orders_agree():
    events = random_events(400, n_feats=6, n_vals=3, seed=65)
    tan = learn(TAN(search=Tree(rebuild_every=0)), events)
    tan.rebuild()
    kdb = learn(KDB(k=1, search=Parents(0)), events)
    kdb.rebuild(order=[tan.root] + [child for _, child, _ in tan.tree])  # the tree's top-down order
    assert {c: p for p, c, _ in tan.tree} == {c: ps[0] for c, ps in kdb.structure.items() if ps}
    assert kdb.structure[tan.root] == []


def test_kdb_refuses_a_table_past_max_table_cells_and_changes_nothing():
    import pickle

    model = KDB(k=2, max_table_cells=7000)  # 3 classes x 13 values^3 = 6,591 cells after learning
    events = random_events(50, n_feats=4, n_vals=3, seed=66)
    learn(model, events)
    before = pickle.dumps(model)
    with pytest.raises(CapacityError, match="max_table_cells=7,000") as e:
        model.learn_one({f"f{i}": f"new{i}" for i in range(4)}, "c0")
    assert e.value.reason == "table_full"
    assert pickle.dumps(model) == before
    cells = model._stats.table_cells()
    assert cells == model._stats.n_classes * len(model._stats.value_keys) ** 3 <= 7000


@pytest.mark.parametrize("k", [1, 2])
def test_kdb_learn_many_equals_learn_one(k):
    events = random_events(300, n_feats=4, n_vals=3, missing=0.1, seed=67)
    one = learn(KDB(k=k, search=Parents(60)), events)
    many = KDB(k=k, search=Parents(60))
    for lo in range(0, len(events), 80):
        chunk = events[lo : lo + 80]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
    assert one.structure == many.structure
    for key, arr in one._stats.state()[0].items():
        np.testing.assert_allclose(many._stats.state()[0][key], arr, atol=1e-9, err_msg=key)
    got = many.predict_proba_many(pd.DataFrame([x for x, _ in events[:20]]))
    for i, (x, _) in enumerate(events[:20]):
        assert_proba_close(got.iloc[i].to_dict(), one.predict_proba_one(x), 1e-9)


def test_kdb_merge_equals_training_on_both_streams():
    a_ev, b_ev = random_events(150, seed=70), random_events(100, n_vals=4, seed=71)
    a, b = learn(KDB(missing=Ignore(), search=Parents(rebuild_every=0)), a_ev), learn(KDB(missing=Ignore(), search=Parents(rebuild_every=0)), b_ev)
    seq = learn(KDB(missing=Ignore(), search=Parents(rebuild_every=0)), a_ev + b_ev)
    a.merge(b)
    for key, arr in seq._stats.state()[0].items():
        np.testing.assert_array_equal(a._stats.state()[0][key], arr, err_msg=key)


def test_kdb_state_round_trips():
    import json

    model = learn(KDB(k=2, search=Parents(40)), random_events(120, seed=72))
    back = KDB.from_state(*[model.state()[0], json.loads(json.dumps(model.state()[1]))])
    assert back.structure == model.structure
    x = random_events(1, seed=73)[0][0]
    assert back.predict_proba_one(x) == model.predict_proba_one(x)


@pytest.mark.slow
@pytest.mark.parametrize("model", [KDB(**p) for p in KDB._unit_test_params()], ids=repr)
def test_kdb_river_check_estimator(model):
    checks.check_estimator(model)


def test_kdb_predicts_when_a_missing_parent_has_no_value_yet():
    # found by tests/test_running.py: "weight" (numeric, still warming up its bins) became a
    # parent while it had no value, and summing it out over its (empty) values raised ValueError
    model = KDB(k=2, numeric=EqualFrequency(bins=3, warmup=5), search=Parents(rebuild_every=9))
    stream = [({}, "a")] * 6 + [
        ({"weight": 1}, "a"), ({"colour": "red", "height": 0.0}, "a"), ({"weight": 0.0}, "b"),
        ({"colour": None, "weight": 0.01}, "a"),
    ]
    for x, y in stream:
        model.learn_one(x, y)
    p = model.predict_proba_one({"colour": "red"})
    assert set(p) == {"a", "b"} and sum(p.values()) == pytest.approx(1.0)
    assert p["a"] > p["b"]


def test_kdb_em_with_a_parent_waiting_for_its_bins_reads_sparse_and_dense_tables_alike():
    # EM's enumeration scored completions whose parent had no code yet (an integer feature turned numeric,
    # its values kept until its bin edges exist): the sparse table raised ValueError, the dense one read
    # the last value's cell; the term is left out, as for a missing value
    rng = random.Random(3)
    stream = []
    for i in range(320):
        x = {f"c{j}": rng.choice("abcd"[: 2 + j % 3]) for j in range(4) if rng.random() > 0.1}
        if rng.random() < 0.4:
            x["ints"] = rng.randint(0, 4) if i < 160 else rng.random() * 4  # turns numeric halfway
        stream.append((x, "p" if x.get("c0") == "a" and rng.random() < 0.7 else rng.choice("pqr")))
    sparse = KDB(k=2, memory_budget=0, search=Parents(rebuild_every=50))
    dense = KDB(k=2, search=Parents(rebuild_every=50))
    for x, y in stream:
        sparse.learn_one(x, y)
        dense.learn_one(x, y)
    assert sparse._stats.tuples_sparse and not dense._stats.tuples_sparse
    for x, _ in stream[-30:]:
        assert_proba_close(sparse.predict_proba_one(x), dense.predict_proba_one(x))


@pytest.mark.parametrize("t", [3, 4])
@pytest.mark.parametrize("missing", [False, True])
def test_a_batchs_t_way_counts_equal_adding_each_cell_of_each_row(t, missing):
    """A batch's t-way counts (``Stats.add_many``: learn_many, KDB's completions, unlearning) added by the
    compiled loop, against the brute force: every ordered t-tuple of each row's observed values, and every
    (t-1)-tuple with each observed feature, added one row at a time with its weight."""
    rng = np.random.default_rng(t)
    C, k, per, rows = 3, 5, 2, 60  # five features of two values each: values 0..9, feature f's are 2f and 2f + 1
    V = k * per
    D = np.arange(k) * per + rng.integers(0, per, size=(rows, k))
    if missing:
        D[rng.random((rows, k)) < 0.2] = -1
    yc = rng.integers(0, C, size=rows)
    w = rng.uniform(0.5, 1.5, rows)
    tc0 = rng.integers(0, 4, size=(C,) + (V,) * t).astype(float)
    tf0 = rng.integers(0, 4, size=(C,) + (V,) * (t - 1) + (k,)).astype(float)
    want_tc, want_tf = tc0.copy(), tf0.copy()
    for r in range(rows):
        seen = np.flatnonzero(D[r] >= 0)
        for cell in itertools.product(seen, repeat=t):
            want_tc[(yc[r],) + tuple(D[r, list(cell)])] += w[r]
            want_tf[(yc[r],) + tuple(D[r, list(cell[:-1])]) + (cell[-1],)] += w[r]
    tc, tf = tc0.copy(), tf0.copy()
    compiled().add_tuple_rows(D, np.arange(k), yc, w, t, V, k, tc.reshape(-1), tf.reshape(-1))
    np.testing.assert_array_equal(tc, want_tc)
    np.testing.assert_array_equal(tf, want_tf)


@pytest.mark.parametrize("missing", [False, True])
def test_a_batchs_pair_counts_equal_adding_each_pair_of_each_row(missing):
    """A batch's pair counts added by the compiled loop against the brute force: every ordered pair of each
    row's observed values, and each observed value with every observed feature, one row at a time."""
    rng = np.random.default_rng(7)
    C, k, per, rows = 3, 12, 2, 400
    V = k * per
    D = np.arange(k) * per + rng.integers(0, per, size=(rows, k))
    if missing:
        D[rng.random((rows, k)) < 0.2] = -1
    yc = rng.integers(0, C, size=rows)
    w = rng.uniform(0.5, 1.5, rows)
    pc0, pf0 = rng.integers(0, 5, size=(C, V, V)).astype(float), rng.integers(0, 5, size=(C, V, k)).astype(float)
    want_pc, want_pf = pc0.copy(), pf0.copy()
    for r in range(rows):
        for a in np.flatnonzero(D[r] >= 0):
            for b in np.flatnonzero(D[r] >= 0):
                want_pc[yc[r], D[r, a], D[r, b]] += w[r]
                want_pf[yc[r], D[r, a], b] += w[r]
    pc, pf = pc0.copy(), pf0.copy()
    compiled().add_pair_rows(D, np.arange(k), yc, w, pc, pf)
    np.testing.assert_array_equal(pc, want_pc)
    np.testing.assert_array_equal(pf, want_pf)
