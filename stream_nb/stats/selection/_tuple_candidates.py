"""Candidate parents: KDB's t-way tables keep counts only for the parent sets its structure can choose,
when all of them do not fit the memory budget (selective KDB).

KDB with k >= 2 parents reads ``tuple_count[c, x_f, x_p1, ..., x_pk]`` and
``tuple_feat[c, x_p1, ..., x_pk, f]`` (a feature f with fewer parents: a
diagonal, its last parent repeated). Kept whole, these tables take every
t-tuple of an event's values: on 200 attributes an event adds 8 million
cells to each, more than 256 MiB hold. A store whose model sets
``tuple_rule`` (KDB without forgetting, over one layer of bins) therefore
keeps, once the sparse t-way tables would pass their share of the budget,
only the cells whose parents are all *candidates* of their child:
``tuple_cand[f, g]`` says that g is a candidate parent of f, and a cell is
kept when every parent value's feature is a candidate of the child's
(:class:`TupleSelectedTable` filters every addition, removal included). An
event then adds at most Σ_f m_f^(t-1) cells per table, m_f the candidates of
f, and the structure chooses each attribute's parents among its candidates.
The count tables add them in a compiled loop over the hash tables
(:func:`add_selected_tuples`, :meth:`~stream_nb.stats.tables.CountTables.add_selected_tuples`).

**How the candidates are chosen.** Each attribute's candidates are the
attributes with the highest conditional mutual information I(X_f; X_g | C)
with it (the CMI the model computed from the pair counts at its last
rebuild, ``tuple_score``, kept with the selection in snapshots; without one,
:func:`~stream_nb.stats.cmi_from_cells`; the pair counts hold exact counts of
every event learned for the pairs kept; ties by name), at most
:data:`CANDIDATES_PER_K` x k of them, and only those with a positive CMI.
Under candidate pairs (``pairs_selected``), whose counts hold the events
since each pair's admission, the ranking is the evidence of those counts
instead, -log p of the G-test given the class of
:func:`~stream_nb.stats.selection._pair_tests.pair_tests` (the plug-in CMI
of an independent pair that holds a few hundred events over thousands of
cells is larger than that of a planted one counted from the start). A unit
is one candidate (f, g): when the tables would pass their share of the
budget again, the units are ranked in turns, every attribute's best before
any one's second (by that score; an attribute whose scores are all 0 comes
last, see ``uses`` in :func:`revise_tuples`), and the best are kept whose
cells fit in a quarter of the share (each cell is charged to the
lowest-ranked of its units, so dropping a suffix of the ranking frees
exactly the cells charged to it), at least one unit fewer than before.

**Revised at each rebuild.** The first choice rests on the CMI of a few
events (often a hundred), where an attribute's planted parent can rank below
noise. At each later rebuild of its model (:func:`revise_tuples`) every
attribute keeps as many candidates as it holds, and a non-candidate that now
ranks among the better half of that many (by the rebuild's CMI, read off
pair counts that keep growing), and whose dependence on the attribute given
the class the G-test finds significant (Bonferroni over the pairs; noise
does not swap candidates, each time losing counts), replaces the
lowest-ranked one; a candidate
near the cut is not swapped, so that two of about the same score do not
trade places, each time losing their counts. An attribute that holds fewer
candidates than the first choice gives (one whose pairs were not counted
then, so ranked with no CMI) takes its best significant non-candidates up to
that number, while the tables hold less than half of what a narrowing
leaves (so that candidates the budget dropped are not taken back, each time
losing their counts). The structure of that rebuild
is chosen among the candidates held before it (they have counts); a
candidate admitted becomes a possible parent at the next rebuild.

**What the counts are.** A candidate dropped loses its cells. Without a
revision that admits one, **every cell kept holds exactly the counts of
every event learned since the tables existed**. **A candidate admitted by a
revision starts from no counts** (the events learned while it was not
counted are gone): its cells hold the events since its admission, and from
then on unlearning is refused (``UnlearnError``, reason
``"partial_pairs"``: :attr:`~stream_nb.stats.selection.PairSelection.partial`,
kept in snapshots), since an event learned before could not be told from one
learned since. When the tables first pass the budget with events already
learned, the candidates are chosen from those events and their cells keep
all their counts. When they pass it before anything can be ranked (a wide
stream's first event: all of its t-tuples do not fit), the selection is
*pending*: the t-way tables hold nothing, the model predicts without
attribute parents (KDB's structure has none before its first rebuild
anyway), and its first rebuild chooses the candidates from the pair counts
of every event so far; the t-way tables count from that event on
(``tuple_from``: the events learned before it, shown by ``snapshot
inspect``). The parameters P(x_f | c, x_pa(f)) then come from the events
since then, the class and single-value counts from all of them.

Limits, stated: as with candidate pairs, an event with missing values is
counted as ``missing="ignore"`` counts it under a selection (or while it is
pending), models with forgetting and two-layer stores (``discretiser="mdl"``)
set no rule (their t-way tables are sparse and unbounded, as before).

**Merges** (:func:`widen_tuples_to_either`) keep every candidate either store
keeps, each cell the sum of both stores' cells: a union and sums, so a group
of stores merges to the same counts and candidates in any order. A candidate
that only one of two stores kept (or a store whose selection was still
pending, its tables empty) then holds the events of one of them:
``pairs_partial`` is set, as for pairs. A store without a selection counts
every tuple, so merged with one the selection ends (the budget chooses again
at the next event).
"""

