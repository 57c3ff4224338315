"""Candidate pairs: the pair tables keep counts only for the attribute pairs a model can use, when all
pairs do not fit the memory budget.

AODE, SPODE and TAN keep class-conditional pair counts, C·V² cells dense. On
wide data (hundreds of attributes with dozens of values) even the cells that
occur are too many for the budget: on 200 attributes x 30 values an event
adds 40,000 pair cells, and 256 MiB hold about 100 events' worth. Rather than
refuse to learn, a store whose model names a *pair rule* (``pair_rule``)
drops whole attribute pairs, the least useful first, each time the sparse
pair tables would pass the budget, and from then on counts only the pairs it
kept (:class:`SelectedTable` filters every addition, removal included):

- ``"parents"`` (AODE, SPODE): a unit is a super-parent p, the rows
  ``pair_count[c, x_p, ·]`` and ``pair_feat[c, x_p, ·]``; the units are
  ranked by the G-test of I(X_p; C) (:func:`parent_scores`, exact over every
  event learned, since the value counts are all kept). A SPODE's joint term
  is P(c, x_p): the parents that say most about the class give the sharpest
  one-dependence models (the ranking memory-constrained selective AnDE uses);
- ``"edges"`` (TAN): a unit is an attribute pair {i, j}, both orientations;
  the units are ranked by the G-test of I(X_i; X_j | C) on the pair's own
  counts (:func:`pair_evidence`, :func:`edge_scores`), each charged the cells
  it holds once full (:func:`edge_costs`), and the tree is the maximum
  spanning forest over the kept pairs whose test rejects independence
  (:func:`edge_supported`);
- ``"informative"`` (KDB): the units are the pairs among the attributes that
  say most about the class (:mod:`stream_nb.stats.selection._informative`).

The pairs of an attribute with itself (the diagonal, a value's own count) are
always kept. Pruning keeps the best-ranked units whose cells fit in a quarter
of the budget's cells (a sparse cell takes 16 bytes, in a hash table at most
half full), at least one unit fewer than before. Between prunings the choice
is revised as the events come (:mod:`stream_nb.stats.selection._revision`): pairs are
dropped and others admitted. **A pair's counts hold the events learned since
it was last admitted** (:func:`apply_selection`): dropping a unit never
changes the counts of the units kept, and a unit admitted again starts from
no counts, the events learned while it was dropped being gone. Ties go by
name, so the choice is deterministic. A store that never passes its budget
never prunes, and counts exactly as before.

Limits, stated: under a selection, events with missing values are counted as
``missing="ignore"`` counts them (EM's E-step would read pairs that are no
longer counted); models with forgetting (windows, decay, drift detectors) keep
no pair rule (their captured counts would bring dropped pairs back) and stay
refused at the budget. Unlearning is exact while every kept pair holds every event learned; once a pair
comes back from no counts (a revision), or a merge sums a pair that only one of the two stores kept, an
event learned before could not be told from one learned since, and unlearning is refused for good
(``UnlearnError``, reason ``"partial_pairs"``, nothing changed; :attr:`PairSelection.partial`, kept in
snapshots and merged by "either").

Merges stay sums (:func:`widen_to_either`): two stores merge to every pair either counts, each cell the
sum of both stores' cells, so a kept pair holds the events each store counted it for. Unions and sums
do not depend on the order, so a group of stores merges to the same counts and selection whatever the
order of the merges; the result differs from one store that learned every stream in which pairs are
kept and since when each counts (a store without a selection, merged with one, counts every pair
again). KDB's candidate parents (``_tuple_candidates.py``) merge the same way (``widen_tuples_to_either``).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ...kernels import compiled
from ..discretiser import ALPHA
from ._pair_selection import PairSelection, padded, pair_kept
from ._significance import chi2_logsf
from ..tables import FilteredTable, SparseTable, cells_of, chunks_of

__all__ = ["SelectedTable", "apply_selection", "cmi_from_cells", "edge_costs", "edge_scores", "pair_degrees",
           "edge_supported", "mirror_selection", "mutual_information_with_class", "padded", "pair_evidence",
           "parent_scores", "prune_units", "refresh_selection", "restore_selection", "selected_cells", "set_pair_rule",
           "widen_to_either"]

_PAIR_TABLES = ("pair_count", "pair_feat")


class SelectedTable(FilteredTable):
    """A :class:`SparseTable` of pair counts that adds only the cells of kept attribute pairs.

    ``allowed`` (parents whose rows are kept) and ``edges`` (pairs kept both ways) are over the
    features; ``vf`` maps a column to its feature (refreshed by the store before each addition);
    ``by_feature``: the last axis is a feature (``pair_feat``), not a column (``pair_count``).
    """

    __slots__ = ("allowed", "edges", "vf", "by_feature")

    def _like(self, shape, slots: int) -> SelectedTable:
        out = SelectedTable(shape, slots=slots)
        out.allowed, out.edges, out.vf, out.by_feature = self.allowed, self.edges, self.vf, self.by_feature
        return out

    def kept(self, keys: np.ndarray) -> np.ndarray:
        rest, last = np.divmod(keys, self.shape[-1])
        a = rest % self.shape[1]
        vf = self.vf
        fa = np.where(a < len(vf), vf[np.minimum(a, len(vf) - 1)], -1)
        fb = last if self.by_feature else np.where(last < len(vf), vf[np.minimum(last, len(vf) - 1)], -1)
        return pair_kept(self.allowed, self.edges, fa, fb)


def set_pair_rule(s, rule: str | None) -> None:
    """Give store ``s`` (and the fine layer of a two-layer store, which then follows its choices) a pair rule."""
    s.selection.set_rule(rule)
    fine = getattr(s, "fine", None)
    if fine is not None:
        fine.selection.set_rule(rule)
        fine.selection_peer, s.selection_peer = s, fine


def mirror_selection(s, peer) -> None:
    """Apply the selection ``s`` made to ``peer`` (its other layer), matching the features by name, with
    the rotation's place and the last revision."""
    where = np.array([s.feature_index.get(name, -1) for name in peer.features], dtype=np.int64)
    apply_selection(peer, *s.selection.mapped(where))
    peer.selection.follow(s.selection)


