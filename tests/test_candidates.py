"""Candidate pairs: AODE, SPODE and TAN past their memory budget keep counts for the pairs they chose.

Checked against brute force: every kept pair's counts equal the counts of every event learned
(those before each pruning included), recounted from the events themselves; the dropped pairs
hold no cells. (These budgets leave no room for a pair on trial, so no pair is admitted again with
fresh counts: tests/test_pair_revision.py checks the revisions.) ``SPARSE_FLOOR`` is lowered so that a small stream passes a small budget.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import stream_nb
from stream_nb import AODE, SPODE, TAN, Ignore, SuperParent, Tree
from stream_nb.stats.budget import _budget

BUDGET = 300_000
MODELS = {
    "aode": lambda **kw: AODE(**kw),
    "spode": lambda **kw: SPODE(search=SuperParent(rebuild_every=50), **kw),
    "tan": lambda **kw: TAN(search=Tree(rebuild_every=50), **kw),
}


@pytest.fixture(autouse=True)
def _selected_sparse_pairs(monkeypatch):
    """These tests check the selections of sparse pairs: TAN keeps them, not the pair blocks that would fit."""
    from stream_nb.stats.budget import Layout

    monkeypatch.setattr(Layout, "blocks_allowed", lambda self, s: False)


@pytest.fixture
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)  # the floor that spares small examples, off


def _chain(n, seed=0, features=16, values=8, holes=False):
    """The class drives f0 and f1; every later attribute copies its predecessor 80% of the time."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(3))
        x = {"f0": int((2 * y + rng.integers(2)) % values), "f1": int(y if rng.random() < 0.7 else rng.integers(values))}
        for f in range(2, features):
            prev = x[f"f{f - 1}"]
            x[f"f{f}"] = int(prev if rng.random() < 0.8 else rng.integers(values))
        if holes and i % 9 == 4:
            del x[f"f{3 + i % (features - 3)}"]
        out.append((x, y))
    return out


def _learn(model, stream):
    """Half one event at a time, half through prequential_many (the vectorised runs where they apply)."""
    half = len(stream) // 2
    for x, y in stream[:half]:
        model.learn_one(x, y)
    xs, ys = zip(*stream[half:])
    for lo in range(0, len(xs), 50):
        model.prequential_many(list(xs[lo : lo + 50]), list(ys[lo : lo + 50]))


def _brute(stream, s):
    """{(class, feature a, value a, feature b, value b): count} and {(class, feature a, value a, feature b): count}
    over the events, both observed, by names."""
    pc, pf = {}, {}
    for x, y in stream:
        for a, va in x.items():
            for b, vb in x.items():
                pc[y, a, va, b, vb] = pc.get((y, a, va, b, vb), 0) + 1
                pf[y, a, va, b] = pf.get((y, a, va, b), 0) + 1
    return pc, pf


def _check_kept_counts(model, stream):
    s = model._stats
    assert s.pairs_selected
    pc, pf = _brute(stream, s)
    kept = s.edge_ok()
    C, V = s.n_classes, len(s.value_keys)
    held = 0
    for fa, a in enumerate(s.features):
        for fb, b in enumerate(s.features):
            ca, cb = s.columns_of(fa), s.columns_of(fb)
            got = s.pair_count[:C, ca[:, None], cb[None, :]]
            gotf = s.pair_feat[:C, ca, np.full(len(ca), fb)]
            if not kept[fa, fb]:
                assert not got.any() and not gotf.any(), (a, b)
                continue
            held += 1
            want = np.array([[[pc.get((y, a, s.value_keys[u], b, s.value_keys[v]), 0) for v in cb] for u in ca]
                             for y in s.classes])
            wantf = np.array([[pf.get((y, a, s.value_keys[u], b), 0) for u in ca] for y in s.classes])
            assert np.array_equal(got, want), (a, b)
            assert np.array_equal(gotf, wantf), (a, b)
    assert 0 < held < len(s.features) ** 2
    # nothing else is held: the sparse tables' cells are exactly the kept pairs' nonzero cells
    idx, vals = s.pair_count.cells()
    assert kept[s.value_feature[idx[1]], s.value_feature[idx[2]]].all() and (vals > 0).all()
    return held


