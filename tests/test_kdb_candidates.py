"""Candidate parents: KDB past its memory budget keeps the (k+1)-way counts of each attribute's candidate
parents only (stats/_tuple_candidates.py).

Checked against brute force: every cell the t-way tables hold equals the count, recounted from the events
themselves, of the events learned since the tables started counting, over the tuples whose parents are
candidates of their child; no other cell is held. ``SPARSE_FLOOR`` is lowered so that a small stream
passes a small budget.
"""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

import stream_nb
from stream_nb import KDB, Parents
from stream_nb.exceptions import MergeError
from stream_nb.stats.budget import _budget

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
    return KDB(k=2, rebuild_every=20, warmup=10, memory_budget=case["budget"], **kw)


def _stream(case, n=400, **kw):
    return _chain(n, features=case["features"], values=6, **kw)


def _brute(s, stream):
    """{(class, child value column, parent columns...): n} and {(class, parent columns..., child feature): n}
    over the events learned since the tables started, the tuples of candidate parents only, by brute force."""
    cand = s.tuple_cand
    tc, tf = {}, {}
    for x, y in stream[int(s.tuple_from):]:
        c = s.class_index[y]
        obs = {s.feature_index[n]: s.values[s.feature_index[n]][v] for n, v in x.items()}
        for f, vf in obs.items():
            for a, va in obs.items():
                for b, vb in obs.items():
                    if cand[f, a] and cand[f, b]:
                        tc[c, vf, va, vb] = tc.get((c, vf, va, vb), 0) + 1
                        tf[c, va, vb, f] = tf.get((c, va, vb, f), 0) + 1
    return tc, tf


def _held(table):
    idx, vals = table.cells()
    return {tuple(int(i[j]) for i in idx): float(v) for j, v in enumerate(vals) if v != 0}


def _check_kept_counts(model, stream):
    s = model._stats
    assert s.tuples_selected and not s.tuple_pending
    tc, tf = _brute(s, stream)
    assert tc and _held(s.tuple_count) == tc
    assert _held(s.tuple_feat) == tf
    # the structure draws every parent from its attribute's candidates
    assert all(s.tuple_cand[f, p] for f, pa in model._parents.items() for p in pa)


def test_pending_then_chosen_then_narrowed_the_kept_tuples_hold_the_brute_force_counts():
    stream = _stream(PENDING, holes=True)  # some events miss a value: counted as missing="ignore" would
    model = _model(PENDING)
    seen = []
    for x, y in stream:
        model.learn_one(x, y)  # never refused for room
        u = model.memory_used()["tuples_selected"]
        if u and (not seen or seen[-1] != (u["pending"], u["candidates"])):
            seen.append((u["pending"], u["candidates"]))
    assert seen[0] == (True, 0) and len(seen) >= 3  # pending, chosen, narrowed at least once
    assert all(a[1] > b[1] for a, b in zip(seen[1:], seen[2:]))  # a selection only narrows
    assert model.memory_used()["tuples_selected"]["counted_from_event"] > 0
    assert model.memory_used()["table_bytes"] <= PENDING["budget"] // 2
    _check_kept_counts(model, stream)


def test_chosen_after_the_first_rebuild_the_candidates_keep_every_count_since_the_first_event():
    stream = _stream(READY, n=300)
    model = _model(READY)
    for x, y in stream:
        model.learn_one(x, y)
    u = model.memory_used()["tuples_selected"]
    assert u["counted_from_event"] == 0 and not u["pending"] and u["candidates"]
    _check_kept_counts(model, stream)
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
    for x, y in stream[:at]:
        model.learn_one(x, y)
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
    for m in (model, back):
        for x, y in stream[at:]:
            m.learn_one(x, y)
    assert back.memory_used()["tuples_selected"] == model.memory_used()["tuples_selected"]
    assert _held(back._stats.tuple_count) == _held(model._stats.tuple_count)
    for x, _ in stream[:30]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    _check_kept_counts(back, stream)


def test_merging_models_with_candidate_parents_is_refused_naming_both():
    a, b = _model(PENDING), _model(PENDING)
    for m, seed in ((a, 0), (b, 1)):
        for x, y in _chain(300, seed=seed, features=10, values=6):
            m.learn_one(x, y)
    with pytest.raises(MergeError, match=r"candidate parents.*'candidates': \d+.*here.*'candidates': \d+.*in the other"):
        a.merge(b)


def test_unlearning_under_selection_takes_the_event_back_from_the_kept_tuples():
    stream = _stream(PENDING)
    model = _model(PENDING)
    for x, y in stream:
        model.learn_one(x, y)
    before = _held(model._stats.tuple_count), _held(model._stats.tuple_feat)
    x, y = _stream(PENDING, n=1, seed=9)[0]
    model.learn_one(x, y)
    assert _held(model._stats.tuple_count) != before[0]
    model.unlearn_one(x, y)
    assert (_held(model._stats.tuple_count), _held(model._stats.tuple_feat)) == before


def test_within_the_budget_nothing_is_selected_and_kdb_is_unchanged():
    stream = _stream(PENDING)
    # the default budget holds this stream's tables dense
    bounded, free = KDB(k=2, rebuild_every=20, warmup=10), KDB(k=2, rebuild_every=20, warmup=10, memory_budget=None)
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
    assert s.pairs_selected and s.pair_rule == "edges"  # pairs dropped, not refused
    assert outs_many == outs_one and many.structure == one.structure
    # every parent's pair with its child is still counted
    kept = s.edge_ok()
    assert any(one._parents.values())
    assert all(kept[f, p] for f, pa in one._parents.items() for p in pa)