def apply_selection(s, allowed: np.ndarray, edges: np.ndarray) -> None:
    """Keep only the pairs of ``allowed`` parents and ``edges`` (and the diagonal) in every pair table of
    ``s`` (dense or sparse), from now on: the tables become :class:`SelectedTable` s with the kept cells.
    A pair dropped loses its counts; a pair not kept until now starts from none (its cells were not
    added while it was dropped), so its counts hold the events learned from now on."""
    C, V, F = len(s.classes), len(s.value_keys), len(s.features)
    s.selection.choose(padded(allowed, (F,)), padded(edges, (F, F)))
    if not s.pairs:  # a fine layer whose pair tables are its coarse layer's (_shared_pairs.py): the choice alone
        return
    for p in s._sets():
        for name, by_feature in zip(_PAIR_TABLES, (False, True)):
            old = getattr(s, p + name)
            dims = (C, V, F if by_feature else V)

            def kept(idx):
                fb = idx[2] if by_feature else s.value_feature[idx[2]]
                return pair_kept(s.selection.allowed, s.selection.edges, s.value_feature[idx[1]], fb)

            if isinstance(old, SparseTable):  # in the compiled loop: find the kept cells, then copy them
                slots = _kept_cells(old, dims, s, by_feature)
                new = old.keep_cells(slots, isinstance(old, SelectedTable), partial(SelectedTable, old.shape))
            else:  # a slice of the old table at a time: twice over (count, then copy) rather than every cell at once
                n_kept = sum(int(kept(idx).sum()) for idx, _ in chunks_of(old, dims))
                new = SelectedTable(old.shape, slots=2 * max(n_kept, 1))
                new.allowed, new.edges, new.vf, new.by_feature = s.selection.allowed, s.selection.edges, s.value_feature, by_feature
                for idx, vals in chunks_of(old, dims):
                    ok = kept(idx)
                    if ok.any():
                        SparseTable.add(new, tuple(a[ok] for a in idx), vals[ok])
            new.allowed, new.edges, new.vf, new.by_feature = s.selection.allowed, s.selection.edges, s.value_feature, by_feature
            del old
            s.tables.replace(p + name, new)
    s.epoch += 1


