"""The pair selection alone (:class:`~stream_nb.stats.selection.PairSelection`, no store): which attribute pairs
are counted, over feature indices. Each answer is checked against its definition written out pair by pair
(the diagonal, the row of a kept parent, a kept edge), merges against the union of the pairs named by feature
names, and a state against the part it came from; then through a store, whose selected tables hold no cell of
a pair the part does not keep."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from stream_nb import AODE, TAN, Tree
from stream_nb.exceptions import UnlearnError
from stream_nb.stats.budget import _budget
from stream_nb.stats.selection import PairSelection
from stream_nb.stats.tables import cells_of


def random_choice(rng, F: int, parents: float = 0.3, edges: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Kept parents (F,) and symmetric kept edges (F, F) drawn at random, no edge on the diagonal."""
    allowed = rng.random(F) < parents
    e = np.triu(rng.random((F, F)) < edges, 1)
    return allowed, e | e.T


def kept_by_definition(allowed, edges, a: int, b: int, F: int) -> bool:
    """The pair (a, b) over F features, a the row: the diagonal, a kept parent's row, or a kept edge (features
    past the choice's arrays keep only their diagonal)."""
    n = len(allowed)
    return a == b or (a < n and bool(allowed[a])) or (a < n and b < n and bool(edges[a, b]))


