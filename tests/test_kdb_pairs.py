"""KDB's candidate pairs past the budget: the pairs among the class-informative attributes
(stats/selection/_informative.py), not TAN's pairs of the highest CMI.

The stream: four attributes carry the class in a k = 2 structure (a0 | y; a1 | y, a0; a2 | y, a1;
a3 | y, a1, a2) with weak links between them, and thirty noise attributes copy one another 95% of the
time (the strongest links, none of them about the class). Counts are checked against a recount of the
events learned while the store counted each pair. ``SPARSE_FLOOR`` is lowered so that a small stream
passes a small budget.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

from stream_nb import KDB, TAN, Parents
from stream_nb.exceptions import UnlearnError
from stream_nb.stats.budget import _budget

from test_pair_revision import _cells, _kept_by_name

BUDGET = 600_000
INFORMATIVE = ("a0", "a1", "a2", "a3")


@pytest.fixture(autouse=True)
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)  # the floor that spares small examples, off


def _wide(n, seed=0, noise=30, values=4, late=None):
    """[(x, y)]: the class drives a0..a3 (see the module notes); n00..n29 copy their predecessor 95% of the
    time. From event ``late`` on (if given), n05 says the class as a0 does."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(3))
        a0 = y if rng.random() < 0.7 else int(rng.integers(values))
        a1 = (a0 + y) % values if rng.random() < 0.6 else int(rng.integers(values))
        a2 = (a1 + y) % values if rng.random() < 0.6 else int(rng.integers(values))
        a3 = (a1 + a2) % values if rng.random() < 0.6 else int(rng.integers(values))
        x = {"a0": a0, "a1": a1, "a2": a2, "a3": a3}
        prev = int(rng.integers(values))
        for j in range(noise):
            prev = prev if rng.random() < 0.95 else int(rng.integers(values))
            x[f"n{j:02d}"] = prev
        if late is not None and i >= late:
            x["n05"] = y if rng.random() < 0.8 else int(rng.integers(values))
        out.append((x, y))
    return out


def _kdb():
    model = KDB(k=2, search=Parents(rebuild_every=100), memory_budget=BUDGET)
    model._stats.pair_blocks_ok = False  # the rule over selected sparse pairs, not the pair blocks that would fit
    return model


def _learn(model, stream, log=None):
    """One event at a time; ``log`` gets the pairs that counted each event (chosen before it was counted)."""
    for x, y in stream:
        model.learn_one(x, y)
        if log is not None:
            log.append(_kept_by_name(model._stats))


def _recount(stream, log):
    """{(class, a, value a, b, value b): count}, each pair kept at the end counted over the events since it
    was last admitted (the last run of events whose selection counted it)."""
    out = {}
    for a, b in log[-1]:
        since = len(log)
        while since and (log[since - 1] is None or (a, b) in log[since - 1]):
            since -= 1
        for x, y in stream[since:]:
            key = (y, a, x[a], b, x[b])
            out[key] = out.get(key, 0) + 1
    return out


def _edges(model):
    return {frozenset(e) for e in model._stats.selection_summary()["edges"]}


def test_kdb_keeps_the_pairs_of_the_class_informative_attributes_and_finds_their_planted_parents():
    stream = _wide(1000)
    kdb, tan = _kdb(), TAN(memory_budget=BUDGET)
    tan._stats.pair_blocks_ok = False  # TAN's rule over selected sparse pairs, not the pair blocks that would fit
    log = []
    _learn(kdb, stream, log)
    _learn(tan, stream)
    assert kdb._stats.pair_rule == "informative" and kdb._stats.pairs_selected
    assert _edges(kdb) == {frozenset(p) for p in itertools.combinations(INFORMATIVE, 2)}
    # TAN's rule, on the same stream and budget, keeps the noise attributes' strong links instead
    assert tan._stats.pairs_selected and _edges(tan)
    assert all(not (e & set(INFORMATIVE)) for e in _edges(tan)), _edges(tan)
    structure = kdb.structure
    assert structure["a0"] == [] and "a0" in structure["a1"] and "a1" in structure["a2"]
    assert set(structure["a3"]) == {"a1", "a2"}
    assert all(structure[f] == [] for f in structure if f.startswith("n"))  # no pair kept, no parent
    # every kept pair holds the events since it was admitted (here, the first selection's: all it saw)
    assert _cells(kdb._stats) == _recount(stream, log)


def test_an_attribute_that_comes_to_inform_the_class_gets_its_pairs_from_no_counts():
    stream = _wide(1500, seed=1, late=500)
    kdb = _kdb()
    log = []
    _learn(kdb, stream, log)
    fresh = [i for i, kept in enumerate(log) if kept is not None and ("n05", "a0") in kept]
    assert fresh and fresh[0] > 500 and len(fresh) >= 100
    # n05 says the class on its own, independent of a0 given the class: the pair is kept while on trial, then
    # its test given the class judges it (after 100 events of its own) and it is dropped, tried again later
    assert {"n05", "a0"} not in _edges(kdb) and {"a1", "a0"} in _edges(kdb)
    assert _cells(kdb._stats) == _recount(stream, log)  # its pairs hold the events since they came in
    assert kdb._stats.pairs_partial
    with pytest.raises(UnlearnError, match="came back"):  # an event learned before could not be taken back
        kdb.unlearn_one(*stream[0])


def test_kdb_stores_with_informative_pairs_merge_to_the_sums_of_their_counts_in_any_order():
    models = []
    for seed, n, late in ((11, 400, None), (12, 700, 200), (13, 500, None)):
        m = _kdb()
        _learn(m, _wide(n, seed=seed, late=late))
        assert m._stats.pairs_selected
        models.append(m)
    total = {}
    for m in models:
        for k, v in _cells(m._stats).items():
            total[k] = total.get(k, 0) + v
    kept = set().union(*(_edges(m) for m in models))
    merged = []
    for order in ((0, 1, 2), (2, 1, 0), (1, 0, 2)):
        out = copy.deepcopy(models[order[0]])
        for k in order[1:]:
            out.merge(copy.deepcopy(models[k]))
        assert _cells(out._stats) == total and _edges(out) == kept
        merged.append(out)
    x = _wide(1, seed=9)[0][0]
    assert merged[0].predict_proba_one(x) == pytest.approx(merged[1].predict_proba_one(x), rel=1e-12)