def _kept_cells(old: SparseTable, dims: tuple, s, by_feature: bool) -> np.ndarray:
    """The slots of sparse ``old`` whose cells within ``dims`` the selection of ``s`` keeps (:func:`pair_kept`), in
    slot order, found in the compiled loop (:func:`~stream_nb.kernels._hashed.kept_cells`)."""
    keys, vals = old.arrays()
    return compiled().kept_cells(keys, vals, np.array(old.shape, dtype=np.int64), np.array(dims, dtype=np.int64),
                                 np.ascontiguousarray(s.value_feature, dtype=np.int64), s.selection.allowed,
                                 np.ascontiguousarray(s.selection.edges), by_feature)


def _clear_selection(s) -> None:
    """Count every pair again from now on: the selected tables become plain sparse ones, with their cells."""
    for p in s._sets():
        for name in _PAIR_TABLES:
            t = getattr(s, p + name)
            if isinstance(t, SelectedTable):
                s.tables.replace(p + name, t.unfiltered())
    s.selection.clear()
    s.epoch += 1


def widen_to_either(s, other, fmap: np.ndarray) -> None:
    """Before ``other``'s counts are added into ``s`` (a merge; ``fmap`` maps other's features to s's):
    count in ``s`` (and its other layer) every pair either store counts. Summed, each such pair holds
    the events each store counted it for (all of a store's events for a pair it kept throughout, none
    for one it did not keep): the merged counts are the sums of the two stores' counts, cell by cell,
    whatever the order of the merges (a union and sums). A store without a selection counts every pair:
    merged with one, no pair is dropped, and the selection ends (the budget chooses again at the next
    event). The rotation's place and the last revision (:mod:`stream_nb.stats.selection._revision`) are the later
    of the two."""
    kept = s.selection.widen(other.selection, fmap, len(s.features))
    if kept.all():
        _clear_selection(s)
    else:
        allowed = kept.all(1)  # a parent whose whole row is counted
        edges = kept & ~allowed[:, None]  # the rest pair by pair (TAN's are symmetric, as both stores' are)
        np.fill_diagonal(edges, False)
        apply_selection(s, allowed, edges)
    peer = getattr(s, "selection_peer", None)
    if peer is not None:
        if s.selection.allowed is None:
            _clear_selection(peer)
        else:
            mirror_selection(s, peer)


def _unit_cells(s, rule: str) -> tuple[np.ndarray, int]:
    """Cells held per unit (a parent, or an edge ``i * F + j`` with i < j), and the cells of the diagonal; a
    sparse table's counted in the compiled loop over its slots (:func:`~stream_nb.kernels._hashed.unit_cells`)."""
    V, F = len(s.value_keys), len(s.features)
    per = np.zeros(F if rule == "parents" else F * F)
    fixed = 0
    vf = np.ascontiguousarray(s.value_feature, dtype=np.int64)
    for p in s._sets():
        for name, by_feature in zip(_PAIR_TABLES, (False, True)):
            table = getattr(s, p + name)
            if isinstance(table, SparseTable):
                keys, vals = table.arrays()
                fixed += int(compiled().unit_cells(keys, vals, table.shape[1], table.shape[2], V, vf, F, by_feature,
                                                   rule == "parents", per))
                continue
            for idx, _ in chunks_of(table, table.shape):
                fa = s.value_feature[np.minimum(idx[1], V - 1)]
                fb = idx[2] if by_feature else s.value_feature[np.minimum(idx[2], V - 1)]
                diag = fa == fb
                fixed += int(diag.sum())
                fa, fb = fa[~diag & (fa >= 0) & (fb >= 0)], fb[~diag & (fa >= 0) & (fb >= 0)]
                unit = fa if rule == "parents" else np.minimum(fa, fb) * F + np.maximum(fa, fb)
                per += np.bincount(unit, minlength=len(per))
    return per, fixed


def edge_costs(s) -> tuple[np.ndarray, int]:
    """``(cost, fixed)``: the cells each attribute pair {i, j} holds once its counts have seen every
    combination, (F, F) (both orientations: 2 C |X_i| |X_j| pair cells and C (|X_i| + |X_j|) feature
    cells), and the cells of the diagonal, in every count set of ``s`` (the classes and values seen)."""
    F = len(s.features)
    r = np.asarray(s.n_values[:F], dtype=float)
    C, sets = float(s.n_classes), len(s._sets())
    cost = sets * (2 * C * r[:, None] * r[None, :] + C * (r[:, None] + r[None, :]))
    return cost, int(sets * 2 * C * r.sum())


