"""KDB's candidate pairs: the pairs among the attributes that say most about the class.

KDB's parents are chosen by I(X_i; X_j | C) read off the pair counts, and its
candidate parents (:mod:`stream_nb.stats.selection._tuple_candidates`) come
from them. Under TAN's rule (``"edges"``) the pairs kept past the budget are
those of the highest I(X_i; X_j | C): on wide data those are the strong
links between attributes that say nothing of the class (on 200 attributes x
30 values, about 56 of 19,900 pairs fit a quarter of 256 MiB), and an
attribute whose pair with its parent is not kept is judged by I(X; C) alone.
KDB's rule, ``"informative"``, keeps the pairs among the class-informative
attributes instead:

- the attributes are ranked by the G-test of I(X; C),
  :func:`~stream_nb.stats.selection._candidates.parent_scores` (exact over
  every event learned: the value counts are all kept), and those whose test
  rejects independence at level :data:`~stream_nb.stats.G_TEST_ALPHA` divided
  by the attributes (Bonferroni) are the *significant* ones;
- the best-ranked significant attributes are taken one by one while every
  pair among them fits a quarter of the budget's cells, each pair charged the
  cells it holds once full (:func:`~stream_nb.stats.selection._candidates.edge_costs`),
  and every pair among them is kept;
- the room left goes to the pairs of the next attribute with those taken, by
  their I(X_i; X_j | C) (:func:`~stream_nb.stats.selection._candidates.cmi_from_cells`;
  a pair without counts has none), ties by name.

The choice is revised with the others (:mod:`stream_nb.stats.selection._revision`,
every :data:`~stream_nb.stats.selection._revision.REVISE_EVERY` events) on the
ranking of that moment: an attribute taken stays while it is significant, and
one not taken is taken in its place only once it ranks in the better half of
as many attributes as are taken (so that two of about the same score are not
swapped back and forth, each time losing their counts); room that no taken
attribute needs goes to the next significant ones. The counts follow the
rules of the other selections (:mod:`stream_nb.stats.selection._candidates`):
a pair dropped loses its counts, **a pair admitted again starts from no
counts** (``pairs_partial`` is then set and unlearning refused), and merges
keep every pair either store keeps, each cell the sum of both stores' cells.
"""

from __future__ import annotations

import math

import numpy as np

from ..discretiser import ALPHA
from ._candidates import (apply_selection, cmi_from_cells, edge_costs, mirror_selection, padded, parent_scores,
                          prune_units)

__all__ = ["INFORMATIVE", "informative_pairs", "prune_informative", "prune_pairs", "revise_informative"]

#: the name of KDB's pair rule (``Stats.pair_rule``)
INFORMATIVE = "informative"


def informative_pairs(s, limit: int, taken: np.ndarray | None = None) -> np.ndarray:
    """(F, F), symmetric: the pairs KDB's rule keeps in ``s`` (see the module notes) within a quarter of
    ``limit`` bytes' worth of cells. ``taken`` (F,): the attributes taken before (a revision), which keep
    their place while significant; None: the ranking alone decides."""
    F = len(s.features)
    names = [str(n) for n in s.features]
    discrete = np.asarray(s.n_values[:F]) > 0
    score = parent_scores(s)
    significant = discrete & (score <= math.log(ALPHA / max(int(discrete.sum()), 1)))
    ranked = sorted(np.flatnonzero(significant).tolist(), key=lambda f: (score[f], names[f]))
    if taken is not None:
        taken = padded(taken, (F,))
        lead = set(ranked[: (int(taken.sum()) + 1) // 2])  # clearly among the best: in place of a taken one
        first = {f for f in ranked if taken[f] or f in lead}
        ranked.sort(key=lambda f: f not in first)  # stable: each part in the order of the ranking
    cost, fixed = edge_costs(s)
    room = limit // (16 * 2 * 4) - fixed
    chosen: list[int] = []
    used = 0.0
    for f in ranked:
        more = float(cost[f, chosen].sum())
        if used + more > room:
            break
        chosen.append(f)
        used += more
    edges = np.zeros((F, F), dtype=bool)
    edges[np.ix_(chosen, chosen)] = True
    np.fill_diagonal(edges, False)
    if len(chosen) < len(ranked) and chosen:  # the next attribute's pairs with those taken, as room allows
        nxt = ranked[len(chosen)]
        cmi = cmi_from_cells(s)
        for g in sorted(chosen, key=lambda g: (-cmi[nxt, g], names[g])):
            if used + cost[nxt, g] <= room:
                edges[nxt, g] = edges[g, nxt] = True
                used += float(cost[nxt, g])
    return edges


def _kept_edges(s) -> np.ndarray:
    F = len(s.features)
    if s.pair_edges is None:
        return ~np.eye(F, dtype=bool)
    return padded(s.pair_edges, (F, F)) | padded(s.pair_allowed, (F,))[:, None]


def _select(s, edges: np.ndarray) -> None:
    F = len(s.features)
    if (edges & ~_kept_edges(s)).any():
        s.pairs_partial = True  # the pairs admitted start from no counts
    apply_selection(s, np.zeros(F, dtype=bool), edges)


def prune_informative(s, limit: int) -> bool:
    """The tables would pass the budget: keep the pairs of :func:`informative_pairs` that are kept now,
    at least one fewer than now (the one of the lowest I(X_i; X_j | C), ties by name); False when no
    pair is left to drop."""
    F = len(s.features)
    names = [str(n) for n in s.features]
    now = np.triu(_kept_edges(s), 1)
    if not now.any():
        return False
    keep = np.triu(informative_pairs(s, limit), 1) & now
    if keep.sum() >= now.sum():
        cmi = cmi_from_cells(s)
        i, j = np.nonzero(now)
        worst = min(range(len(i)), key=lambda u: (cmi[i[u], j[u]], names[i[u]], names[j[u]]))
        keep = now.copy()
        keep[i[worst], j[worst]] = False
    _select(s, keep | keep.T)
    peer = getattr(s, "selection_peer", None)
    if peer is not None:
        mirror_selection(s, peer)
    return True


def revise_informative(s, limit: int) -> None:
    """Revise the pairs of ``s`` under KDB's rule on the ranking of now (see the module notes)."""
    taken = _kept_edges(s).any(1)
    edges = informative_pairs(s, limit, taken)
    if (edges != padded(s.pair_edges, edges.shape)).any() or padded(s.pair_allowed, (len(edges),)).any():
        _select(s, edges)


def prune_pairs(s, limit: int) -> bool:
    """Make room in the pair tables of ``s`` under its pair rule: KDB's (:func:`prune_informative`) or
    the others' (:func:`~stream_nb.stats.selection._candidates.prune_units`); False (nothing done)
    without a rule or when nothing is left to drop."""
    if s.pair_rule == INFORMATIVE:
        return prune_informative(s, limit)
    return prune_units(s, limit)
