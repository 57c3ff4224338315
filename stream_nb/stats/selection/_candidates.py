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
  ranked by I(X_p; C) (:func:`mutual_information_with_class`, exact over
  every event learned, since the value counts are all kept). A SPODE's joint
  term is P(c, x_p): the parents that say most about the class give the
  sharpest one-dependence models (the ranking memory-constrained selective
  AnDE uses);
- ``"edges"`` (TAN): a unit is an attribute pair {i, j}, both orientations;
  the units are ranked by I(X_i; X_j | C) (:func:`cmi_from_cells`), read off
  the counts kept so far, and the tree is the maximum spanning forest over
  the kept pairs.

The pairs of an attribute with itself (the diagonal, a value's own count) are
always kept. Pruning keeps the best-ranked units whose cells held now fit in
a quarter of the budget's cells (a sparse cell takes 16 bytes, in a hash table
at most half full), at least one unit fewer than before; dropping a unit never
changes the counts of the units kept, so **every kept pair holds exactly the
counts of every event learned** (those before the pruning included): the
choice is made from all events so far, not a sample, and is made again, from
more events, each time the tables fill up. Ties go by name, so the choice is
deterministic. A store that never passes its budget never prunes, and counts
exactly as before.

Limits, stated: under a selection, events with missing values are counted as
``missing="ignore"`` counts them (EM's E-step would read pairs that are no
longer counted); models with forgetting (windows, decay, drift detectors) keep
no pair rule (their captured counts would bring dropped pairs back) and stay
refused at the budget.

