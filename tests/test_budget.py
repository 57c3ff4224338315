"""The memory budget: count tables dense while they fit, sparse beyond, with the same counts.

Every sparse result is checked against the dense path (``memory_budget=None``)
as the reference, and the sparse table itself against ``np.add.at`` on a
dense numpy array.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import stream_nb
from stream_nb import EM, KDB, EqualFrequency, Ignore, Parents
from stream_nb.stats import SparseTable

# ---------------------------------------------------------------- the sparse table against numpy


def test_sparse_table_adds_and_reads_like_np_add_at_through_rehashes():
    rng = np.random.default_rng(1)
    shape = (3, 40, 40, 7)
    dense = np.zeros(shape)
    table = SparseTable(shape, slots=16)  # tiny: grows (rehashes) many times
    for _ in range(30):
        idx = tuple(rng.integers(0, d, size=500) for d in shape)  # many duplicates within a batch
        w = rng.random(500)
        np.add.at(dense, idx, w)
        table.add(idx, w)
    assert len(table) == np.count_nonzero(dense)
    probe = tuple(rng.integers(0, d, size=(20, 30)) for d in shape[1:])
    np.testing.assert_array_equal(table[(slice(0, 3), *probe)], dense[(slice(0, 3), *probe)])
    np.testing.assert_array_equal(table[(2, *probe)], dense[(2, *probe)])
    idx, vals = table.cells()
    rebuilt = np.zeros(shape)
    rebuilt[idx] = vals
    np.testing.assert_array_equal(rebuilt, dense)
    bigger = table.reshaped((4, 50, 50, 9))
    np.testing.assert_array_equal(bigger[(slice(0, 3), *probe)], dense[(slice(0, 3), *probe)])


def test_sparse_table_remap_moves_and_drops_cells_like_dense_slicing():
    rng = np.random.default_rng(2)
    shape = (2, 10, 10)
    dense = np.zeros(shape)
    idx = tuple(rng.integers(0, d, size=200) for d in shape)
    np.add.at(dense, idx, 1.0)
    table = SparseTable(shape)
    table.add(idx, 1.0)
    cmap = np.arange(10)
    cmap[3], cmap[4] = 7, -1  # column 3 into 7, column 4 dropped
    expected = dense.copy()
    for axis in (1, 2):
        src, dst, drop = [slice(None)] * 3, [slice(None)] * 3, [slice(None)] * 3
        src[axis], dst[axis], drop[axis] = 3, 7, 4
        expected[tuple(dst)] += expected[tuple(src)]
        expected[tuple(src)] = 0.0
        expected[tuple(drop)] = 0.0
    got = table.remap([None, cmap, cmap])
    full = np.indices(shape).reshape(3, -1)
    np.testing.assert_array_equal(got[(slice(0, 2), full[1][:100], full[2][:100])],
                                  expected[(slice(0, 2), full[1][:100], full[2][:100])])


# ---------------------------------------------------------------- KDB sparse against dense


def _stream(n, seed=0, values=6, features=6, holes=True, floats=False):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, values, size=(n, features))
    y = (X[:, 0] + X[:, 1] * X[:, 2]) % 3
    out = []
    for i, (row, c) in enumerate(zip(X, y)):
        x = {f"f{j}": int(v) for j, v in enumerate(row)}
        if floats:
            x["f5"] = float(row[5]) + 0.5 * (i > n // 2)  # an integer feature turning numeric midway
        if holes and i % 5 == 0:
            del x[f"f{i % features}"]
        out.append((x, int(c)))
    return out


def _tables(model):
    s = model._stats
    C, V, F, t = s.n_classes, len(s.value_keys), len(s.features), s.tuples
    out = {}
    for p in s._sets():
        for k, dims in (("tuple_count", (C,) + (V,) * t), ("tuple_feat", (C,) + (V,) * (t - 1) + (F,))):
            grid = np.indices(dims[1:]).reshape(t, -1)
            out[p + k] = getattr(s, p + k)[(slice(0, C), *grid)]
    return out


def _same_proba(got: dict, want: dict) -> bool:
    """The same classes and probabilities to 1e-12: the dense tables are read by a compiled kernel, which
    multiplies a few ratios before each logarithm, the sparse ones by numpy, a logarithm per ratio."""
    return got.keys() == want.keys() and all(got[c] == pytest.approx(p, rel=1e-12, abs=1e-15) for c, p in want.items())


def _assert_same_counts(a, b, exact):
    ta, tb = _tables(a), _tables(b)
    assert ta.keys() == tb.keys()
    for k in ta:
        if exact:
            np.testing.assert_array_equal(ta[k], tb[k], err_msg=k)
        else:
            np.testing.assert_allclose(ta[k], tb[k], rtol=1e-12, atol=1e-12, err_msg=k)


@pytest.mark.slow
@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
@pytest.mark.parametrize("k", [2, 3])
def test_sparse_kdb_predicts_and_counts_as_the_dense_one(k, missing):
    stream = _stream(250 if k == 2 else 120)
    dense = KDB(k=k, search=Parents(40), missing=missing, memory_budget=None)
    sparse = KDB(k=k, search=Parents(40), missing=missing, memory_budget=0)  # sparse from the first event
    for x, y in stream:
        pd, ps = dense.predict_proba_one(x), sparse.predict_proba_one(x)
        assert ps.keys() == pd.keys()
        # without EM the counts are integers and agree to the bit; EM's fractional ones are summed
        # in another order where a completion's shared tuples are added once
        assert all(ps[c] == pytest.approx(pd[c], rel=1e-12, abs=1e-15) for c in pd)
        dense.learn_one(x, y)
        sparse.learn_one(x, y)
    assert sparse.memory_used()["sparse"] and not dense.memory_used()["sparse"]
    assert sparse.structure == dense.structure
    _assert_same_counts(dense, sparse, exact=missing == Ignore())


def test_dense_tables_turn_sparse_when_the_budget_is_passed_and_keep_their_counts():
    stream = _stream(300, values=12, holes=False)
    dense = KDB(k=2, memory_budget=None, missing=Ignore(), search=Parents(rebuild_every=50))
    # room for the first few values only: the table turns sparse midway through the stream
    budget = KDB(k=2, memory_budget=400_000, missing=Ignore(), search=Parents(rebuild_every=50))
    flipped_at = None
    for i, (x, y) in enumerate(stream):
        assert _same_proba(budget.predict_proba_one(x), dense.predict_proba_one(x))
        dense.learn_one(x, y)
        budget.learn_one(x, y)
        if flipped_at is None and budget.memory_used()["sparse"]:
            flipped_at = i
    assert flipped_at is not None and flipped_at > 0
    _assert_same_counts(dense, budget, exact=True)


def test_batches_on_sparse_tables_equal_the_dense_path():
    stream = _stream(200, holes=False)
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    dense, sparse = KDB(k=2, search=Parents(0), memory_budget=None), KDB(k=2, search=Parents(0), memory_budget=0)
    got, want = sparse.prequential_many(xs[:100], ys[:100]), dense.prequential_many(xs[:100], ys[:100])
    assert [p for p, _ in got] == [p for p, _ in want] and all(_same_proba(a, b) for (_, a), (_, b) in zip(got, want))
    frame = pd.DataFrame(xs[100:])
    dense.learn_many(frame, pd.Series(ys[100:]))  # one vectorised pass (Stats.add_many)
    sparse.learn_many(frame, pd.Series(ys[100:]))
    _assert_same_counts(dense, sparse, exact=True)


@pytest.mark.parametrize("budgets", [(0, 0), (None, 0), (0, None)])
def test_merging_sparse_and_dense_stores_equals_one_dense_run(budgets):
    stream = _stream(240)  # missing="ignore": EM's imputations in b would have seen a's counts in one run
    a, b = (KDB(k=2, memory_budget=m, missing=Ignore(), search=Parents(rebuild_every=0)) for m in budgets)
    whole = KDB(k=2, memory_budget=None, missing=Ignore(), search=Parents(rebuild_every=0))
    for i, (x, y) in enumerate(stream):
        (a if i < 120 else b).learn_one(x, y)
        whole.learn_one(x, y)
    a._stats.merge(b._stats)
    _assert_same_counts(whole, a, exact=True)


def test_a_sparse_snapshot_restores_the_same_model_dense_or_sparse(tmp_path):
    stream = _stream(200)
    model = KDB(k=2, search=Parents(50), memory_budget=0)
    for x, y in stream:
        model.learn_one(x, y)
    path = tmp_path / "kdb.snb"
    stream_nb.save(model, path)
    back = stream_nb.load(path)
    assert back.memory_used()["sparse"]
    _assert_same_counts(model, back, exact=True)
    # the same state, read by a model with room for dense tables: dense, the same counts
    arrays, meta = model._stats.state()
    assert "tuple_count_cells" in arrays and "tuple_count" not in arrays
    meta = {**meta, "memory_budget": None}
    dense = type(model._stats).from_state(arrays, meta)
    assert not dense.tuples_sparse
    reference = KDB(k=2, search=Parents(50), memory_budget=None)
    for x, y in stream:
        reference.learn_one(x, y)
    ref_tables = _tables(reference)
    reference._stats = dense
    for k, v in _tables(reference).items():
        np.testing.assert_allclose(v, ref_tables[k], rtol=1e-12, atol=1e-12)
    probe = stream[3][0]
    assert back.predict_proba_one(probe) == model.predict_proba_one(probe)


def test_a_state_with_sparse_cells_out_of_bounds_is_refused():
    model = KDB(k=2, memory_budget=0)
    for x, y in _stream(20):
        model.learn_one(x, y)
    arrays, meta = model._stats.state()
    bad = dict(arrays)
    bad["tuple_count_cells"] = arrays["tuple_count_cells"].copy()
    bad["tuple_count_cells"][0, 1] = 10**6
    with pytest.raises(ValueError, match="tuple_count_cells.*within"):
        type(model._stats).from_state(bad, meta)
    bad["tuple_count_cells"] = arrays["tuple_count_cells"].astype(float)
    with pytest.raises(ValueError, match="integer cell indices"):
        type(model._stats).from_state(bad, meta)


def test_a_feature_turning_numeric_converts_sparse_tables_like_dense_ones():
    stream = _stream(300, floats=True, holes=False)
    dense = KDB(k=2, memory_budget=None, numeric=EqualFrequency(warmup=20), missing=Ignore(), search=Parents(rebuild_every=50))
    sparse = KDB(k=2, memory_budget=0, numeric=EqualFrequency(warmup=20), missing=Ignore(), search=Parents(rebuild_every=50))
    for x, y in stream:
        assert _same_proba(sparse.predict_proba_one(x), dense.predict_proba_one(x))
        dense.learn_one(x, y)
        sparse.learn_one(x, y)
    assert sparse._stats.kinds[sparse._stats.feature_index["f5"]] != 0  # promoted
    _assert_same_counts(dense, sparse, exact=True)


# ---------------------------------------------------------------- no refusal under the defaults


@pytest.mark.slow
def test_default_kdb_learns_what_a_dense_table_could_not_hold():
    # 3 features x 400 values: a dense 3-way table would need 2 x 1200^3 cells (27 GB)
    rng = np.random.default_rng(3)
    model = KDB(search=Parents(100))
    for _ in range(300):
        v = rng.integers(0, 400, size=3)
        model.learn_one({"a": int(v[0]), "b": int(v[1]), "c": int(v[2])}, bool(v[0] % 2))
    used = model.memory_used()
    assert used["sparse"] and used["bytes"] < model.memory_budget
    assert model.n_learned == 300


def test_memory_budget_is_checked():
    with pytest.raises(stream_nb.exceptions.ConfigError, match="memory_budget"):
        KDB(memory_budget=-1)


def test_snapshot_inspect_shows_cells_and_bytes(tmp_path):
    model = KDB(k=2, memory_budget=0)
    for x, y in _stream(30):
        model.learn_one(x, y)
    path = tmp_path / "kdb.snb"
    stream_nb.save(model, path)
    out = subprocess.run([sys.executable, "-m", "stream_nb", "snapshot", "inspect", str(path)],
                         capture_output=True, text=True, check=True).stdout
    used = stream_nb.load(path).memory_used()
    assert f"counts     {used['cells']:,} cells, {used['bytes']:,} bytes; t-way tables sparse" in out
    assert "(memory budget 0 bytes)" in out


def test_unlearning_from_sparse_tables_equals_unlearning_from_dense_ones():
    stream = _stream(120, holes=False)
    model = KDB(k=2, memory_budget=0, missing=Ignore(), search=Parents(rebuild_every=0))
    reference = KDB(k=2, memory_budget=None, missing=Ignore(), search=Parents(rebuild_every=0))
    for x, y in stream:
        model.learn_one(x, y)
        reference.learn_one(x, y)
    for x, y in stream[::3]:
        model.unlearn_one(x, y)
        reference.unlearn_one(x, y)
    _assert_same_counts(reference, model, exact=True)
    assert _tables(model)["tuple_count"].sum() == 80 * 6**3  # the 80 events left, 6^3 value triples each
