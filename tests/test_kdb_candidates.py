"""Candidate parents: KDB past its memory budget keeps the (k+1)-way counts of each attribute's candidate
parents only (stats/_tuple_candidates.py).

Checked against brute force: every cell the t-way tables hold equals the count, recounted from the events
themselves, of the events learned since the tables started counting, over the tuples whose parents are
candidates of their child; no other cell is held. ``SPARSE_FLOOR`` is lowered so that a small stream
passes a small budget.
"""

from __future__ import annotations

import copy
import itertools
import subprocess
import sys
import types

import numpy as np
import pandas as pd
import pytest

import stream_nb
from stream_nb import KDB, EqualFrequency, Parents
from stream_nb.exceptions import UnlearnError
from stream_nb.stats.budget import _budget
from stream_nb.stats.selection import TupleSelection, add_selected_tuples
from stream_nb.stats.tables import CountTables, SparseTable, cells_of

from test_candidates import _chain

# 10 attributes x 6 values: the selection is pending from the second event (all 3-tuples of a few
# events pass the budget), chosen at the first rebuild, then narrowed twice as the tables fill
PENDING = {"features": 10, "budget": 300_000}
# 8 attributes: the tables pass the budget after the first rebuilds, and the candidates keep every count
READY = {"features": 8, "budget": 4_000_000}


@pytest.fixture(autouse=True)
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)  # the floor that spares small examples, off


def _model(case, **kw):
    return KDB(k=2, numeric=EqualFrequency(warmup=10), search=Parents(rebuild_every=20),
               memory_budget=case["budget"], **kw)


def _stream(case, n=400, **kw):
    return _chain(n, features=case["features"], values=6, **kw)


def _brute(s, stream, since):
    """{(class, child value column, parent columns...): n} and {(class, parent columns..., child feature): n}
    over the tuples of candidate parents only, each counting the events learned since both its parents were
    last admitted as candidates of its child (``since[f, g]``: the events learned before g's admission), by
    brute force."""
    cand = s.tuple_cand
    tc, tf = {}, {}
    for i, (x, y) in enumerate(stream):
        c = s.class_index[y]
        obs = {s.feature_index[n]: s.values[s.feature_index[n]][v] for n, v in x.items()}
        for f, vf in obs.items():
            for a, va in obs.items():
                for b, vb in obs.items():
                    if cand[f, a] and cand[f, b] and i >= max(since[f, a], since[f, b]):
                        tc[c, vf, va, vb] = tc.get((c, vf, va, vb), 0) + 1
                        tf[c, va, vb, f] = tf.get((c, va, vb, f), 0) + 1
    return tc, tf


class Admissions:
    """The events learned before each candidate parent's last admission, followed event by event."""

    def __init__(self):
        self.since, self.seen = {}, None

    def after(self, model, learned: int) -> None:
        cand = model._stats.tuple_cand
        if cand is None or model._stats.tuple_pending:
            return
        now = {(int(f), int(g)) for f, g in np.argwhere(cand)}
        first = self.seen is None  # the first choice: its candidates hold every event since the tables started
        for unit in now - (set() if first else self.seen):
            self.since[unit] = int(model._stats.tuple_from) if first else learned
        self.since = {u: v for u, v in self.since.items() if u in now}
        self.seen = now

    def array(self, F):
        out = np.zeros((F, F), dtype=np.int64)
        for (f, g), v in self.since.items():
            out[f, g] = v
        return out

    def learn(self, model, stream, start=0):
        for i, (x, y) in enumerate(stream[start:], start):
            model.learn_one(x, y)
            self.after(model, i + 1)


def _held(table):
    idx, vals = table.cells()
    return {tuple(int(i[j]) for i in idx): float(v) for j, v in enumerate(vals) if v != 0}


def _check_kept_counts(model, stream, admissions):
    s = model._stats
    assert s.tuples_selected and not s.tuple_pending
    tc, tf = _brute(s, stream, admissions.array(len(s.features)))
    assert tc and _held(s.tuple_count) == tc
    assert _held(s.tuple_feat) == tf
    # the structure draws every parent from its attribute's candidates
    assert all(s.tuple_cand[f, p] for f, pa in model._parents.items() for p in pa)