@pytest.mark.parametrize("seed", range(6))
def test_the_pairs_kept_are_those_the_definition_names_pair_by_pair(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    allowed, edges = random_choice(rng, n)
    sel = PairSelection("edges")
    F = n + int(rng.integers(0, 3))  # features the choice has not seen yet: none of their pairs kept
    assert sel.edge_ok(F) is None and sel.kept(F).all() and sel.parent_ok(np.arange(F)).all()
    sel.choose(allowed, edges)
    assert sel.selected
    want = np.array([[kept_by_definition(allowed, edges, a, b, F) for b in range(F)] for a in range(F)])
    np.testing.assert_array_equal(sel.kept(F), want)
    np.testing.assert_array_equal(sel.edge_ok(F), want)
    feats = rng.integers(0, n + 2, size=int(rng.integers(1, 7)))  # an event's features, some past the choice
    mask = sel.pair_mask(feats)
    for r, a in enumerate(feats.tolist()):
        assert sel.parent_ok(np.array([a]))[0] == (a < n and allowed[a])
        for q, b in enumerate(feats.tolist()):
            assert mask[r, q] == (a < n and kept_by_definition(allowed, edges, a, b, F)), (a, b)


def test_growing_keeps_the_choice_and_keeps_no_pair_of_a_new_feature():
    rng = np.random.default_rng(1)
    allowed, edges = random_choice(rng, 5, parents=0.5, edges=0.5)
    sel = PairSelection("parents")
    sel.choose(allowed, edges)
    before = sel.kept(8)
    sel.grow(8)
    assert sel.allowed.shape == (8,) and sel.edges.shape == (8, 8)
    np.testing.assert_array_equal(sel.kept(8), before)
    assert not sel.allowed[5:].any() and not sel.edges[5:].any() and not sel.edges[:, 5:].any()
    sel.grow(3)  # never shrinks
    assert sel.allowed.shape == (8,)
    sel.clear()
    assert not sel.selected and sel.kept(8).all() and sel.rule == "parents"


def named_pairs(sel: PairSelection, names: list) -> set:
    """The pairs ``sel`` keeps, by feature names."""
    kept = sel.kept(len(names))
    return {(names[a], names[b]) for a in range(len(names)) for b in range(len(names)) if kept[a, b]}


@pytest.mark.parametrize("seed", range(8))
def test_a_merge_counts_the_pairs_either_counts_by_name_and_is_partial_when_they_differed(seed):
    rng = np.random.default_rng(seed)
    mine_names = [f"f{i}" for i in rng.permutation(7)]
    theirs_names = [mine_names[i] for i in rng.permutation(7)[: int(rng.integers(2, 8))]]  # a subset, another order
    mine, theirs = PairSelection("edges"), PairSelection("edges")
    if seed % 4:  # sometimes one of them counts every pair
        mine.choose(*random_choice(rng, len(mine_names), 0.2, 0.3))
    if seed % 3:
        theirs.choose(*random_choice(rng, len(theirs_names), 0.2, 0.3))
    mine.advance(int(rng.integers(0, 100)))
    theirs.advance(int(rng.integers(0, 100)))
    mine.revised_at(float(rng.integers(0, 500)))
    theirs.revised_at(float(rng.integers(0, 500)))
    if seed == 5:
        theirs.mark_partial()
    before_mine, before_theirs = named_pairs(mine, mine_names), named_pairs(theirs, theirs_names)
    cursor, revised = max(mine.cursor, theirs.cursor), max(mine.revised, theirs.revised)
    fmap = np.array([mine_names.index(name) for name in theirs_names])
    kept = mine.widen(theirs, fmap, len(mine_names))
    got = {(mine_names[a], mine_names[b]) for a, b in zip(*np.nonzero(kept))}
    assert got == before_mine | before_theirs
    shared = {(u, v) for u in theirs_names for v in theirs_names}
    differed = (before_mine & shared) != before_theirs
    assert mine.partial == (differed or seed == 5)
    assert (mine.cursor, mine.revised) == (cursor, revised)
    assert named_pairs(theirs, theirs_names) == before_theirs  # the other store's selection is only read


def test_a_choice_mapped_to_another_stores_features_keeps_the_same_named_pairs():
    rng = np.random.default_rng(3)
    names = ["a", "b", "c", "d", "e"]
    sel = PairSelection("parents")
    allowed, edges = random_choice(rng, 5, 0.4, 0.4)
    sel.choose(allowed, edges)
    other = ["d", "zz", "a", "c"]  # zz: a feature the selection has no index of
    where = np.array([names.index(n) if n in names else -1 for n in other])
    pa, pe = sel.mapped(where)
    for g, u in enumerate(other):
        assert pa[g] == (u in names and allowed[names.index(u)])
        for h, v in enumerate(other):
            assert pe[g, h] == (u in names and v in names and edges[names.index(u), names.index(v)])
    follower = PairSelection("parents")
    sel.advance(7)
    sel.revised_at(300.0)
    sel.mark_partial()
    follower.follow(sel)
    assert (follower.cursor, follower.revised, follower.partial) == (7, 300.0, True)
    assert follower.allowed is None  # the schedule, not the choice


def test_partial_is_set_for_good_and_refuses_unlearning():
    sel = PairSelection("edges")
    sel.check_whole()
    sel.mark_partial()
    with pytest.raises(UnlearnError) as err:
        sel.check_whole()
    assert err.value.reason == "partial_pairs"
    other = PairSelection("edges")
    other.widen(sel, np.arange(3), 3)  # a merge with a partial store: partial too
    assert other.partial
    derived = PairSelection("edges")
    derived.adopt_partial(PairSelection())
    assert not derived.partial


@pytest.mark.parametrize("seed", range(4))
def test_a_state_gives_back_the_selection_and_writes_nothing_for_none(seed):
    assert PairSelection().state(4) == ({}, {})  # a store without a selection writes the state it always wrote
    rng = np.random.default_rng(seed)
    sel = PairSelection(["parents", "edges", "informative", None][seed])
    if seed < 3:
        sel.choose(*random_choice(rng, 6))
    if seed % 2:
        sel.advance(12345678901234567890)
        sel.revised_at(1234.5)
        sel.mark_partial()
    arrays, meta = sel.state(6)
    again = PairSelection.from_state(arrays, meta, 6, pairs=True)
    for k in ("rule", "cursor", "revised", "partial", "selected"):
        assert getattr(again, k) == getattr(sel, k), k
    if sel.selected:
        np.testing.assert_array_equal(again.allowed, sel.allowed)
        np.testing.assert_array_equal(again.edges, sel.edges)
    assert again.state(6)[1] == meta


@pytest.mark.parametrize("meta, arrays, message", [
    ({"pair_rule": "rows"}, {}, r"stats\.pair_rule: expected"),
    ({"pair_cursor": -1}, {}, r"stats\.pair_cursor: expected an integer"),
    ({"pair_cursor": True}, {}, r"stats\.pair_cursor"),
    ({"pair_revised": float("inf")}, {}, r"stats\.pair_revised: expected a number"),
    ({"pairs_partial": 1}, {}, r"stats\.pairs_partial: expected true or false"),
    ({}, {"pair_allowed": np.zeros(3, dtype=bool)}, r"stats\.pair_allowed, pair_edges: expected booleans"),
    ({}, {"pair_allowed": np.zeros(4, dtype=bool), "pair_edges": np.zeros((4, 4))}, r"expected booleans"),
])
def test_a_state_that_does_not_fit_is_refused_naming_the_key(meta, arrays, message):
    with pytest.raises(ValueError, match=message):
        PairSelection.from_state(arrays, meta, 4, pairs=True)


def test_a_choice_in_a_store_without_pairs_is_refused():
    arrays = {"pair_allowed": np.zeros(2, dtype=bool), "pair_edges": np.zeros((2, 2), dtype=bool)}
    with pytest.raises(ValueError, match="keeps no pairs"):
        PairSelection.from_state(arrays, {}, 2, pairs=False)


def test_a_copy_is_a_selection_of_its_own():
    sel = PairSelection("edges")
    sel.choose(*random_choice(np.random.default_rng(0), 4, 0.5, 0.5))
    twin = copy.deepcopy(sel)
    twin.grow(6)
    twin.mark_partial()
    assert sel.allowed.shape == (4,) and not sel.partial


# ----------------------------------------------------------------- the part as a store holds it


def wide(n, seed=0, features=14, values=6):
    """Events whose pairs pass a small budget: a chain of attributes that copy their predecessor."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(3))
        x = {"f0": int((2 * y + rng.integers(2)) % values)}
        for f in range(1, features):
            x[f"f{f}"] = int(x[f"f{f - 1}"] if rng.random() < 0.8 else rng.integers(values))
        out.append((x, y))
    return out


@pytest.mark.parametrize("model", [lambda: AODE(memory_budget=300_000), lambda: TAN(memory_budget=300_000, search=Tree(rebuild_every=50))])
def test_a_stores_selected_tables_hold_cells_of_the_pairs_its_selection_keeps_only(model, monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)
    from stream_nb.stats.budget import Layout

    monkeypatch.setattr(Layout, "blocks_allowed", lambda self, s: False)  # sparse selected tables, not pair blocks
    m = model()
    for x, y in wide(400):
        m.learn_one(x, y)
    s = m._stats
    sel = s.selection
    assert sel.selected and s.pairs_selected and s.pair_allowed is sel.allowed and s.pair_rule == sel.rule
    F = len(s.features)
    kept = sel.kept(F)
    for name in ("pair_count", "pair_feat"):
        table = getattr(s, name)
        idx, vals = cells_of(table, table.shape)
        idx = tuple(i[vals != 0] for i in idx)
        fa = s.value_feature[idx[1]]
        fb = idx[2] if name == "pair_feat" else s.value_feature[idx[2]]
        assert len(fa) and kept[fa, fb].all(), name  # no cell of a dropped pair
        assert len(np.unique(fa * F + fb)) > F  # and more than the diagonal
    summary = s.memory_used()["pairs_selected"]
    assert summary == sel.summary(s.features) and summary["rule"] == sel.rule
    # the budget counts the choice's arrays as the store's own, as it did when they were the store's attributes
    used, choice = s.memory_used(), sel.allowed.nbytes + sel.edges.nbytes
    s.selection = PairSelection(sel.rule)  # (the same tables, the choice not held)
    without = s.memory_used()
    s.selection = sel
    assert (used["bytes"] - without["bytes"], used["cells"] - without["cells"]) == (choice, sel.allowed.size + sel.edges.size)


def test_a_stores_state_writes_the_selection_where_the_format_always_had_it(monkeypatch):
    """The state's header is written in its keys' order (snapshots/_format.py), so the selection's keys keep
    their place among the store's: the rule, then pair_blocks (a TAN's model reads pair blocks), then the
    revisions and partial; the kept pairs' arrays after the counts. A loaded store writes the same."""
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)
    from stream_nb.stats.budget import Layout

    monkeypatch.setattr(Layout, "blocks_allowed", lambda self, s: False)
    m = TAN(memory_budget=300_000, search=Tree(rebuild_every=50))
    for x, y in wide(700):
        m.learn_one(x, y)
    s = m._stats
    assert s.pair_blocks_ok and s.selection.selected and s.selection.revised  # every key below is written
    arrays, meta = s.state()
    keys = [k for k in meta if k in ("pair_rule", "pair_blocks", "pair_cursor", "pair_revised", "pairs_partial")]
    assert keys[:4] == ["pair_rule", "pair_blocks", "pair_cursor", "pair_revised"]
    names = list(arrays)
    at = names.index("pair_allowed")
    assert names[at + 1] == "pair_edges" and at > names.index("value_count")
    again = type(s).from_state(arrays, meta)
    arrays2, meta2 = again.state()
    assert list(meta2) == list(meta) and list(arrays2) == list(arrays)
    assert meta2 == meta
    np.testing.assert_array_equal(arrays2["pair_edges"], arrays["pair_edges"])
