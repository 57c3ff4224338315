"""The tuple selection alone (:class:`~stream_nb.stats.selection.TupleSelection`, no store): KDB's candidate
parents, over feature indices. Each answer is checked against its definition written out feature by feature,
merges against the union of the candidates named by feature names, and a state against the part it came
from; then through a store, whose budget counts the choice's arrays as it did when they were the store's."""

from __future__ import annotations

import numpy as np
import pytest

from stream_nb import KDB, EqualFrequency, Parents
from stream_nb.stats.budget import _budget
from stream_nb.stats.selection import TupleSelection
from test_part_selection import wide


def random_cand(rng, F: int, p: float = 0.35) -> np.ndarray:
    cand = rng.random((F, F)) < p
    np.fill_diagonal(cand, False)
    return cand


@pytest.mark.parametrize("seed", range(5))
def test_each_features_candidates_and_the_units_are_those_of_the_choice(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    sel = TupleSelection(rule=True)
    F = n + int(rng.integers(0, 3))
    np.testing.assert_array_equal(sel.units(F), ~np.eye(F, dtype=bool))  # no choice: every other feature
    cand = random_cand(rng, n)
    sel.choose(cand)
    lists = sel.lists()
    for f in range(n):
        assert [g for g in lists[f].tolist() if g >= 0] == [g for g in range(n) if cand[f, g]]
        assert (lists[f][len(np.flatnonzero(cand[f])):] == -1).all()
    assert lists.shape[1] == max(int(cand.sum(1).max()), 0)
    units = sel.units(F)
    assert all(units[f, g] == (f < n and g < n and bool(cand[f, g])) for f in range(F) for g in range(F))
    other = random_cand(rng, n)
    sel.choose(other)  # a new choice: its own lists, not the last one's
    assert [[g for g in row if g >= 0] for row in sel.lists().tolist()] == [np.flatnonzero(r).tolist() for r in other]


def test_growing_keeps_the_choice_and_gives_a_new_feature_no_candidate():
    rng = np.random.default_rng(2)
    sel = TupleSelection(rule=True)
    assert sel.grow(5) is None  # nothing chosen: nothing to grow
    cand = random_cand(rng, 4, 0.6)
    sel.choose(cand)
    grown = sel.grow(6)
    assert grown.shape == (6, 6) and (grown[:4, :4] == cand).all() and not grown[4:].any() and not grown[:, 4:].any()
    assert sel.grow(3) is grown  # never shrinks
    sel.wait()
    sel.clear()
    assert not sel.selected and not sel.pending and sel.rule


def test_a_pending_choice_counts_from_the_events_learned_when_it_is_resolved():
    sel = TupleSelection(rule=True)
    assert sel.resolve(40.0) is False and sel.start == 0.0  # not pending: counted from the first event
    sel.wait()
    assert sel.pending and sel.resolve(250.0) is True and (sel.pending, sel.start) == (False, 250.0)
    assert sel.resolve(900.0) is False and sel.start == 250.0


def named(sel: TupleSelection, names: list) -> set:
    units = sel.units(len(names))
    return {(names[f], names[g]) for f in range(len(names)) for g in range(len(names)) if units[f, g]}


@pytest.mark.parametrize("seed", range(8))
def test_a_merge_counts_the_candidates_either_counts_by_name(seed):
    rng = np.random.default_rng(seed)
    mine_names = [f"f{i}" for i in rng.permutation(6)]
    theirs_names = [mine_names[i] for i in rng.permutation(6)[: int(rng.integers(2, 7))]]
    mine, theirs = TupleSelection(rule=True), TupleSelection(rule=True)
    if seed % 4:
        mine.choose(random_cand(rng, len(mine_names)))
    if seed % 3:
        theirs.choose(random_cand(rng, len(theirs_names)))
    for sel, names in ((mine, mine_names), (theirs, theirs_names)):
        if seed % 2:
            sel.set_score(rng.random((len(names), len(names))))
        sel.resolve(0.0)
        sel.start = float(rng.integers(0, 300))  # (as a state would restore it)
        sel.set_ready(bool(rng.integers(2)))
        if rng.random() < 0.5:
            sel.wait()
    before_mine, before_theirs = named(mine, mine_names), named(theirs, theirs_names)
    want_score = {}
    for sel, names in ((mine, mine_names), (theirs, theirs_names)):
        if sel.score is not None:
            for f, u in enumerate(names):
                for g, v in enumerate(names):
                    want_score[(u, v)] = max(want_score.get((u, v), 0.0), float(sel.score[f, g]))
    start, ready, pending = mine.start + theirs.start, mine.ready or theirs.ready, mine.pending and theirs.pending
    fmap = np.array([mine_names.index(name) for name in theirs_names])
    shared = {(u, v) for u in theirs_names for v in theirs_names}
    assert mine.differs(theirs, fmap, len(mine_names)) == ((before_mine & shared) != before_theirs)
    units = mine.widen(theirs, fmap, len(mine_names))
    assert {(mine_names[f], mine_names[g]) for f, g in zip(*np.nonzero(units))} == before_mine | before_theirs
    assert (mine.start, mine.ready, mine.pending) == (start, ready, pending)
    got = {(u, v): float(mine.score[f, g]) for f, u in enumerate(mine_names) for g, v in enumerate(mine_names)}
    assert got == {k: want_score.get(k, 0.0) for k in got}
    assert named(theirs, theirs_names) == before_theirs  # the other store's choice is only read


@pytest.mark.parametrize("seed", range(4))
def test_a_state_gives_back_the_choice_and_writes_nothing_without_one(seed):
    assert TupleSelection().state(3) == ({}, {})
    rng = np.random.default_rng(seed)
    sel = TupleSelection(rule=bool(seed % 2))
    if seed:
        sel.choose(random_cand(rng, 5))
        sel.set_score(None if seed == 1 else rng.random((4, 4)))  # a score of fewer features: padded with zeros
        sel.start = 120.0 * seed
    arrays, meta = sel.state(5)
    assert ("tuple_rule" in meta) == sel.rule and (not sel.rule or list(meta)[0] == "tuple_rule")  # the rule first
    again = TupleSelection.from_state(arrays, meta, 5, tuples=3)
    assert (again.rule, again.selected, again.pending, again.start) == (sel.rule, sel.selected, sel.pending, sel.start)
    if sel.selected:
        np.testing.assert_array_equal(again.cand, sel.cand)
        want = np.zeros((5, 5))
        if sel.score is not None:
            want[:4, :4] = sel.score[:4, :4]
        np.testing.assert_array_equal(again.score, want)
    assert again.state(5)[1] == meta


@pytest.mark.parametrize("arrays, meta, tuples, message", [
    ({}, {"tuple_rule": 1}, 3, r"stats\.tuple_rule: expected a boolean"),
    ({"tuple_cand": np.zeros((3, 3), dtype=bool)}, {}, 3, r"stats\.tuple_cand: expected booleans of shape \[4, 4\]"),
    ({"tuple_cand": np.zeros((4, 4), dtype=bool)}, {}, 0, r"in a store that keeps no t-way tables"),
    ({"tuple_cand": np.zeros((4, 4), dtype=bool)}, {"tuple_from": -1}, 3, r"stats\.tuple_pending, tuple_from"),
    ({"tuple_cand": np.ones((4, 4), dtype=bool)}, {"tuple_pending": True}, 3, r"a pending selection has no candidate"),
    ({"tuple_cand": np.zeros((4, 4), dtype=bool), "tuple_score": np.full((4, 4), np.inf)}, {}, 3, r"stats\.tuple_score"),
])
def test_a_state_that_does_not_fit_is_refused_naming_the_key(arrays, meta, tuples, message):
    with pytest.raises(ValueError, match=message):
        TupleSelection.from_state(arrays, meta, 4, tuples)


def chain(n, seed=0):
    """The selection part's chain of copies (``wide``), its values numbers (binned by KDB's discretiser)."""
    return [({k: float(v) for k, v in x.items()}, y) for x, y in wide(n, seed, features=12, values=5)]


def test_a_stores_budget_counts_the_choices_arrays_and_its_tables_hold_candidates_only(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)
    m = KDB(k=2, numeric=EqualFrequency(warmup=10), search=Parents(rebuild_every=20), memory_budget=400_000)
    for x, y in chain(600):
        m.learn_one(x, y)
    s = m._stats
    sel = s.tuple_selection
    assert sel.selected and not sel.pending and s.tuples_selected and s.tuple_cand is sel.cand and s.tuple_rule
    assert s.tuple_lists() is sel.lists() and m.memory_used()["tuples_selected"] == sel.summary()
    F = len(s.features)
    cand = sel.units(F)
    idx, vals = s.tuple_count.arrays()
    cells = np.unravel_index(idx[idx >= 0], s.tuple_count.shape)
    child, parents = s.value_feature[cells[1]], [s.value_feature[a] for a in cells[2:]]
    assert len(child) and all(cand[child, p].all() for p in parents)  # no tuple of a non-candidate parent
    used, held = s.memory_used(), sel.cand.nbytes + sel.score.nbytes
    s.tuple_selection = TupleSelection(rule=True)  # (the same tables, the choice not held)
    without = s.memory_used()
    s.tuple_selection = sel
    assert used["bytes"] - without["bytes"] == held and used["cells"] - without["cells"] == sel.cand.size + sel.score.size