def test_pending_then_chosen_then_narrowed_the_kept_tuples_hold_the_brute_force_counts():
    stream = _stream(PENDING, holes=True)  # some events miss a value: counted as missing="ignore" would
    model = _model(PENDING)
    seen, admissions = [], Admissions()
    for i, (x, y) in enumerate(stream):
        model.learn_one(x, y)  # never refused for room
        admissions.after(model, i + 1)
        u = model.memory_used()["tuples_selected"]
        if u and (not seen or seen[-1] != (u["pending"], u["candidates"])):
            seen.append((u["pending"], u["candidates"]))
    assert seen[0] == (True, 0) and len(seen) >= 3  # pending, chosen, narrowed at least once
    assert all(a[1] > b[1] for a, b in zip(seen[1:], seen[2:]))  # the budget narrows, a revision swaps
    assert model.memory_used()["tuples_selected"]["counted_from_event"] > 0
    assert model.memory_used()["table_bytes"] <= PENDING["budget"] // 2
    _check_kept_counts(model, stream, admissions)


def test_chosen_after_the_first_rebuild_the_candidates_keep_every_count_since_the_first_event():
    stream = _stream(READY, n=300)
    model = _model(READY)
    admissions = Admissions()
    admissions.learn(model, stream)
    u = model.memory_used()["tuples_selected"]
    assert u["counted_from_event"] == 0 and not u["pending"] and u["candidates"]
    _check_kept_counts(model, stream, admissions)
    # the planted chain: every later attribute's strongest candidate is its predecessor
    s = model._stats
    for f in range(3, READY["features"]):
        assert s.tuple_cand[f, f - 1]
    assert model.structure["f7"][0] == "f6"


@pytest.mark.parametrize("case", [PENDING, READY], ids=["pending", "ready"])
def test_one_event_and_batch_paths_learn_the_same_counts_and_predict_the_same(case):
    stream = _stream(case)
    one, many, batch = _model(case), _model(case), _model(case)
    outs_one = [(o.prediction, o.proba) for o in (one.prequential_one(x, y) for x, y in stream)]
    outs_many = []
    for lo in range(0, len(stream), 50):
        xs, ys = zip(*stream[lo : lo + 50])
        outs_many += many.prequential_many(list(xs), list(ys))
    assert outs_many == outs_one
    xs, ys = zip(*stream)
    for lo in range(0, len(stream), 50):  # learn_many over the same events, in batches
        batch.learn_many(pd.DataFrame(list(xs[lo : lo + 50])), pd.Series(list(ys[lo : lo + 50])))
    for m in (many, batch):
        assert m.memory_used()["tuples_selected"] == one.memory_used()["tuples_selected"]
        assert _held(m._stats.tuple_count) == _held(one._stats.tuple_count)
        assert _held(m._stats.tuple_feat) == _held(one._stats.tuple_feat)
        assert m.structure == one.structure
        for x, _ in stream[:30]:
            assert m.predict_proba_one(x) == one.predict_proba_one(x)


@pytest.mark.parametrize("at", [5, 300], ids=["pending", "selected"])
def test_a_snapshot_keeps_the_selection_and_learns_on_as_the_original(at, tmp_path):
    stream = _stream(PENDING)
    model = _model(PENDING)
    admissions = Admissions()
    admissions.learn(model, stream[:at])
    path = tmp_path / "m.snb"
    stream_nb.save(model, path)
    back = stream_nb.load(path)
    assert back.memory_used()["tuples_selected"] == model.memory_used()["tuples_selected"]
    assert back._stats.tuple_rule and back._stats.tuple_ready == model._stats.tuple_ready
    out = subprocess.run([sys.executable, "-m", "stream_nb", "snapshot", "inspect", str(path)],
                         capture_output=True, text=True, check=True).stdout
    u = model.memory_used()
    if at == 5:
        assert not u["table_cells"]  # pending: the tables hold nothing
        assert "t-way tables wait for the first rebuild to choose candidate parents" in out
    else:
        assert f"t-way tables sparse, {u['table_cells']:,} cells, {u['table_bytes']:,} bytes" in out
        chosen = u["tuples_selected"]
        assert (f"t-way tables count {chosen['candidates']:,} candidate parents (at most {chosen['most_per_feature']} "
                f"per attribute") in out
    admissions.learn(model, stream, start=at)
    for x, y in stream[at:]:
        back.learn_one(x, y)
    assert back.memory_used()["tuples_selected"] == model.memory_used()["tuples_selected"]
    assert (back._stats.tuple_cand == model._stats.tuple_cand).all()
    assert back._stats.pairs_partial == model._stats.pairs_partial
    assert _held(back._stats.tuple_count) == _held(model._stats.tuple_count)
    for x, _ in stream[:30]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    _check_kept_counts(back, stream, admissions)


