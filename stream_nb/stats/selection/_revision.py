"""Revising a pair selection as evidence accumulates: every pair judged by a test of its own counts, and
the dropped pairs tried again in rotation.

Once a store with a pair rule has dropped pairs for its budget
(:mod:`stream_nb.stats.selection._candidates`), the choice is revised each
time the events learned reach a multiple of :data:`REVISE_EVERY` (a batch
stops there), not only when the tables fill:

- ``"edges"`` (TAN, KDB's candidate parents): each kept pair {i, j} is judged
  by the G-test of its own counts, G = 2 n I(X_i; X_j | C) against the
  chi-square with C (|X_i| - 1)(|X_j| - 1) degrees of freedom, n the events
  its counts hold (:func:`~stream_nb.stats.selection._candidates.pair_evidence`). A pair
  whose counts hold at least :data:`TRIAL_EVENTS` events, and at least one per
  degree of freedom (before that the test cannot tell a dependence spread over
  many cells), and whose p-value is above :data:`SCREEN` is dropped: its counts
  do not support a dependence. The
  room left, each kept pair charged the cells it holds once full
  (:func:`~stream_nb.stats.selection._candidates.edge_costs`; a quarter of the budget's
  cells, as a pruning), goes to dropped pairs, in rotation: the pairs are
  ordered by a hash of their two names, and each revision admits the pairs
  that follow the last one admitted, wrapping round, so that every pair gets
  its turn whatever the stream. **A pair admitted again starts from no
  counts**: the events learned while it was dropped are gone. It is then
  scored by what its fresh counts support (the test's n is its own), kept
  while they support a dependence, and kept for good once they do
  overwhelmingly. A tree is built only over the *supported* pairs
  (:meth:`~stream_nb.stats.Stats.edge_supported`: the test rejects
  independence at level 0.01 shared among every pair, Bonferroni),
  so a pair on trial, or one whose few events happen to look dependent, does
  not enter the model. When the tables fill between two revisions, the kept
  pairs are ranked by their p-values (the best supported kept).
- ``"parents"`` (AODE, SPODE): a super-parent is judged by the G-test of
  I(X_p; C), read off the value counts, which keep every event learned, so a
  dropped parent's score keeps being updated. A dropped parent that ranks in
  the better half of as many parents as are kept comes back (from no counts)
  in place of the worst-ranked kept one; one near the cut does not, so that
  two parents of about the same score are not swapped back and forth, each
  time losing their counts.
- ``"informative"`` (KDB): the pairs among the attributes ranked best by the
  G-test of I(X; C), revised on the ranking of now
  (:mod:`stream_nb.stats.selection._informative`).

Ties go by name, and the rotation's order by names, so the choice is
deterministic and does not depend on the order in which features arrived.
Merges: :func:`~stream_nb.stats.selection._candidates.widen_to_either`.
"""

from __future__ import annotations

import math

import numpy as np

from ._candidates import (apply_selection, edge_costs, edge_scores, mirror_selection, padded, pair_degrees,
                          pair_evidence, parent_scores)
from ._informative import INFORMATIVE, revise_informative
from ._rotation import MASK64, SCREEN, TRIAL_EVENTS, rotation_positions

__all__ = ["REVISE_EVERY", "SCREEN", "TRIAL_EVENTS", "events_learned", "revise_pairs", "revision_due"]

#: events learned between two revisions of a selection
REVISE_EVERY = 100


def events_learned(s) -> float:
    """The events (weights) ``s`` has learned: the schedule of the revisions."""
    return float(s.class_count[: len(s.classes)].sum())


def _revises(s) -> bool:
    """Whether ``s`` revises a selection: it has a rule and a selection. Of the two layers of a two-layer
    store, the first to learn an event revises, and gives its choice to the other before that one counts
    the event (both have learned the same events then, so the other's revision is no longer due); a fine
    layer that holds no pair tables of its own (stats/budget/_shared_pairs.py) leaves it to the coarse layer."""
    return s.selection.rule is not None and s.selection.allowed is not None and s.pairs


def revision_due(s) -> int:
    """Events ``s`` may learn before its next revision (no limit without one to make)."""
    if not _revises(s):
        return 1 << 62
    learned, due = events_learned(s), _next_revision(s)
    if learned >= due:  # due now: made before the next event is counted (the store's room check), so the
        due = (math.floor(learned / REVISE_EVERY) + 1) * REVISE_EVERY  # one after it ends the batch
    return max(1, int(math.ceil(due - learned)))