def edge_scores(s, evidence: tuple | None = None) -> np.ndarray:
    """(F, F): the log p-value of the G-test of each pair's own counts against independence given the
    class (``evidence``: :func:`pair_evidence`, read here if not given; 0 for a pair without counts, NaN for
    one the evidence left unscored). Lower is better supported: the order in which the pairs are kept."""
    g, df, n = pair_evidence(s) if evidence is None else evidence
    out = np.zeros(g.shape)
    unscored = np.isnan(g)
    has = (n > 0) & ~unscored
    if has.any():
        out[has] = chi2_logsf(g[has], df[has])
    out[unscored] = np.nan
    return out


def parent_scores(s) -> np.ndarray:
    """(F,): the log p-value of the G-test of each feature against the class, 2 N I(X; C) with
    (C - 1)(|X| - 1) degrees of freedom, N the events that observed it (all events learned: the value
    counts are all kept); 0 for a feature without values."""
    F, C = len(s.features), s.n_classes
    mi = mutual_information_with_class(s)
    n = np.asarray(s.feat_count[:C, :F], dtype=float).sum(0)
    r = np.asarray(s.n_values[:F], dtype=float)
    df = np.maximum((np.count_nonzero(s.class_count[:C]) - 1.0) * (r - 1.0), 1.0)
    out = np.zeros(F)
    has = (n > 0) & (mi > 0)
    if has.any():
        out[has] = chi2_logsf(2.0 * n[has] * mi[has], df[has])
    return out


def prune_units(s, limit: int) -> bool:
    """Drop the lowest-ranked units of ``s.selection.rule``, ``"parents"`` or ``"edges"`` (see the module notes;
    the store's entry is :func:`~stream_nb.stats.selection._informative.prune_pairs`) so that the pair cells
    held fit in a quarter of ``limit`` bytes' worth; False (nothing done) without a rule or when
    nothing is left to drop."""
    rule = s.selection.rule
    if rule is None:
        return False
    F = len(s.features)
    names = [str(n) for n in s.features]
    if rule == "parents":
        per, fixed = _unit_cells(s, rule)
        live = np.ones(F, dtype=bool) if s.selection.allowed is None else padded(s.selection.allowed, (F,))
        score = parent_scores(s)
        units = sorted(np.flatnonzero(live).tolist(), key=lambda f: (score[f], names[f]))
        cost = np.array([per[u] for u in units])
    else:  # an edge is charged the cells it holds once full: kept, it never outgrows the room it was given
        per, fixed = edge_costs(s)
        live = np.triu(np.ones((F, F), dtype=bool), 1) if s.selection.edges is None else np.triu(padded(s.selection.edges, (F, F)), 1)
        score = edge_scores(s)
        i, j = np.nonzero(live)
        units = sorted(zip(i.tolist(), j.tolist()), key=lambda e: (score[e], names[e[0]], names[e[1]]))
        cost = np.array([per[u] for u in units])
    if not units:
        return False
    target = limit // (16 * 2 * 4) - fixed
    n_keep = min(int(np.searchsorted(np.cumsum(cost), target, side="right")), len(units) - 1)
    kept = units[:n_keep]
    allowed, edges = np.zeros(F, dtype=bool), np.zeros((F, F), dtype=bool)
    if rule == "parents":
        allowed[kept] = True
    elif kept:
        a, b = np.array(kept).T
        edges[a, b] = edges[b, a] = True
    apply_selection(s, allowed, edges)
    peer = getattr(s, "selection_peer", None)
    if peer is not None:
        mirror_selection(s, peer)
    return True