Merges stay exact (:func:`narrow_to_both`): since a selection only narrows, every pair a store keeps
holds every event that store learned, so two stores merge by keeping the pairs both keep (a store
without a selection keeps all of its own; a feature one store never saw costs the other nothing) and
summing their counts; every pair kept afterwards holds every event of both streams, and a pair either
store dropped is dropped. The selection merged is therefore the intersection, never larger than
either; KDB's selections of candidate parents (``_tuple_candidates.py``) still do not merge.
"""

from __future__ import annotations

import numpy as np

from ..tables import FilteredTable, SparseTable, cells_of, chunks_of

__all__ = ["Candidates", "SelectedTable", "apply_selection", "cmi_from_cells", "mutual_information_with_class",
           "narrow_to_both", "prune_pairs", "restore_selection", "selected_cells", "set_pair_rule"]

_PAIR_TABLES = ("pair_count", "pair_feat")


def _pad(a: np.ndarray | None, shape: tuple) -> np.ndarray:
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

    #: None: all pairs (refused at the budget, as before); "parents" (AODE, SPODE) or "edges" (TAN)
    pair_rule: str | None = None
    #: once pairs were dropped: the features whose rows are kept (F,) and the pairs kept both ways (F, F)
    pair_allowed: np.ndarray | None = None
    pair_edges: np.ndarray | None = None
    #: the other layer of a two-layer store, which takes the same selection (see set_pair_rule)
    selection_peer = None

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
        allowed, edges = _pad(self.pair_allowed, (F,)), _pad(self.pair_edges, (F, F))
        return allowed[:, None] | edges | np.eye(F, dtype=bool)

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
            self.pair_allowed = _pad(self.pair_allowed, (F,))
            self.pair_edges = _pad(self.pair_edges, (F, F))
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


def _mirror(s, peer, allowed: np.ndarray, edges: np.ndarray) -> None:
    """Apply the selection ``s`` made to ``peer`` (its other layer), matching the features by name."""
    where = np.array([s.feature_index.get(name, -1) for name in peer.features], dtype=np.int64)
    have = where >= 0
    pa = np.zeros(len(where), dtype=bool)
    pa[have] = allowed[where[have]]
    pe = np.zeros((len(where), len(where)), dtype=bool)
    pe[np.ix_(have, have)] = edges[np.ix_(where[have], where[have])]
    apply_selection(peer, pa, pe)


def apply_selection(s, allowed: np.ndarray, edges: np.ndarray) -> None:
    """Keep only the pairs of ``allowed`` parents and ``edges`` (and the diagonal) in every pair table of
    ``s`` (dense or sparse), from now on: the tables become :class:`SelectedTable` s with the kept cells.
    A selection only narrows: a pair dropped once is never counted again (its counts would be partial)."""
    C, V, F = len(s.classes), len(s.value_keys), len(s.features)
    allowed, edges = _pad(allowed, (F,)), _pad(edges, (F, F))
    if s.pair_allowed is not None:
        allowed &= _pad(s.pair_allowed, (F,))
        edges &= _pad(s.pair_edges, (F, F))
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

            # a slice of the old table at a time: twice over (count, then copy) rather than every cell at once
            n_kept = sum(int(kept(idx).sum()) for idx, _ in chunks_of(old, dims))
            new = SelectedTable(old.shape, slots=2 * max(n_kept, 1))
            new.allowed, new.edges, new.vf, new.by_feature = s.pair_allowed, s.pair_edges, s.value_feature, by_feature
            for idx, vals in chunks_of(old, dims):
                ok = kept(idx)
                if ok.any():
                    SparseTable.add(new, tuple(a[ok] for a in idx), vals[ok])
            del old
            setattr(s, p + name, new)
    s.epoch += 1


def narrow_to_both(s, other, fmap: np.ndarray) -> None:
    """Before ``other``'s counts are added into ``s`` (a merge; ``fmap`` maps other's features to s's):
    keep in ``s`` (and its other layer) only the pairs both stores keep, a store without a selection
    keeping all of its features' pairs. Each kept pair held every event of its own store, so after the
    sums it holds every event of both: the merge stays exact for every pair it keeps, and the pairs
    either store dropped are dropped (their counts would be partial); the other's cells of them are
    not added (:class:`SelectedTable` filters them)."""
    F = len(s.features)
    mine_a = np.ones(F, dtype=bool) if s.pair_allowed is None else _pad(s.pair_allowed, (F,))
    mine_e = np.ones((F, F), dtype=bool) if s.pair_edges is None else _pad(s.pair_edges, (F, F))
    if s.pair_allowed is None:  # every pair kept until now: as edges, so that a parent's row is a set of pairs
        mine_a = np.zeros(F, dtype=bool)
    Fo = len(other.features)
    theirs_a = np.ones(Fo, dtype=bool) if other.pair_allowed is None else _pad(other.pair_allowed, (Fo,))
    theirs_e = np.ones((Fo, Fo), dtype=bool) if other.pair_edges is None else _pad(other.pair_edges, (Fo, Fo))
    # the other's kept pairs in s's features: a pair (a, b) is kept there when a is an allowed parent or the edge is
    kept_o = np.zeros((F, F), dtype=bool)
    kept_o[np.ix_(fmap, fmap)] = theirs_a[:, None] | theirs_e
    seen = np.zeros(F, dtype=bool)
    seen[fmap] = True
    kept_o |= ~seen[:, None] | ~seen[None, :]  # a feature the other never saw: it has no counts to miss
    kept_s = mine_a[:, None] | mine_e
    both = kept_s & kept_o
    allowed = both.all(1)  # a parent whose whole row both keep
    edges = both & ~allowed[:, None]  # the rest pair by pair (TAN's are symmetric, as both stores' are)
    np.fill_diagonal(edges, False)
    apply_selection(s, allowed, edges)
    peer = getattr(s, "selection_peer", None)
    if peer is not None:
        _mirror(s, peer, s.pair_allowed, s.pair_edges)


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


def prune_pairs(s, limit: int) -> bool:
    """Drop the lowest-ranked units of ``s.pair_rule`` (see the module notes) so that the pair cells
    held fit in a quarter of ``limit`` bytes' worth; False (nothing done) without a rule or when
    nothing is left to drop."""
    rule = s.pair_rule
    if rule is None:
        return False
    F = len(s.features)
    names = [str(n) for n in s.features]
    per, fixed = _unit_cells(s, rule)
    target = limit // (16 * 2 * 4) - fixed
    if rule == "parents":
        live = np.ones(F, dtype=bool) if s.pair_allowed is None else _pad(s.pair_allowed, (F,))
        score = mutual_information_with_class(s)
        units = sorted(np.flatnonzero(live).tolist(), key=lambda f: (-score[f], names[f]))
    else:
        live = np.triu(np.ones((F, F), dtype=bool), 1) if s.pair_edges is None else np.triu(_pad(s.pair_edges, (F, F)), 1)
        score = cmi_from_cells(s)
        i, j = np.nonzero(live)
        units = sorted(zip(i.tolist(), j.tolist()), key=lambda e: (-score[e], names[e[0]], names[e[1]]))
    if not units:
        return False
    cost = np.array([per[u] if rule == "parents" else per[u[0] * F + u[1]] for u in units])
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
        _mirror(s, peer, allowed, edges)
    return True


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


def cmi_from_cells(stats) -> np.ndarray:
    """I(x_i; x_j | y) of every pair of discrete features, read off sparse pair tables: the sums of
    :func:`~stream_nb.learners.conditional_mutual_information` over the cells held (a dense V x V
    block per class would be as large as the table it replaces). Zero for pairs not kept."""
    C, V, F = stats.n_classes, len(stats.value_keys), len(stats.features)
    (c, v, w), n = cells_of(stats.pair_count, stats.pair_count.shape)  # dense pairs too (KDB's candidate parents)
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
    with np.errstate(divide="ignore", invalid="ignore"):
        mi = np.where(n_pair > 0, mi / np.where(n_pair > 0, n_pair, 1.0), 0.0)
    np.fill_diagonal(mi, 0.0)
    return np.maximum(mi, 0.0)


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
    """Give a store read from ``(arrays, meta)`` (see :meth:`~stream_nb.stats.Stats.state`) its pair rule
    and the candidate pairs it kept; ValueError naming what does not fit."""
    rule = meta.get("pair_rule")
    if rule not in (None, "parents", "edges"):
        raise ValueError(f"stats.pair_rule: expected 'parents', 'edges' or null, got {rule!r:.60}")
    s.pair_rule = rule
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
