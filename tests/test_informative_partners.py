"""KDB's pairs past the budget, one attribute at a time: each class-informative attribute keeps the pairs with
the partners its pair's own counts support (stats/selection/_informative.py), found by trials in rotation,
and the G-tests that judge them (stats/selection/_pair_tests.py) against a brute-force count of the events.

The stream plants a parent for every informative attribute: the class drives a0, and twelve children copy
a0 (most of the time), so every pair among the thirteen is dependent, the planted ones (child, a0) most
strongly; b0 and b1 say the class each on its own (independent of the others given the class: their
pairs are tried, dropped and tried again); twenty attributes are independent noise. The budget holds a pair per child and a few more, not
the 78 pairs among the thirteen, which the clique of the best-ranked attributes kept before: the children
ranked last then had no pair with their parent. ``SPARSE_FLOOR`` is lowered so that a small stream passes
a small budget.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from scipy.stats import chi2

import stream_nb
from stream_nb import KDB, Parents
from stream_nb.learners._selection import g_test
from stream_nb.stats.budget import _budget
from stream_nb.stats.selection._pair_tests import pair_tests

from test_kdb_pairs import _recount
from test_pair_revision import _cells, _kept_by_name

BUDGET = 1_000_000
CHILDREN = [f"c{j:02d}" for j in range(12)]


@pytest.fixture(autouse=True)
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)  # the floor that spares small examples, off


def _planted(n, seed=0, values=4):
    """[(x, y)]: a0 says the class; each child copies a0 or, less often, says a value at random; b0 and b1
    say the class, each on its own; noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(3))
        a0 = y if rng.random() < 0.8 else int(rng.integers(values))
        x = {"a0": a0}
        for j, name in enumerate(CHILDREN):
            x[name] = a0 if rng.random() < 0.75 - 0.02 * j else int(rng.integers(values))
        for name in ("b0", "b1"):  # the class alone: independent of every other attribute given the class
            x[name] = y if rng.random() < 0.7 else int(rng.integers(values))
        for j in range(20):
            x[f"n{j:02d}"] = int(rng.integers(values))
        out.append((x, y))
    return out


def _kdb():
    model = KDB(k=2, search=Parents(rebuild_every=200), memory_budget=BUDGET)
    model._stats.pair_blocks_ok = False  # the rule over selected sparse pairs, not the pair blocks that would fit
    return model


def _learn(model, stream, log):
    for x, y in stream:
        model.learn_one(x, y)
        log.append(_kept_by_name(model._stats))


def _edges(model):
    return {frozenset(e) for e in model._stats.selection_summary()["edges"]}


def test_every_informative_attribute_keeps_its_planted_parent_within_a_budget_the_clique_does_not_fit():
    stream = _planted(3000)
    model = _kdb()
    log = []
    _learn(model, stream, log)
    s = model._stats
    assert s.pair_rule == "informative" and s.pairs_selected
    kept = _edges(model)
    assert all(frozenset((c, "a0")) in kept for c in CHILDREN), sorted(map(sorted, kept))
    assert len(kept) < 13 * 12 // 2  # not the clique: it does not fit the budget
    assert not any(name.startswith("n") for e in kept for name in e)  # noise: no pair
    # each kept pair holds exactly the events since it was last admitted
    assert _cells(s) == _recount(stream, log)


def test_the_pair_tests_are_the_brute_force_g_tests_of_the_events_each_pair_holds():
    stream = _planted(1500, seed=3)
    model = _kdb()
    log = []
    _learn(model, stream, log)
    s = model._stats
    joint, given, n, excess = pair_tests(s)
    index = {f: i for i, f in enumerate(s.features)}
    checked = 0
    for e in _edges(model):
        a, b = sorted(e)
        since = len(log)
        while since and log[since - 1] is not None and (a, b) in log[since - 1]:
            since -= 1
        held = stream[since:]
        # n[x_a, x_b, class], from the events themselves: the test given the class, and the class summed out
        table = np.zeros((4, 4, 3))
        for x, y in held:
            table[x[a], x[b], y] += 1
        i, j = index[a], index[b]
        assert n[i, j] == n[j, i] == len(held)
        for got, counts in ((given[i, j], table), (joint[i, j], table.sum(2, keepdims=True))):
            g, df = g_test(counts)
            want = chi2.logsf(g, df) if df else 0.0
            if np.isfinite(want):
                assert got == pytest.approx(want, rel=1e-7, abs=1e-9), (a, b)
            else:  # beyond scipy's floats
                assert got < math.log(1e-300), (a, b)
        g, df = g_test(table)
        assert excess[i, j] == excess[j, i] == pytest.approx(max(g - df, 0.0) / len(held), rel=1e-9, abs=1e-12)
        checked += 1
    assert checked >= 12
    # a pair not counted: no evidence
    assert given[index["n00"], index["n01"]] == 0.0 and n[index["n00"], index["n01"]] == 0.0


def test_a_pair_whose_counts_show_no_dependence_is_dropped_and_tried_again_from_no_counts():
    stream = _planted(4000, seed=5)
    model = _kdb()
    log = []
    _learn(model, stream, log)
    runs = {}
    for t, kept in enumerate(log):
        for pair in kept or ():
            if t and log[t - 1] is not None and pair not in log[t - 1]:
                runs[pair] = runs.get(pair, 0) + 1
    assert any(count >= 2 for pair, count in runs.items() if "b0" in pair)  # admitted again after it was dropped
    assert model._stats.pairs_partial
    assert _cells(model._stats) == _recount(stream, log)


def test_stores_under_the_rule_merge_to_the_sums_of_their_counts_and_a_snapshot_learns_on_as_the_original(
        tmp_path):
    models = []
    for seed, n in ((21, 900), (22, 1300)):
        m = _kdb()
        _learn(m, _planted(n, seed=seed), [])
        models.append(m)
    total = {}
    for m in models:
        for k, v in _cells(m._stats).items():
            total[k] = total.get(k, 0) + v
    for first, second in ((0, 1), (1, 0)):
        out = copy.deepcopy(models[first])
        out.merge(copy.deepcopy(models[second]))
        assert _cells(out._stats) == total
        assert _edges(out) == _edges(models[0]) | _edges(models[1])
    model = models[1]
    path = tmp_path / "kdb.snb"
    stream_nb.save(model, path)
    back = stream_nb.load(path)
    assert back._stats.pair_cursor == model._stats.pair_cursor
    assert back._stats.pair_revised == model._stats.pair_revised
    more = _planted(1200, seed=23)
    for m in (model, back):
        for x, y in more:
            m.learn_one(x, y)
    assert _edges(back) == _edges(model) and _cells(back._stats) == _cells(model._stats)
    for x, _ in more[:20]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    assert math.isfinite(sum(back.predict_proba_one(more[0][0]).values()))