def edge_supported(s) -> np.ndarray | None:
    """(F, F): the kept pairs whose own counts reject independence given the class at level
    :data:`~stream_nb.stats.G_TEST_ALPHA` divided by the candidate pairs (None without a selection: every pair counts all)."""
    if s.selection.allowed is None:
        return None
    F = len(s.features)
    kept = padded(s.selection.edges, (F, F)) | padded(s.selection.allowed, (F,))[:, None]
    discrete = np.asarray(s.n_values[:F]) > 0
    units = max(int(discrete.sum()) * (int(discrete.sum()) - 1) // 2, 1)
    return kept & (edge_scores(s) <= math.log(ALPHA / units))


def selected_cells(s, k: int) -> int:
    """The most distinct cells one event of ``k`` observed values can add to each pair table of ``s``:
    k² without a selection; with one, only the kept pairs' (the diagonal, the rows of at most k kept
    parents, both orientations of the kept edges), as :class:`SelectedTable` adds nothing else."""
    if s.selection.allowed is None:
        return k * k
    kept = min(k, int(np.count_nonzero(s.selection.allowed))) * max(k - 1, 0) + int(np.count_nonzero(s.selection.edges))
    return k + min(k * max(k - 1, 0), kept)


def _sums(keys: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per entry, the sum of ``n`` over the entries with the same key."""
    uniq, inv = np.unique(keys, return_inverse=True)
    return np.bincount(inv.ravel(), weights=n, minlength=len(uniq))[inv.ravel()]


def _cmi_sums(stats, least: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(sums, n, scored)``, (F, F) and symmetric: per pair of discrete features, the sum over both blocks of
    the pair's cells of n log(n n(c, i, j) / (n(c, v, j) n(c, i, w))), and the counts of both blocks, read off
    the pair tables (dense or sparse) cell by cell. ``least`` (F, F): sparse tables may leave unscored (sum
    0, ``scored`` False) a pair whose count is below it (``kernels/_sparse_structure.py``); ``scored`` None:
    every pair scored."""
    C, V, F = stats.n_classes, len(stats.value_keys), len(stats.features)
    table = stats.pair_count
    if isinstance(table, SparseTable):  # in the compiled loop, over the hash table's slots
        keys, vals = table.arrays()
        least = _NO_LEAST if least is None else np.ascontiguousarray(least, dtype=float)
        mi, n_pair, scored = compiled().sparse_cmi(keys, vals, np.array(table.shape, dtype=np.int64), C, V,
                                                   np.ascontiguousarray(stats.value_feature[:V], dtype=np.int64), F,
                                                   least)
        mi, n_pair = mi + mi.T, n_pair + n_pair.T  # both blocks of each pair
        np.fill_diagonal(mi, 0.0)
        np.fill_diagonal(n_pair, 0.0)
        return mi, n_pair, (None if scored.all() else scored)
    (c, v, w), n = cells_of(table, table.shape)  # dense pairs (KDB's candidate parents)
    fv = stats.value_feature
    ok = (c < C) & (v < V) & (w < V) & (n > 0)
    c, v, w, n = c[ok], v[ok], w[ok], n[ok]
    live = (fv[v] >= 0) & (fv[w] >= 0) & (v > 0) & (w > 0)
    c, v, w, n = c[live], v[live], w[live], n[live]
    fi, fj = fv[v], fv[w]
    row = _sums((c * V + v) * F + fj, n)  # n(c, v, feature j)
    col = _sums((c * F + fi) * V + w, n)  # n(c, feature i, w)
    blk = _sums((c * F + fi) * F + fj, n)  # n(c, i, j)
    term = n * np.log(n * blk / (row * col))
    mi = np.bincount(fi * F + fj, weights=term, minlength=F * F).reshape(F, F)
    n_pair = np.bincount(fi * F + fj, weights=n, minlength=F * F).reshape(F, F)
    mi, n_pair = mi + mi.T, n_pair + n_pair.T  # both blocks of each pair
    np.fill_diagonal(mi, 0.0)
    np.fill_diagonal(n_pair, 0.0)
    return mi, n_pair, None


_NO_LEAST = np.zeros((0, 0))


def cmi_from_cells(stats) -> np.ndarray:
    """I(x_i; x_j | y) of every pair of discrete features, read off sparse pair tables: the sums of
    :func:`~stream_nb.learners.conditional_mutual_information` over the cells held (a dense V x V
    block per class would be as large as the table it replaces). Zero for pairs not kept; a pair
    kept since its last admission (:mod:`stream_nb.stats.selection._revision`) is read off the events its own
    counts hold."""
    mi, n_pair, _ = _cmi_sums(stats)
    with np.errstate(divide="ignore", invalid="ignore"):
        mi = np.where(n_pair > 0, mi / np.where(n_pair > 0, n_pair, 1.0), 0.0)
    return np.maximum(mi, 0.0)


def pair_degrees(stats) -> np.ndarray:
    """(F, F): the degrees of freedom of each pair's G-test, C (|X_i| - 1)(|X_j| - 1) (the classes and values
    seen; at least 1)."""
    F = len(stats.features)
    r = np.maximum(np.asarray(stats.n_values[:F], dtype=float) - 1.0, 0.0)
    C = float(np.count_nonzero(stats.class_count[: stats.n_classes]))
    return np.maximum(C * r[:, None] * r[None, :], 1.0)


def pair_evidence(stats, least: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(G, df, n)``, each (F, F): per pair of discrete features, the G statistic 2 n I(x_i; x_j | y) of the
    pair's own counts (both blocks pooled, as :func:`cmi_from_cells`), its degrees of freedom
    (:func:`pair_degrees`), and n, the events its counts hold (those that observed both since the pair was
    last admitted). Zero G and n for pairs without counts. ``least`` (F, F): a pair of sparse tables whose n
    is below it may be left unscored, its G NaN (a revision judges no such pair: the sums it skips are most
    of a revision's work on many values, while no pair has the events to be judged)."""
    mi, n_pair, scored = _cmi_sums(stats, least)
    g = np.maximum(mi, 0.0)
    if scored is not None:
        g[~scored] = np.nan
    return g, pair_degrees(stats), n_pair / 2.0


def mutual_information_with_class(stats) -> np.ndarray:
    """I(x_i; y) of every feature with the class, from the value counts (0 for Gaussian features)."""
    C, V, F = stats.n_classes, len(stats.value_keys), len(stats.features)
    out = np.zeros(F)
    if V <= 1 or C == 0:
        return out
    live = np.flatnonzero(stats.value_feature[1:V] >= 0) + 1
    n = stats.value_count[:C, live]  # (C, live columns)
    feat = stats.value_feature[live]
    n_f = np.bincount(feat, weights=n.sum(0), minlength=F)  # events with feature f observed
    n_cf = np.stack([np.bincount(feat, weights=n[c], minlength=F) for c in range(C)])  # (C, F)
    n_v = n.sum(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = n * n_f[feat][None, :] / (n_v[None, :] * n_cf[:, feat])
        term = np.where(n > 0, n * np.log(np.where(n > 0, ratio, 1.0)), 0.0)
    mi = np.bincount(feat, weights=term.sum(0), minlength=F)
    return np.maximum(np.where(n_f > 0, mi / np.where(n_f > 0, n_f, 1.0), 0.0), 0.0)


def restore_selection(s, arrays: dict, meta: dict) -> None:
    """Give a store read from ``(arrays, meta)`` (see :meth:`~stream_nb.stats.Stats.state`) its pair
    selection (:meth:`PairSelection.from_state`: the rule, the candidate pairs it kept, the rotation's place
    and its last revision), its pair tables reduced to the pairs kept; ValueError naming what does not fit."""
    s.selection = PairSelection.from_state(arrays, meta, len(s.features), s.pairs)
    if s.selection.selected:
        apply_selection(s, s.selection.allowed, s.selection.edges)


def refresh_selection(s) -> None:
    """Give the selected tables of store ``s`` the current column -> feature map and its selection, grown
    to the features it has now; tables made again without one (a derived layer, EM's twin) are reduced."""
    fine = getattr(s, "fine", None)
    if fine is not None and s.selection.rule is not None and fine.selection_peer is None:
        set_pair_rule(s, s.selection.rule)  # a two-layer store just loaded: its layers choose together
    sel = s.selection
    if not sel.selected:
        return
    if not all(isinstance(getattr(s, p + name, None), SelectedTable) for p in s._sets() for name in _PAIR_TABLES):
        apply_selection(s, sel.allowed, sel.edges)
    sel.grow(len(s.features))
    for p in s._sets():
        for name in _PAIR_TABLES:
            t = getattr(s, p + name, None)
            if isinstance(t, SelectedTable):
                t.vf, t.allowed, t.edges = s.value_feature, sel.allowed, sel.edges
