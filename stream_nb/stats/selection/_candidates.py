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
(``UnlearnError``, reason ``"partial_pairs"``, nothing changed; :attr:`Candidates.pairs_partial`, kept in
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

import numpy as np

from ...exceptions import UnlearnError
from ...kernels import compiled
from ..discretiser import ALPHA
from ._significance import chi2_logsf
from ..tables import FilteredTable, SparseTable, cells_of, chunks_of

__all__ = ["Candidates", "SelectedTable", "apply_selection", "cmi_from_cells", "edge_costs", "edge_scores",
           "edge_supported", "mirror_selection", "mutual_information_with_class", "padded", "pair_evidence",
           "parent_scores", "prune_units", "restore_selection", "selected_cells", "set_pair_rule", "widen_to_either"]

_PAIR_TABLES = ("pair_count", "pair_feat")


def padded(a: np.ndarray | None, shape: tuple) -> np.ndarray:
    out = np.zeros(shape, dtype=bool)
    if a is not None:
        out[tuple(slice(0, min(d, e)) for d, e in zip(a.shape, shape))] = a[tuple(slice(0, min(d, e)) for d, e in zip(a.shape, shape))]
    return out


def pair_kept(allowed: np.ndarray, edges: np.ndarray, fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """Whether the pair of features ``fa`` (the row) and ``fb`` is kept: the diagonal, a row of an
    allowed parent, or a kept edge (features past the arrays, or -1, are not)."""
    F = len(allowed)
    ina, inb = (fa >= 0) & (fa < F), (fb >= 0) & (fb < F)
    sa, sb = np.where(ina, fa, 0), np.where(inb, fb, 0)
    return (fa == fb) & ina | ina & allowed[sa] | ina & inb & edges[sa, sb]


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


class Candidates:
    """The pair selection of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    #: None: all pairs (refused at the budget, as before); "parents" (AODE, SPODE), "edges" (TAN) or
    #: "informative" (KDB)
    pair_rule: str | None = None
    #: once pairs were dropped: the features whose rows are kept (F,) and the pairs kept both ways (F, F)
    pair_allowed: np.ndarray | None = None
    pair_edges: np.ndarray | None = None
    #: the other layer of a two-layer store, which takes the same selection (see set_pair_rule)
    selection_peer = None
    #: the rotation's place (the hash of the last pair admitted) and the events learned at the last revision
    #: (stats/selection/_revision.py)
    pair_cursor: int = 0
    pair_revised: float = 0.0
    #: whether some kept pair holds fewer of the learned events than the store: a pair that came back
    #: (stats/selection/_revision.py), or one kept by only one of two merged stores. Set for good: an event learned
    #: before cannot be told from one learned since, so unlearning is refused (see check_pairs_whole)
    pairs_partial: bool = False

    def check_pairs_whole(self) -> None:
        """UnlearnError (reason ``"partial_pairs"``) when :attr:`pairs_partial`: taking an event back from a
        pair that came back would take it from counts that may never have held it."""
        if self.pairs_partial:
            raise UnlearnError(
                "unlearning: some candidate pairs hold only the events learned since they came back (a "
                "revision of the selection, or a merge with a store that kept other pairs), so an event "
                "learned before cannot be taken back exactly; nothing was changed. A model that must unlearn "
                "wide data keeps its pairs within memory_budget (no selection) or unlearns before the first "
                "revision", reason="partial_pairs")

    @property
    def pairs_selected(self) -> bool:
        """Whether the pair tables keep only candidate pairs (some were dropped for the budget)."""
        return self.pair_allowed is not None

    def parent_ok(self, feats: np.ndarray) -> np.ndarray:
        """Per feature of ``feats``, whether its pairs as a super-parent are counted (all, without a selection)."""
        feats = np.asarray(feats)
        if self.pair_allowed is None:
            return np.ones(feats.shape, dtype=bool)
        a = self.pair_allowed
        return (feats < len(a)) & a[np.minimum(feats, max(len(a) - 1, 0))] if len(a) else np.zeros(feats.shape, bool)

    def pair_mask(self, feats: np.ndarray) -> np.ndarray:
        """(k, k): whether the pair (feats[r], feats[q]) is counted, the first the row."""
        return pair_kept(self.pair_allowed, self.pair_edges, feats[:, None], feats[None, :])

    def edge_ok(self) -> np.ndarray | None:
        """(F, F): the attribute pairs whose counts are kept (None: all of them)."""
        if self.pair_allowed is None:
            return None
        F = len(self.features)
        allowed, edges = padded(self.pair_allowed, (F,)), padded(self.pair_edges, (F, F))
        return allowed[:, None] | edges | np.eye(F, dtype=bool)

    def edge_supported(self) -> np.ndarray | None:
        """(F, F): the kept pairs whose own counts support a dependence (None: no selection, every pair
        counted); see :func:`edge_supported`."""
        return edge_supported(self)

    def refresh_selection(self) -> None:
        """Give the selected tables the current column -> feature map and feature count."""
        fine = getattr(self, "fine", None)
        if fine is not None and self.pair_rule is not None and fine.selection_peer is None:
            set_pair_rule(self, self.pair_rule)  # a two-layer store just loaded: its layers choose together
        if self.pair_allowed is None:
            return
        if not all(isinstance(getattr(self, p + name, None), SelectedTable) for p in self._sets() for name in _PAIR_TABLES):
            apply_selection(self, self.pair_allowed, self.pair_edges)  # tables made again (a derived layer, EM's twin)
        F = len(self.features)
        if len(self.pair_allowed) < F:
            self.pair_allowed = padded(self.pair_allowed, (F,))
            self.pair_edges = padded(self.pair_edges, (F, F))
        for p in self._sets():
            for name in _PAIR_TABLES:
                t = getattr(self, p + name, None)
                if isinstance(t, SelectedTable):
                    t.vf, t.allowed, t.edges = self.value_feature, self.pair_allowed, self.pair_edges

    def selection_summary(self) -> dict | None:
        """What :meth:`memory_used` shows of the selection: the rule, the parents and edges kept."""
        if self.pair_allowed is None:
            return None
        names = self.features
        parents = [names[f] for f in np.flatnonzero(self.pair_allowed)]
        i, j = np.nonzero(np.triu(self.pair_edges, 1))
        return {"rule": self.pair_rule, "parents": parents,
                "edges": [[names[a], names[b]] for a, b in zip(i.tolist(), j.tolist())]}


def set_pair_rule(s, rule: str | None) -> None:
    """Give store ``s`` (and the fine layer of a two-layer store, which then follows its choices) a pair rule."""
    s.pair_rule = rule
    fine = getattr(s, "fine", None)
    if fine is not None:
        fine.pair_rule = rule
        fine.selection_peer, s.selection_peer = s, fine


def mirror_selection(s, peer) -> None:
    """Apply the selection ``s`` made to ``peer`` (its other layer), matching the features by name, with
    the rotation's place and the last revision."""
    allowed, edges = s.pair_allowed, s.pair_edges
    where = np.array([s.feature_index.get(name, -1) for name in peer.features], dtype=np.int64)
    have = where >= 0
    pa = np.zeros(len(where), dtype=bool)
    pa[have] = allowed[where[have]]
    pe = np.zeros((len(where), len(where)), dtype=bool)
    pe[np.ix_(have, have)] = edges[np.ix_(where[have], where[have])]
    apply_selection(peer, pa, pe)
    peer.pair_cursor, peer.pair_revised = s.pair_cursor, s.pair_revised
    peer.pairs_partial = s.pairs_partial


def apply_selection(s, allowed: np.ndarray, edges: np.ndarray) -> None:
    """Keep only the pairs of ``allowed`` parents and ``edges`` (and the diagonal) in every pair table of
    ``s`` (dense or sparse), from now on: the tables become :class:`SelectedTable` s with the kept cells.
    A pair dropped loses its counts; a pair not kept until now starts from none (its cells were not
    added while it was dropped), so its counts hold the events learned from now on."""
    C, V, F = len(s.classes), len(s.value_keys), len(s.features)
    allowed, edges = padded(allowed, (F,)), padded(edges, (F, F))
    s.pair_allowed, s.pair_edges = allowed, edges
    if not s.pairs:  # a fine layer whose pair tables are its coarse layer's (_shared_pairs.py): the choice alone
        return
    for p in s._sets():
        for name, by_feature in zip(_PAIR_TABLES, (False, True)):
            old = getattr(s, p + name)
            dims = (C, V, F if by_feature else V)

            def kept(idx):
                fb = idx[2] if by_feature else s.value_feature[idx[2]]
                return pair_kept(s.pair_allowed, s.pair_edges, s.value_feature[idx[1]], fb)

            if isinstance(old, SparseTable):  # in the compiled loop: count the kept cells, then copy them
                n_kept = _kept_cells(old, dims, s, by_feature, None)
                new = SelectedTable(old.shape, slots=2 * max(n_kept, 1))
                new._n = _kept_cells(old, dims, s, by_feature, new)
            else:  # a slice of the old table at a time: twice over (count, then copy) rather than every cell at once
                n_kept = sum(int(kept(idx).sum()) for idx, _ in chunks_of(old, dims))
                new = SelectedTable(old.shape, slots=2 * max(n_kept, 1))
                new.allowed, new.edges, new.vf, new.by_feature = s.pair_allowed, s.pair_edges, s.value_feature, by_feature
                for idx, vals in chunks_of(old, dims):
                    ok = kept(idx)
                    if ok.any():
                        SparseTable.add(new, tuple(a[ok] for a in idx), vals[ok])
            new.allowed, new.edges, new.vf, new.by_feature = s.pair_allowed, s.pair_edges, s.value_feature, by_feature
            del old
            setattr(s, p + name, new)
    s.epoch += 1


def _kept_cells(old: SparseTable, dims: tuple, s, by_feature: bool, new: SparseTable | None) -> int:
    """The cells of sparse ``old`` within ``dims`` that the selection of ``s`` keeps (:func:`pair_kept`), each
    copied into the empty ``new`` (None: counted only), in the compiled loop
    (:func:`~stream_nb.kernels._hashed.kept_cells`)."""
    keys, vals = old.arrays()
    new_keys, new_vals = new.arrays() if new is not None else (_NO_KEYS, _NO_VALS)
    return int(compiled().kept_cells(keys, vals, np.array(old.shape, dtype=np.int64), np.array(dims, dtype=np.int64),
                                     np.ascontiguousarray(s.value_feature, dtype=np.int64), s.pair_allowed,
                                     np.ascontiguousarray(s.pair_edges), by_feature, new_keys, new_vals))


_NO_KEYS, _NO_VALS = np.zeros(0, dtype=np.int64), np.zeros(0)


def _clear_selection(s) -> None:
    """Count every pair again from now on: the selected tables become plain sparse ones, with their cells."""
    for p in s._sets():
        for name in _PAIR_TABLES:
            t = getattr(s, p + name)
            if isinstance(t, SelectedTable):
                setattr(s, p + name, t.unfiltered())
    s.pair_allowed = s.pair_edges = None
    s.epoch += 1


def _kept_pairs(allowed: np.ndarray | None, edges: np.ndarray | None, F: int) -> np.ndarray:
    """(F, F): the pairs a store counts (all of them without a selection)."""
    if allowed is None:
        return np.ones((F, F), dtype=bool)
    return padded(allowed, (F,))[:, None] | padded(edges, (F, F)) | np.eye(F, dtype=bool)


def widen_to_either(s, other, fmap: np.ndarray) -> None:
    """Before ``other``'s counts are added into ``s`` (a merge; ``fmap`` maps other's features to s's):
    count in ``s`` (and its other layer) every pair either store counts. Summed, each such pair holds
    the events each store counted it for (all of a store's events for a pair it kept throughout, none
    for one it did not keep): the merged counts are the sums of the two stores' counts, cell by cell,
    whatever the order of the merges (a union and sums). A store without a selection counts every pair:
    merged with one, no pair is dropped, and the selection ends (the budget chooses again at the next
    event). The rotation's place and the last revision (:mod:`stream_nb.stats.selection._revision`) are the later
    of the two."""
    F = len(s.features)
    kept = _kept_pairs(s.pair_allowed, s.pair_edges, F)
    theirs = _kept_pairs(other.pair_allowed, other.pair_edges, len(other.features))
    shared = kept[np.ix_(fmap, fmap)]
    s.pairs_partial = bool(s.pairs_partial or other.pairs_partial or (shared != theirs).any())
    kept[np.ix_(fmap, fmap)] = shared | theirs
    s.pair_cursor = max(int(s.pair_cursor), int(other.pair_cursor))
    s.pair_revised = max(float(s.pair_revised), float(other.pair_revised))
    if kept.all():
        _clear_selection(s)
    else:
        allowed = kept.all(1)  # a parent whose whole row is counted
        edges = kept & ~allowed[:, None]  # the rest pair by pair (TAN's are symmetric, as both stores' are)
        np.fill_diagonal(edges, False)
        apply_selection(s, allowed, edges)
    peer = getattr(s, "selection_peer", None)
    if peer is not None:
        if s.pair_allowed is None:
            _clear_selection(peer)
        else:
            mirror_selection(s, peer)


def _unit_cells(s, rule: str) -> tuple[np.ndarray, int]:
    """Cells held per unit (a parent, or an edge ``i * F + j`` with i < j), and the cells of the diagonal."""
    V, F = len(s.value_keys), len(s.features)
    per = np.zeros(F if rule == "parents" else F * F)
    fixed = 0
    for p in s._sets():
        for name, by_feature in zip(_PAIR_TABLES, (False, True)):
            table = getattr(s, p + name)
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
    class (``evidence``: :func:`pair_evidence`, read here if not given; 0 for a pair without counts).
    Lower is better supported: the order in which the pairs are kept."""
    g, df, n = pair_evidence(s) if evidence is None else evidence
    out = np.zeros(g.shape)
    has = n > 0
    if has.any():
        out[has] = chi2_logsf(g[has], df[has])
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
    """Drop the lowest-ranked units of ``s.pair_rule``, ``"parents"`` or ``"edges"`` (see the module notes;
    the store's entry is :func:`~stream_nb.stats.selection._informative.prune_pairs`) so that the pair cells
    held fit in a quarter of ``limit`` bytes' worth; False (nothing done) without a rule or when
    nothing is left to drop."""
    rule = s.pair_rule
    if rule is None:
        return False
    F = len(s.features)
    names = [str(n) for n in s.features]
    if rule == "parents":
        per, fixed = _unit_cells(s, rule)
        live = np.ones(F, dtype=bool) if s.pair_allowed is None else padded(s.pair_allowed, (F,))
        score = parent_scores(s)
        units = sorted(np.flatnonzero(live).tolist(), key=lambda f: (score[f], names[f]))
        cost = np.array([per[u] for u in units])
    else:  # an edge is charged the cells it holds once full: kept, it never outgrows the room it was given
        per, fixed = edge_costs(s)
        live = np.triu(np.ones((F, F), dtype=bool), 1) if s.pair_edges is None else np.triu(padded(s.pair_edges, (F, F)), 1)
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
    if s.pair_allowed is None:
        return None
    F = len(s.features)
    kept = padded(s.pair_edges, (F, F)) | padded(s.pair_allowed, (F,))[:, None]
    discrete = np.asarray(s.n_values[:F]) > 0
    units = max(int(discrete.sum()) * (int(discrete.sum()) - 1) // 2, 1)
    return kept & (edge_scores(s) <= math.log(ALPHA / units))


def selected_cells(s, k: int) -> int:
    """The most distinct cells one event of ``k`` observed values can add to each pair table of ``s``:
    k² without a selection; with one, only the kept pairs' (the diagonal, the rows of at most k kept
    parents, both orientations of the kept edges), as :class:`SelectedTable` adds nothing else."""
    if s.pair_allowed is None:
        return k * k
    kept = min(k, int(np.count_nonzero(s.pair_allowed))) * max(k - 1, 0) + int(np.count_nonzero(s.pair_edges))
    return k + min(k * max(k - 1, 0), kept)


def _sums(keys: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per entry, the sum of ``n`` over the entries with the same key."""
    uniq, inv = np.unique(keys, return_inverse=True)
    return np.bincount(inv.ravel(), weights=n, minlength=len(uniq))[inv.ravel()]


def _cmi_sums(stats) -> tuple[np.ndarray, np.ndarray]:
    """``(sums, n)``, (F, F) and symmetric: per pair of discrete features, the sum over both blocks of the
    pair's cells of n log(n n(c, i, j) / (n(c, v, j) n(c, i, w))), and the counts of both blocks, read off
    the pair tables (dense or sparse) cell by cell."""
    C, V, F = stats.n_classes, len(stats.value_keys), len(stats.features)
    table = stats.pair_count
    if isinstance(table, SparseTable):  # in the compiled loop, over the hash table's slots
        keys, vals = table.arrays()
        mi, n_pair = compiled().sparse_cmi(keys, vals, np.array(table.shape, dtype=np.int64), C, V,
                                           np.ascontiguousarray(stats.value_feature[:V], dtype=np.int64), F)
        mi, n_pair = mi + mi.T, n_pair + n_pair.T  # both blocks of each pair
        np.fill_diagonal(mi, 0.0)
        np.fill_diagonal(n_pair, 0.0)
        return mi, n_pair
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
    return mi, n_pair


def cmi_from_cells(stats) -> np.ndarray:
    """I(x_i; x_j | y) of every pair of discrete features, read off sparse pair tables: the sums of
    :func:`~stream_nb.learners.conditional_mutual_information` over the cells held (a dense V x V
    block per class would be as large as the table it replaces). Zero for pairs not kept; a pair
    kept since its last admission (:mod:`stream_nb.stats.selection._revision`) is read off the events its own
    counts hold."""
    mi, n_pair = _cmi_sums(stats)
    with np.errstate(divide="ignore", invalid="ignore"):
        mi = np.where(n_pair > 0, mi / np.where(n_pair > 0, n_pair, 1.0), 0.0)
    return np.maximum(mi, 0.0)


def pair_evidence(stats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(G, df, n)``, each (F, F): per pair of discrete features, the G statistic 2 n I(x_i; x_j | y) of the
    pair's own counts (both blocks pooled, as :func:`cmi_from_cells`), its degrees of freedom
    C (|X_i| - 1)(|X_j| - 1) (the classes and values seen; at least 1), and n, the events its counts hold
    (those that observed both since the pair was last admitted). Zero G and n for pairs without counts."""
    F = len(stats.features)
    mi, n_pair = _cmi_sums(stats)
    r = np.maximum(np.asarray(stats.n_values[:F], dtype=float) - 1.0, 0.0)
    C = float(np.count_nonzero(stats.class_count[: stats.n_classes]))
    df = np.maximum(C * r[:, None] * r[None, :], 1.0)
    return np.maximum(mi, 0.0), df, n_pair / 2.0


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
    """Give a store read from ``(arrays, meta)`` (see :meth:`~stream_nb.stats.Stats.state`) its pair rule,
    the candidate pairs it kept, the rotation's place and its last revision (a state without them: 0,
    as written before revisions); ValueError naming what does not fit."""
    rule = meta.get("pair_rule")
    if rule not in (None, "parents", "edges", "informative"):
        raise ValueError(f"stats.pair_rule: expected 'parents', 'edges', 'informative' or null, got {rule!r:.60}")
    s.pair_rule = rule
    cursor, revised = meta.get("pair_cursor", 0), meta.get("pair_revised", 0.0)
    if isinstance(cursor, bool) or not isinstance(cursor, int) or not 0 <= cursor < 1 << 64:
        raise ValueError(f"stats.pair_cursor: expected an integer from 0 to 2**64 - 1, got {cursor!r:.60}")
    if isinstance(revised, bool) or not isinstance(revised, (int, float)) or not 0 <= revised < float("inf"):
        raise ValueError(f"stats.pair_revised: expected a number >= 0 (events), got {revised!r:.60}")
    s.pair_cursor, s.pair_revised = cursor, float(revised)
    partial = meta.get("pairs_partial", False)
    if not isinstance(partial, bool):
        raise ValueError(f"stats.pairs_partial: expected true or false, got {partial!r:.60}")
    s.pairs_partial = partial
    if "pair_allowed" not in arrays and "pair_edges" not in arrays:
        return
    F = len(s.features)
    allowed, edges = np.asarray(arrays.get("pair_allowed")), np.asarray(arrays.get("pair_edges"))
    if allowed.shape != (F,) or edges.shape != (F, F) or allowed.dtype != bool or edges.dtype != bool:
        raise ValueError(f"stats.pair_allowed, pair_edges: expected booleans of shapes [{F}] and [{F}, {F}], got "
                         f"{allowed.dtype} {list(allowed.shape)} and {edges.dtype} {list(edges.shape)}")
    if not s.pairs:
        raise ValueError("stats.pair_allowed: candidate pairs in a store that keeps no pairs")
    apply_selection(s, allowed, edges)