from __future__ import annotations

import math

import numpy as np

from ...kernels import compiled
from ..discretiser import ALPHA
from ._candidates import cmi_from_cells
from ._pair_tests import pair_tests
from ._significance import chi2_logsf
from ._tuple_selection import TupleSelection
from ..tables import FilteredTable, SparseTable, cells_of

__all__ = ["CANDIDATES_PER_K", "TupleSelectedTable", "choose_tuples", "prune_tuples", "refresh_tuple_selection",
           "restore_tuple_selection", "settle_tuples", "tuple_room", "tuples_wait", "revise_tuples", "selected_tuple_cells", "add_selected_tuples",
           "widen_tuples_to_either"]

_TUPLES = ("tuple_count", "tuple_feat")

#: Candidates per attribute at the first choice, per attribute parent (k): 2 x k (4 for k = 2)
CANDIDATES_PER_K = 2


def _feature_of(vf: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The feature of each column (-1 past the map or for a detached column)."""
    inside = (cols >= 0) & (cols < len(vf))
    return np.where(inside, vf[np.where(inside, cols, 0)], -1)


def tuple_kept(cand: np.ndarray, child: np.ndarray, parents: list) -> np.ndarray:
    """Whether a t-tuple whose child is feature ``child`` and whose parent values are of features
    ``parents`` (one array per parent axis) is kept: every parent a candidate of the child."""
    F = len(cand)
    ok = (child >= 0) & (child < F)
    sc = np.where(ok, child, 0)
    for p in parents:
        inp = (p >= 0) & (p < F)
        ok &= inp & cand[sc, np.where(inp, p, 0)]
    return ok


class TupleSelectedTable(FilteredTable):
    """A :class:`SparseTable` of t-way counts that adds only the cells whose parents are candidates of their
    child: ``tuple_count[c, x_child, x_parents...]`` or, with ``by_feature``, ``tuple_feat[c, x_parents...,
    child]``; ``cand`` is (F, F) over the features, ``vf`` maps a column to its feature."""

    __slots__ = ("cand", "vf", "by_feature")

    def _like(self, shape, slots: int) -> TupleSelectedTable:
        out = TupleSelectedTable(shape, slots=slots)
        out.cand, out.vf, out.by_feature = self.cand, self.vf, self.by_feature
        return out

    def kept(self, keys: np.ndarray) -> np.ndarray:
        idx = np.unravel_index(keys, self.shape)
        if self.by_feature:
            child, parents = idx[-1], [_feature_of(self.vf, a) for a in idx[1:-1]]
        else:
            child, parents = _feature_of(self.vf, idx[1]), [_feature_of(self.vf, a) for a in idx[2:]]
        return tuple_kept(self.cand, child, parents)

    def add_kept(self, idx, w) -> None:
        """Add cells known to be kept (made by :func:`selected_tuple_cells`), without filtering them."""
        b = np.broadcast_arrays(*(np.asarray(i, dtype=np.int64) for i in idx), np.asarray(w, dtype=float))
        SparseTable.add_flat(self, self.flat(b[:-1]), b[-1].ravel())


def refresh_tuple_selection(s) -> None:
    """Give the selected t-way tables of store ``s`` the current column -> feature map, and its selection the
    features it has now; a table made again (EM's twin, a reload) is filtered as it comes."""
    cand = s.tuple_selection.grow(len(s.features))
    if cand is None:
        return
    for p in s._sets():
        for name in _TUPLES:
            t = getattr(s, p + name, None)
            if not isinstance(t, TupleSelectedTable):
                _select_tables(s, cand)
                return
            t.vf, t.cand = s.value_feature, cand


def _tuple_after(s, one: int) -> int:
    """Bytes the sparse t-way tables of ``s`` could take once ``one`` more cells are in each (a hash table
    doubles when half full)."""
    after = 0
    for p in s._sets():
        for name in _TUPLES:
            table = getattr(s, p + name)
            size, need = table.nbytes // 16, len(table) + one
            while 2 * need > size:
                size *= 2
            after += 16 * size
    return after


def tuple_room(s, k: int) -> bool:
    """Under a tuple rule, whether the next event of ``k`` values fits the sparse t-way tables' share of
    the budget (:meth:`~stream_nb.stats.Stats.tuple_limit`): True; False when candidates were just chosen or
    dropped to make room (the caller looks again). An event always fits once nothing is left to drop."""
    sel = s.tuple_selection
    if not sel.rule or not s.tuples or s.memory_budget is None or not s.tuples_sparse:
        return True
    if sel.pending:
        return True  # the tables take nothing until the model chooses the candidates
    t = s.tuples
    cand = sel.cand
    one = k**t if cand is None else int((cand.sum(1).astype(np.int64) ** (t - 1))[cand.any(1)].sum())
    if _tuple_after(s, one) <= s.tuple_limit():
        return True
    return not prune_tuples(s, s.tuple_limit(), t - 1)


def tuples_wait(s, cells: int) -> bool:
    """Dense t-way tables of ``s`` turning sparse with ``cells`` cells that do not fit their share of the
    budget, before the model has a structure to rank candidates by: True, the selection is pending and the
    cells are not moved (nothing is kept until the model's first rebuild; see the module notes)."""
    sel = s.tuple_selection
    if not sel.rule or s.memory_budget is None or sel.ready or sel.selected:
        return sel.pending
    if 64 * cells <= s.tuple_limit():
        return False
    sel.wait()
    return True


def settle_tuples(s) -> None:
    """After the t-way tables of ``s`` turned sparse: a pending selection takes effect (tables holding nothing)."""
    if s.tuple_selection.pending and s.tuple_selection.cand is None:
        F = len(s.features)
        apply_tuple_selection(s, np.zeros((F, F), dtype=bool))


def _select_tables(s, cand: np.ndarray) -> None:
    """Make every t-way table of ``s`` a :class:`TupleSelectedTable` holding its kept cells under ``cand``: a
    sparse table's found in one compiled pass over its slots and copied slot by slot
    (:func:`~stream_nb.kernels._tuples.tuple_kept_cells`, :func:`~stream_nb.kernels._hashed.copy_cells`), a
    dense one's read cell by cell."""
    C, V, F, t = len(s.classes), len(s.value_keys), len(s.features), s.tuples
    for p in s._sets():
        for name, by_feature in zip(_TUPLES, (False, True)):
            old = getattr(s, p + name)
            dims = (C,) + (V,) * (t if not by_feature else t - 1) + ((F,) if by_feature else ())
            if isinstance(old, SparseTable):
                keys, vals = old.arrays()
                slots = compiled().tuple_kept_cells(
                    keys, vals, np.array(old.shape, dtype=np.int64), np.array(dims, dtype=np.int64),
                    np.ascontiguousarray(s.value_feature, dtype=np.int64), np.ascontiguousarray(cand, dtype=bool),
                    by_feature)
                new = TupleSelectedTable(old.shape, slots=2 * max(len(slots), 1))
                compiled().copy_cells(keys, vals, slots, *new.arrays(), old.shape[-1], new.rows_held())  # (no index)
                new.set_held(len(slots))
            else:
                idx, vals = cells_of(old, dims)
                if by_feature:
                    ok = tuple_kept(cand, idx[-1], [_feature_of(s.value_feature, a) for a in idx[1:-1]])
                else:
                    ok = tuple_kept(cand, _feature_of(s.value_feature, idx[1]),
                                    [_feature_of(s.value_feature, a) for a in idx[2:]])
                new = TupleSelectedTable(old.shape, slots=2 * max(int(ok.sum()), 1))
                new.cand, new.vf, new.by_feature = cand, s.value_feature, by_feature
                if ok.any():
                    new.add_kept(tuple(a[ok] for a in idx), vals[ok])
            new.cand, new.vf, new.by_feature = cand, s.value_feature, by_feature
            s.tables.replace(p + name, new)
    s.epoch += 1


def apply_tuple_selection(s, cand: np.ndarray, *, start: bool = False) -> None:
    """Keep only the t-tuples of candidate parents ``cand`` (F, F) in every t-way table of ``s``, from now on.
    The budget only narrows (``cand`` is intersected with the one held); with ``start`` ``cand`` replaces it:
    a pending selection takes its first candidates, a revision or a merge admits others (from the cells
    the tables hold: none of a candidate admitted)."""
    F = len(s.features)
    c = np.zeros((F, F), dtype=bool)
    c[: min(len(cand), F), : min(len(cand), F)] = cand[:F, :F]
    np.fill_diagonal(c, False)
    held = s.tuple_selection.cand
    if held is not None and not start:
        c &= held[:F, :F]
    s.tuple_selection.choose(c)
    _select_tables(s, c)


def _scaled(s, cmi: np.ndarray) -> np.ndarray:
    """What candidates are ranked by, given the model's I(X_f; X_g | C) ``cmi`` (F, F): ``cmi`` itself while
    every pair's counts hold the same events; under candidate pairs (``pairs_selected``), whose counts hold
    the events since each pair's admission (a few hundred for a pair on trial, where the plug-in CMI of an
    independent pair is large), the evidence of those counts, -log p of the G-test of X_f and X_g given the
    class of :func:`~stream_nb.stats.selection._pair_tests.pair_tests` (the CMI scaled by the events the
    pair has seen, against its degrees of freedom); 0 where the counts show nothing."""
    if not s.pairs_selected:
        return np.asarray(cmi, dtype=float)
    given = pair_tests(s.observed())[1]
    return np.maximum(-given, 0.0)


def _ranking(s) -> np.ndarray:
    """(F, F) I(X_f; X_g | C) the candidates are ranked by: the CMI they were chosen by (kept with the
    selection, so that a restored store narrows as the original), else the model's at its last rebuild,
    else read off the pair counts (observed-only ones when kept); 0 where none."""
    F = len(s.features)
    score = s.tuple_selection.score
    if score is None:
        return _scaled(s, cmi_from_cells(s.observed()))
    out = np.zeros((F, F))
    n = min(len(score), F)
    out[:n, :n] = score[:n, :n]
    return out


def choose_tuples(s, k: int, cmi: np.ndarray | None = None) -> None:
    """Resolve a pending selection (or make the first one): each attribute's candidates are the up to
    ``CANDIDATES_PER_K * k`` others with the highest positive CMI with it (``cmi``, the model's, or
    :func:`_ranking`; ties by name)."""
    F = len(s.features)
    if cmi is not None:
        s.tuple_selection.set_score(_scaled(s, cmi))
    cmi = _ranking(s)
    s.tuple_selection.set_score(cmi)
    names = [str(n) for n in s.features]
    m = CANDIDATES_PER_K * max(k, 1)
    cand = np.zeros((F, F), dtype=bool)
    for f in range(F):
        others = [g for g in np.flatnonzero(cmi[f] > 0).tolist() if g != f]
        others.sort(key=lambda g: (-cmi[f, g], names[g]))
        cand[f, others[:m]] = True
    pending = s.tuple_selection.resolve(float(s.class_count[: len(s.classes)].sum()))
    apply_tuple_selection(s, cand, start=pending)


def _ordered(score: np.ndarray, names: list) -> np.ndarray:
    """(F, F): each row's features by decreasing ``score``, ties by name."""
    F = len(names)
    by_name = np.empty(F, dtype=np.int64)
    by_name[sorted(range(F), key=lambda g: names[g])] = np.arange(F)
    return np.lexsort((np.broadcast_to(by_name, (F, F)), -score), axis=-1)


def _significant(s, cmi: np.ndarray) -> np.ndarray:
    """(F, F): the pairs whose CMI rejects independence given the class, by the G-test 2 n I(X_f; X_g | C)
    against the chi-square with C (|X_f| - 1)(|X_g| - 1) degrees of freedom (n: the fewer events of the
    two features), at level :data:`~stream_nb.stats.G_TEST_ALPHA` shared among the pairs (Bonferroni)."""
    F, C = len(s.features), s.n_classes
    if s.pairs_selected:  # ``cmi`` is already each pair's evidence, -log p (see _scaled)
        return cmi >= -math.log(ALPHA / max(F * (F - 1) // 2, 1))
    n = np.asarray(s.feat_count[:C, :F], dtype=float).sum(0)
    r = np.maximum(np.asarray(s.n_values[:F], dtype=float) - 1.0, 0.0)
    df = np.maximum(float(np.count_nonzero(s.class_count[:C])) * r[:, None] * r[None, :], 1.0)
    g = 2.0 * np.minimum(n[:, None], n[None, :]) * np.maximum(cmi, 0.0)
    out = np.zeros((F, F), dtype=bool)
    has = g > 0
    if has.any():
        out[has] = chi2_logsf(g[has], df[has]) <= math.log(ALPHA / max(F * (F - 1) // 2, 1))
    return out


def _held_cells(s) -> int:
    """The cells the t-way tables of ``s`` hold, every count set."""
    return sum(len(getattr(s, p + name)) for p in s._sets() for name in _TUPLES)


def revise_tuples(s, cmi: np.ndarray, uses: np.ndarray | None = None) -> bool:
    """Revise the candidate parents of ``s`` at a rebuild of its model, by the rebuild's CMI ``cmi`` (F, F)
    (see the module notes). ``uses`` (F,): the attributes the model keeps (selective KDB; None: all): the
    others' scores are 0, so that a narrowing drops their candidates first, and they take none; the
    attributes kept take candidates up to the first choice's number whatever the tables hold (a narrowing
    then drops each one's last first). Then each attribute keeps as many candidates as it holds; a non-candidate among its
    better half of that many, whose CMI the G-test finds significant (:func:`_significant`), replaces the
    lowest-ranked kept one (ties by name); while the tables hold less than half of what a narrowing leaves
    (:func:`prune_tuples`), an attribute holding fewer than the first choice gives (``CANDIDATES_PER_K * k``)
    takes its best significant non-candidates up to that number.
    True if a candidate was admitted (it starts from no counts, and unlearning is refused from then on)."""
    sel = s.tuple_selection
    if not sel.rule or sel.cand is None or sel.pending:
        return False
    F = len(s.features)
    given = _scaled(s, cmi)
    if uses is not None:
        unused = np.ones(F, dtype=bool)  # (a feature the model has not seen yet: none of its candidates)
        m = min(len(uses), F)
        unused[:m] = ~np.asarray(uses, dtype=bool)[:m]
        given = np.array(given, dtype=float)
        given[unused[: len(given)]] = 0.0  # their tuples are never read: the first a narrowing drops
    sel.set_score(given)
    score = _ranking(s)
    kept = sel.units(F)  # (a choice is held: its candidates, padded to the features)
    K = kept.sum(1)
    order = _ordered(score, [str(x) for x in s.features])
    rows = np.arange(F)[:, None]
    kept_o = kept[rows, order]
    able = _significant(s, score)[rows, order] & (order != rows)  # may be admitted
    lead = able & ~kept_o & (np.cumsum(able, axis=1) <= (K[:, None] + 1) // 2)
    chosen = kept_o | lead
    chosen &= np.cumsum(chosen, axis=1) <= K[:, None]
    if uses is not None or _held_cells(s) < s.tuple_limit() // (16 * 2 * 4) // 2:  # well within what a narrowing leaves
        # (or only the model's attributes hold candidates: a narrowing then drops each one's last first)
        room = np.maximum(CANDIDATES_PER_K * max(s.tuples - 1, 1) - K, 0)  # below the first choice's number
        if uses is not None:
            room[unused] = 0
        rest = able & ~chosen
        chosen |= rest & (np.cumsum(rest, axis=1) <= room[:, None])
    new = np.zeros((F, F), dtype=bool)
    new[rows, order] = chosen
    admitted = bool((new & ~kept).any())
    if admitted:
        s.selection.mark_partial()  # the candidates admitted start from no counts
    if (new != kept).any():
        apply_tuple_selection(s, new, start=True)
    return admitted


def widen_tuples_to_either(s, other, fmap: np.ndarray) -> None:
    """Before ``other``'s counts are added into ``s`` (a merge; ``fmap`` maps other's features to s's, which
    holds them all): count in ``s`` the tuples of every candidate parent either store counts (see the module
    notes). Nothing without a selection in either."""
    mine, theirs = s.tuple_selection, other.tuple_selection
    if not (mine.selected or theirs.selected):
        return
    F = len(s.features)
    if other.selection.partial or mine.differs(theirs, fmap, F):
        s.selection.mark_partial()
    units = mine.widen(theirs, fmap, F)
    if (units | np.eye(F, dtype=bool)).all():  # every tuple counted again
        for p in s._sets():
            for name in _TUPLES:
                t = getattr(s, p + name)
                if isinstance(t, TupleSelectedTable):
                    s.tables.replace(p + name, t.unfiltered())
        mine.clear()
        s.epoch += 1
        return
    apply_tuple_selection(s, units, start=True)


def _unit_cells(s, rank: np.ndarray) -> np.ndarray:
    """Cells held charged to each unit (f, g) as ``f * F + g``: a cell to the lowest-ranked of its units."""
    F = len(s.features)
    per = np.zeros(F * F)
    for p in s._sets():
        for name, by_feature in zip(_TUPLES, (False, True)):
            table = getattr(s, p + name)
            idx, _ = cells_of(table, table.shape)
            if by_feature:
                child, parents = idx[-1], [_feature_of(s.value_feature, a) for a in idx[1:-1]]
            else:
                child, parents = _feature_of(s.value_feature, idx[1]), [_feature_of(s.value_feature, a) for a in idx[2:]]
            ok = (child >= 0) & (child < F) & np.logical_and.reduce([(q >= 0) & (q < F) for q in parents])
            units = np.stack([child[ok] * F + q[ok] for q in parents])  # (t - 1, cells)
            worst = np.take_along_axis(units, np.argmax(rank[units], axis=0)[None], axis=0)[0]
            per += np.bincount(worst, minlength=F * F)
    return per


def prune_tuples(s, limit: int, k: int) -> bool:
    """Make room in the t-way tables of a store with a tuple rule (see the module notes): the first time,
    choose the candidates (or leave the selection pending when no event was learned); then drop the
    lowest-ranked candidates so that the cells held fit in a quarter of ``limit`` bytes' worth. False
    (nothing done) without a rule or when nothing is left to drop."""
    sel = s.tuple_selection
    if not sel.rule:
        return False
    F = len(s.features)
    if sel.cand is None:
        if not sel.ready:  # no structure yet, nothing to rank by: wait for the model's first rebuild
            sel.wait()
            apply_tuple_selection(s, np.zeros((F, F), dtype=bool))
        else:
            choose_tuples(s, k)
        return True  # the caller looks again: narrowed further only if the candidates' cells do not fit
    cmi = _ranking(s)
    names = [str(n) for n in s.features]
    live = np.argwhere(sel.cand[:F, :F])
    if not len(live):
        return sel.pending  # pending: the tables hold nothing and take nothing until the first rebuild
    # each attribute's candidates by its own ranking, and the attributes in turns: every attribute's best
    # candidate before any one's second (an attribute whose parents show a weaker dependence keeps them)
    within = np.zeros(len(live), dtype=np.int64)
    for f in np.unique(live[:, 0]).tolist():
        mine = np.flatnonzero(live[:, 0] == f)
        mine = sorted(mine.tolist(), key=lambda i: (-cmi[f, live[i][1]], names[live[i][1]]))
        within[mine] = np.arange(len(mine))
    unscored = ~(cmi[:F, :F] > 0).any(1)  # an attribute whose candidates have no score (one the model leaves out)
    order = sorted(range(len(live)), key=lambda i: (bool(unscored[live[i][0]]), within[i], -cmi[live[i][0], live[i][1]],
                                                    names[live[i][0]], names[live[i][1]]))
    rank = np.full(F * F, len(live))  # a unit not live ranks below every live one
    units = live[order, 0] * F + live[order, 1]
    rank[units] = np.arange(len(live))
    per = _unit_cells(s, rank)
    target = limit // (16 * 2 * 4)
    n_keep = min(int(np.searchsorted(np.cumsum(per[units]), target, side="right")), len(units) - 1)
    cand = np.zeros((F, F), dtype=bool)
    kept = units[:n_keep]
    cand[kept // F, kept % F] = True
    apply_tuple_selection(s, cand)
    return True


def selected_tuple_cells(s, D: np.ndarray, dfeats: np.ndarray, mask: np.ndarray) -> tuple:
    """The kept t-tuples of rows ``D`` (columns of features ``dfeats``; ``mask`` where observed):
    ``(rows, value index arrays of tuple_count, parent value arrays + child feature of tuple_feat)``,
    one entry per row and kept tuple."""
    t, F = s.tuples, len(s.features)
    lists = s.tuple_lists()
    pos = np.full(max(F, 1), -1, dtype=np.int64)
    pos[dfeats] = np.arange(len(dfeats))
    have = dfeats < len(lists)
    child = np.flatnonzero(have)  # positions that may be a child
    cp = lists[dfeats[child]] if len(child) else np.empty((0, lists.shape[1]), dtype=np.int64)
    ppos = np.where(cp >= 0, pos[np.maximum(cp, 0)], -1)  # (children, m): each candidate's position, -1 absent
    m = ppos.shape[1]
    empty = (np.empty(0, dtype=np.int64),)
    if not m or not len(child):
        return empty[0], empty * t, empty * t
    grid = np.indices((m,) * (t - 1)).reshape(t - 1, -1)  # every (t-1)-tuple of candidate slots
    P = ppos[:, grid]  # (children, t - 1, m^(t-1)) parent positions
    ok_static = (P >= 0).all(1)  # (children, combos)
    ci, combo = np.nonzero(ok_static)
    cpos, ppos_k = child[ci], P[ci, :, combo]  # (n,), (n, t - 1)
    obs = mask[:, cpos] & np.logical_and.reduce([mask[:, ppos_k[:, a]] for a in range(t - 1)])  # (rows, n)
    r, j = np.nonzero(obs)
    vals = [D[r, cpos[j]]] + [D[r, ppos_k[j, a]] for a in range(t - 1)]
    return r, tuple(vals), tuple(vals[1:]) + (dfeats[cpos[j]],)


def add_selected_tuples(s, p: str, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, w: np.ndarray) -> None:
    """Add the kept t-tuples of rows ``D`` (columns of features ``dfeats``, -1 missing; class ``yc``, weight
    ``w`` per row) to the selected t-way tables of count set ``p`` of ``s``, in row order: the selection's
    candidate parents (:meth:`TupleSelection.lists`) say which tuples, the count tables add them
    (:meth:`~stream_nb.stats.tables.CountTables.add_selected_tuples`)."""
    s.tables.add_selected_tuples(p, s.tuples, s.tuple_lists(), D, dfeats, yc, w)


def restore_tuple_selection(s, arrays: dict, meta: dict) -> None:
    """Give a store read from ``(arrays, meta)`` its tuple rule and the candidate parents it kept
    (:meth:`TupleSelection.from_state`), its t-way tables reduced to them; ValueError naming what does not fit."""
    s.tuple_selection = TupleSelection.from_state(arrays, meta, len(s.features), s.tuples)
    if s.tuple_selection.selected:
        apply_tuple_selection(s, s.tuple_selection.cand, start=True)