def _named(s):
    """The t-way cells of store ``s`` by names: {("count", class, (feature, value)...): n} and
    {("feat", class, (feature, value)..., feature): n}."""
    def fv(col):
        return s.features[s.value_feature[col]], s.value_keys[col]

    out = {}
    for kind, table in (("count", s.tuple_count), ("feat", s.tuple_feat)):
        idx, vals = cells_of(table, table.shape)
        for j, v in enumerate(vals):
            cell = [int(a[j]) for a in idx]
            key = (kind, s.classes[cell[0]], *(fv(col) for col in cell[1 : -1 if kind == "feat" else None]))
            key += (s.features[cell[-1]],) if kind == "feat" else ()
            out[key] = out.get(key, 0.0) + float(v)
    return out


def _units(s):
    return {(s.features[f], s.features[g]) for f, g in np.argwhere(s.tuple_cand)}


def test_models_with_candidate_parents_merge_to_the_sums_of_their_counts_in_any_order():
    models = []
    for seed in (0, 1, 2):
        m = _model(PENDING)
        for x, y in _chain(200 + 50 * seed, seed=seed, features=10, values=6):
            m.learn_one(x, y)
        assert m._stats.tuples_selected
        models.append(m)
    total = {}
    for m in models:
        for k, v in _named(m._stats).items():
            total[k] = total.get(k, 0.0) + v
    union = set().union(*(_units(m._stats) for m in models))

    def merged(order):
        out = copy.deepcopy(models[order[0]])
        for i in order[1:]:
            out.merge(copy.deepcopy(models[i]))
        return out

    a = merged((0, 1, 2))
    assert _named(a._stats) == total  # each cell the sum of the three stores' (a tuple none kept: none)
    assert _units(a._stats) == union and a._stats.pairs_partial  # they kept different candidates
    assert a.memory_used()["tuples_selected"]["counted_from_event"] == sum(
        m.memory_used()["tuples_selected"]["counted_from_event"] for m in models)
    x, y = _chain(1, seed=9, features=10, values=6)[0]
    for order in ((2, 1, 0), (1, 0, 2)):  # commutative
        b = merged(order)
        assert _named(b._stats) == total and _units(b._stats) == union
        assert b.predict_proba_one(x) == pytest.approx(a.predict_proba_one(x), rel=1e-12)
    a.learn_one(x, y)
    with pytest.raises(UnlearnError, match="nothing was changed") as err:
        a.unlearn_one(x, y)
    assert err.value.reason == "partial_pairs"


def test_a_model_without_a_selection_merged_with_one_counts_every_tuple_again():
    free, selected = KDB(k=2, search=Parents(rebuild_every=20), memory_budget=None), _model(PENDING)
    for m, seed in ((free, 3), (selected, 0)):
        for x, y in _chain(120, seed=seed, features=10, values=6):
            m.learn_one(x, y)
    want = _named(free._stats)  # dense tables, read by names as the sparse ones
    for k, v in _named(selected._stats).items():
        want[k] = want.get(k, 0.0) + v
    m = copy.deepcopy(selected)
    m.merge(copy.deepcopy(free))
    assert not m._stats.tuples_selected and m._stats.pairs_partial
    assert _named(m._stats) == want