def _next_revision(s) -> float:
    """The events learned at which the next revision is due: the next multiple of :data:`REVISE_EVERY`
    after the last revision (a schedule that does not depend on when the budget was first passed)."""
    return (math.floor(s.selection.revised / REVISE_EVERY) + 1) * REVISE_EVERY


def _candidate_units(s) -> np.ndarray:
    """(F, F): the pairs i < j of discrete features with values (the units of the ``"edges"`` rule)."""
    F = len(s.features)
    discrete = np.asarray(s.n_values[:F]) > 0
    return np.triu(discrete[:, None] & discrete[None, :], 1)


def _revise_edges(s, limit: int) -> None:
    F = len(s.features)
    names = [str(n) for n in s.features]
    units = _candidate_units(s)
    kept = np.triu(padded(s.selection.edges, (F, F)), 1) & units
    cost, fixed = edge_costs(s)
    room = limit // (16 * 2 * 4) - fixed
    judged = np.maximum(TRIAL_EVENTS, pair_degrees(s))  # the events a pair's counts need to be judged
    fit = float(cost[kept].sum()) <= room  # (whole numbers: exact sums) every kept pair fits: none is ranked
    evidence = pair_evidence(s, judged if fit else None)  # so only those judged need their scores
    score, n = edge_scores(s, evidence), evidence[2]
    fail = kept & (n >= judged) & (score > math.log(SCREEN))
    keep = kept & ~fail
    i, j = np.nonzero(keep)
    if not fit:  # the best supported, if the kept ones no longer fit
        order = sorted(range(len(i)), key=lambda u: (score[i[u], j[u]], names[i[u]], names[j[u]]))
        i, j = i[order], j[order]
        fits = int(np.searchsorted(np.cumsum(cost[i, j]), room, side="right"))
        i, j = i[:fits], j[:fits]
    free = room - float(cost[i, j].sum())
    a, b = np.nonzero(units & ~kept)  # the pairs dropped before (those dropped now wait for their next turn)
    pos = rotation_positions(s)[a, b]
    ahead = np.argsort(pos - np.uint64((s.selection.cursor + 1) & MASK64), kind="stable")  # wrapping round
    a, b = a[ahead], b[ahead]
    m = int(np.searchsorted(np.cumsum(cost[a, b]), free, side="right"))
    if m:
        s.selection.advance(pos[ahead][m - 1])
        s.selection.mark_partial()  # the pairs admitted start from no counts
    edges = np.zeros((F, F), dtype=bool)
    edges[np.r_[i, a[:m]], np.r_[j, b[:m]]] = True
    apply_selection(s, np.zeros(F, dtype=bool), edges | edges.T)


def _revise_parents(s) -> None:
    F = len(s.features)
    names = [str(n) for n in s.features]
    kept = padded(s.selection.allowed, (F,))
    K = int(kept.sum())
    score = parent_scores(s)
    ranked = sorted(np.flatnonzero(np.asarray(s.n_values[:F]) > 0).tolist(), key=lambda f: (score[f], names[f]))
    lead = {f for f in ranked[: (K + 1) // 2] if not kept[f]}  # dropped parents clearly among the best: back
    chosen = [f for f in ranked if kept[f] or f in lead]
    allowed = np.zeros(F, dtype=bool)
    allowed[chosen[:K]] = True
    if (allowed & ~kept).any():
        s.selection.mark_partial()  # the parents that came back start from no counts
    if (allowed != kept).any():
        apply_selection(s, allowed, padded(s.selection.edges, (F, F)))


def revise_pairs(s, limit: int) -> bool:
    """Revise the selection of ``s`` (see the module notes) if :data:`REVISE_EVERY` events have passed
    since the last revision; ``limit``: the bytes its pair tables may take. True if it was revised."""
    if not _revises(s) or events_learned(s) < _next_revision(s):
        return False
    if s.selection.rule == "edges":
        _revise_edges(s, limit)
    elif s.selection.rule == INFORMATIVE:
        revise_informative(s, limit)
    else:
        _revise_parents(s)
    s.selection.revised_at(events_learned(s))
    peer = s.selection_peer
    if peer is not None:
        mirror_selection(s, peer)
    return True