@pytest.mark.parametrize("name", sorted(MODELS))
def test_kept_pairs_hold_the_brute_force_counts_of_every_event_learned(name, small_floor):
    stream = _chain(500, holes=True)
    model = MODELS[name](memory_budget=BUDGET, missing=Ignore())
    _learn(model, stream)  # no CapacityError: pairs are dropped instead
    assert model.n_learned == len(stream)
    _check_kept_counts(model, stream)
    used = model.memory_used()
    assert used["pairs_selected"]["rule"] == ("edges" if name == "tan" else "parents")
    assert used["pair_bytes"] <= BUDGET


@pytest.mark.parametrize("name", sorted(MODELS))
def test_under_selection_an_event_with_missing_values_is_counted_as_ignore_counts_it(name, small_floor):
    stream = _chain(400)
    em = MODELS[name](memory_budget=BUDGET)  # missing=EM(), the default
    _learn(em, stream)
    holes = [({k: v for k, v in x.items() if k != "f5"}, y) for x, y in _chain(40, seed=3)]
    for x, y in holes:
        em.learn_one(x, y)
    _check_kept_counts(em, stream + holes)


def test_without_passing_the_budget_nothing_is_selected_and_the_counts_are_the_unbounded_ones():
    stream = _chain(300, holes=True)
    for make in MODELS.values():
        bounded, free = make(), make(memory_budget=None)
        _learn(bounded, stream)
        _learn(free, stream)
        assert not bounded._stats.pairs_selected and bounded.memory_used()["pairs_selected"] is None
        for x, _ in stream[:40]:
            assert bounded.predict_proba_one(x) == free.predict_proba_one(x)


def test_the_choice_is_deterministic_and_finds_the_planted_structure(small_floor):
    stream = _chain(500)
    runs = [{n: MODELS[n](memory_budget=2 * BUDGET) for n in ("aode", "tan")} for _ in range(2)]
    for models in runs:
        for m in models.values():
            _learn(m, stream)
    for n in runs[0]:
        assert runs[0][n].memory_used()["pairs_selected"] == runs[1][n].memory_used()["pairs_selected"]
    # AODE's super-parents: only attributes that carry the class (f0, f1), the most informative first
    parents = runs[0]["aode"].memory_used()["pairs_selected"]["parents"]
    assert "f0" in parents and set(parents) <= {"f0", "f1"}
    # TAN's supported pairs (the kept ones whose counts reject independence, shared among all pairs; room
    # for three pairs once full here) are the strongest dependences: attributes at most two apart in the
    # chain (a copy of a copy), most of them neighbours
    tan = runs[0]["tan"]
    s = tan._stats
    sup = s.edge_supported()
    i, j = np.nonzero(np.triu(sup, 1))
    edges = {frozenset((s.features[a], s.features[b])) for a, b in zip(i.tolist(), j.tolist())}
    chain = {frozenset((f"f{i}", f"f{i + 1}")) for i in range(1, 15)}
    assert len(edges) >= 3 and all(abs(int(a[1:]) - int(b[1:])) <= 2 for a, b in map(sorted, edges)), edges
    assert len(chain & edges) > len(edges) / 2
    tan.rebuild()
    assert all(sup[s.feature_index[p], s.feature_index[c]] for p, c, _ in tan.tree)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_snapshot_keeps_the_candidate_pairs_and_learns_on_as_the_original(name, small_floor, tmp_path):
    stream = _chain(500)
    model = MODELS[name](memory_budget=BUDGET)
    _learn(model, stream[:400])
    path = tmp_path / "m.snb"
    stream_nb.save(model, path)
    back = stream_nb.load(path)
    assert back.memory_used()["pairs_selected"] == model.memory_used()["pairs_selected"]
    out = subprocess.run([sys.executable, "-m", "stream_nb", "snapshot", "inspect", str(path)],
                         capture_output=True, text=True, check=True).stdout
    chosen = model.memory_used()["pairs_selected"]
    assert ("candidates only the pairs of " + (f"{len(chosen['edges'])} attribute pairs" if name == "tan" else
            "super-parents " + ", ".join(map(repr, chosen["parents"])))) in out
    for m in (model, back):
        for x, y in stream[400:]:
            m.learn_one(x, y)
    for key in ("pair_cells", "pairs_selected"):  # (dense arrays may be allocated with other spare room)
        assert back.memory_used()[key] == model.memory_used()[key]
    for x, _ in stream[:30]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    _check_kept_counts(back, stream)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_with_candidate_pairs_merge_to_the_pairs_both_kept_holding_both_streams_counts(name, small_floor):
    a, b = MODELS[name](memory_budget=BUDGET), MODELS[name](memory_budget=BUDGET)
    sa, sb = _chain(300), _chain(300, seed=1, features=18)  # b has two features a never saw
    _learn(a, sa)
    _learn(b, sb)
    kept_a, kept_b = a._stats.edge_ok(), b._stats.edge_ok()
    names_a, names_b = list(a._stats.features), list(b._stats.features)
    a.merge(b)
    s = a._stats
    kept = s.edge_ok()
    idx = {n: i for i, n in enumerate(s.features)}
    for i, p in enumerate(names_a):  # a pair kept after the merge was kept in both (or one never saw it)
        for j, q in enumerate(names_a):
            if kept[idx[p], idx[q]] and p != q:
                assert kept_a[i, j] and kept_b[names_b.index(p), names_b.index(q)], (p, q)
    _check_kept_counts(a, sa + sb)  # by brute force over both streams: exact for every pair kept
    if name != "tan":
        assert s.selection_summary()["parents"]
    a.learn_one(*_chain(1, seed=9)[0])  # and it learns on under the merged selection
    assert a.predict_one(_chain(1, seed=8)[0][0]) in (0, 1, 2)