def _swapped(n=600, seed=5):
    """f3 copies f1 over the first 60 events, then f2 (the class drives f0; the others independent)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(3))
        x = {f"f{j}": int(rng.integers(6)) for j in range(8)}
        x["f0"] = int((2 * y + rng.integers(2)) % 6)
        x["f3"] = x["f1" if i < 60 else "f2"] if rng.random() < 0.9 else int(rng.integers(6))
        out.append((x, y))
    return out


def test_a_revision_replaces_a_candidate_when_the_evidence_moves_and_unlearning_is_refused_from_then_on():
    stream = _swapped()
    model = KDB(k=2, search=Parents(rebuild_every=50), numeric=EqualFrequency(warmup=10), memory_budget=800_000)
    admissions, states = Admissions(), []
    for i, (x, y) in enumerate(stream):
        model.learn_one(x, y)
        admissions.after(model, i + 1)
        s = model._stats
        if s.tuples_selected and not s.tuple_pending:
            states.append((i, bool(s.tuple_cand[3, 1]), bool(s.tuple_cand[3, 2]), s.pairs_partial))
        if i == 60:  # chosen (at the rebuild of event 50), before any candidate came back: unlearning is exact
            assert s.tuples_selected and not s.pairs_partial
            before = _held(s.tuple_count), _held(s.tuple_feat)
            extra = _swapped(1, seed=9)[0]
            model.learn_one(*extra)
            assert _held(s.tuple_count) != before[0]
            model.unlearn_one(*extra)
            assert (_held(s.tuple_count), _held(s.tuple_feat)) == before
    early = [st for st in states if st[0] < 60]
    assert early and early[-1][1:] == (True, False, False)  # f1 chosen on the early evidence, f2 not
    assert states[-1][2:] == (True, True)  # f2 admitted, from no counts: the events before it are gone
    assert "f2" in model.structure["f3"] or "f3" in model.structure["f2"]  # the dependence the counts show now
    _check_kept_counts(model, stream, admissions)
    with pytest.raises(UnlearnError) as err:
        model.unlearn_one(*stream[-1])
    assert err.value.reason == "partial_pairs"


def test_within_the_budget_nothing_is_selected_and_kdb_is_unchanged():
    stream = _stream(PENDING)
    # the default budget holds this stream's tables dense
    kw = {"numeric": EqualFrequency(warmup=10), "search": Parents(rebuild_every=20)}
    bounded, free = KDB(k=2, **kw), KDB(k=2, memory_budget=None, **kw)
    for m in (bounded, free):
        for x, y in stream:
            m.learn_one(x, y)
    assert bounded.memory_used()["tuples_selected"] is None and not bounded._stats.tuples_sparse
    assert bounded.structure == free.structure
    for x, _ in stream[:40]:
        assert bounded.predict_proba_one(x) == free.predict_proba_one(x)


def test_kdb_with_one_parent_keeps_the_pairs_of_its_candidate_edges_and_both_paths_agree():
    stream = _chain(500)
    one, many = (KDB(k=1, search=Parents(50), memory_budget=300_000) for _ in range(2))
    outs_one = [(o.prediction, o.proba) for o in (one.prequential_one(x, y) for x, y in stream)]
    outs_many = []
    for lo in range(0, len(stream), 50):
        xs, ys = zip(*stream[lo : lo + 50])
        outs_many += many.prequential_many(list(xs), list(ys))
    s = one._stats
    assert s.pairs_selected and s.pair_rule == "informative"  # pairs dropped, not refused
    assert outs_many == outs_one and many.structure == one.structure
    # every parent's pair with its child is still counted
    kept = s.edge_ok()
    assert any(one._parents.values())
    assert all(kept[f, p] for f, pa in one._parents.items() for p in pa)


@pytest.mark.parametrize("t", [3, 4])
def test_the_compiled_count_of_kept_tuples_equals_the_brute_force_count(t):
    """Rows with missing values, some features without candidates, candidates outside the rows' features."""
    rng = np.random.default_rng(t)
    F, V, C, R = 7, 4, 3, 40
    cand = rng.random((F, F)) < 0.4
    np.fill_diagonal(cand, False)
    cand[2] = False
    dfeats = np.array([0, 1, 2, 3, 5, 6], dtype=np.int64)  # feature 4 is none of the rows'
    cols = dfeats[None, :] * V + 1 + rng.integers(V, size=(R, len(dfeats)))  # feature f's values: columns f V + 1..
    D = np.where(rng.random(cols.shape) < 0.2, -1, cols)
    yc, w = rng.integers(C, size=R), rng.choice([1.0, 0.5, 2.0], size=R)
    selection = TupleSelection(rule=True)
    selection.choose(cand)
    store = types.SimpleNamespace(tuples=t, features=list(range(F)), tuple_cand=cand, tuple_lists=selection.lists,
                                  tables=CountTables())
    V1 = F * V + 1
    store.tables.replace("tuple_count", SparseTable((C,) + (V1,) * t, slots=16))
    store.tables.replace("tuple_feat", SparseTable((C,) + (V1,) * (t - 1) + (F,), slots=16))
    add_selected_tuples(store, "", D[:25], dfeats, yc[:25], w[:25])  # two calls: the tables grow in between
    add_selected_tuples(store, "", D[25:], dfeats, yc[25:], w[25:])
    tc, tf = {}, {}
    for r in range(R):
        seen = {int(dfeats[j]): int(D[r, j]) for j in range(len(dfeats)) if D[r, j] >= 0}
        for f, vf in seen.items():
            for parents in itertools.product(np.flatnonzero(cand[f]).tolist(), repeat=t - 1):
                if all(g in seen for g in parents):
                    us = tuple(seen[g] for g in parents)
                    tc[(int(yc[r]), vf) + us] = tc.get((int(yc[r]), vf) + us, 0.0) + w[r]
                    tf[(int(yc[r]),) + us + (f,)] = tf.get((int(yc[r]),) + us + (f,), 0.0) + w[r]
    tuple_count, tuple_feat = store.tables.get("tuple_count"), store.tables.get("tuple_feat")
    assert _held(tuple_count) == tc and _held(tuple_feat) == tf
    assert len(tuple_count) == len(tc) and len(tuple_feat) == len(tf)