def test_unlearning_under_selection_takes_the_event_back_from_the_kept_pairs(small_floor):
    stream = _chain(400)
    model = AODE(memory_budget=BUDGET)
    _learn(model, stream)
    before = model.memory_used(), model._stats.pair_count.cells()
    x, y = _chain(1, seed=9)[0]
    model.learn_one(x, y)
    model.unlearn_one(x, y)
    (idx, vals), (idx0, vals0) = model._stats.pair_count.cells(), before[1]
    keep = vals != 0
    assert all(np.array_equal(i[keep], j) for i, j in zip(idx, idx0)) and np.array_equal(vals[keep], vals0)


def test_aode_on_wide_binary_events_learns_and_predicts_every_one_within_its_budget(small_floor):
    """Many binary attributes (as the issue tried with 2,000): once parents are dropped, the next event's
    worst case counts only the kept parents' pairs, so no event is refused; the store stays within its
    budget, and the traced peak (numpy and Python allocations) within ten budgets."""
    import tracemalloc

    rng = np.random.default_rng(3)
    budget = 2_000_000
    stream = [({f"b{j:03d}": int(v) for j, v in enumerate(row)}, int(c))
              for row, c in zip(rng.integers(0, 2, size=(50, 200)), rng.integers(0, 2, size=50))]
    model = AODE(memory_budget=budget)
    AODE().learn_one({"a": 1}, 0)  # the compiled kernels loaded before the measure
    tracemalloc.start()
    try:
        for x, y in stream[:25]:  # as a user drives it: predict, then learn, one event at a time
            assert model.predict_one(x) in (None, 0, 1)
            model.learn_one(x, y)
        xs, ys = zip(*stream[25:])
        out = model.prequential_many(list(xs), list(ys))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(isinstance(o, tuple) and o[0] in (0, 1) for o in out), [o for o in out if not isinstance(o, tuple)][:1]
    used = model.memory_used()
    assert used["pairs_selected"]["parents"] and used["bytes"] <= budget
    assert peak < 10 * budget, peak  # two layers of counts within the budget each, and the moves between them
