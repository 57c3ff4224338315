"""KDB's candidate pairs: the pairs among the attributes that say most about the class.

KDB's parents are chosen by I(X_i; X_j | C) read off the pair counts, and its
candidate parents (:mod:`stream_nb.stats.selection._tuple_candidates`) come
from them. Under TAN's rule (``"edges"``) the pairs kept past the budget are
those of the highest I(X_i; X_j | C): on wide data those are the strong
links between attributes that say nothing of the class (on 200 attributes x
30 values, about 56 of 19,900 pairs fit a quarter of 256 MiB), and an
attribute whose pair with its parent is not kept is judged by I(X; C) alone.
KDB's rule, ``"informative"``, keeps for each class-informative attribute the
pairs with the partners its counts support:

- the attributes are ranked by the G-test of I(X; C),
  :func:`~stream_nb.stats.selection._candidates.parent_scores` (exact over
  every event learned: the value counts are all kept), and those whose test
  rejects independence at level :data:`~stream_nb.stats.G_TEST_ALPHA` divided
  by the attributes (Bonferroni) are the *significant* ones; a pair among them
  belongs to its lower-ranked attribute (the other may be its parent: a child
  says no more of the class than its parent);
- a pair held is judged by the G-tests of its own counts
  (:func:`~stream_nb.stats.selection._pair_tests.pair_tests`): *supported*
  when the test of X_i and X_j alone (until the pair holds an event per degree
  of freedom of the other, and :data:`TRIAL_EVENTS`) or the test given the
  class (from then on) rejects independence at the level divided by the pairs
  among the significant attributes; dropped once judged by the test given the
  class with a p-value above :data:`SCREEN` (a dependence through the class
  alone gives KDB no parent); on trial otherwise;
- within half the budget's cells (TAN's and AODE's rules prune to a quarter; on
  cat200 a half holds twice the pairs, and KDB's holdout after 100,000 events goes
  from 0.877 to 0.900 of the optimum, ``bench/wide.py``), each pair charged the cells
  it holds once full (:func:`~stream_nb.stats.selection._candidates.edge_costs`), in
  turn: each attribute's best supported partner (by the excess of the G of the
  test given the class over its degrees of freedom, per event: a pair admitted
  late competes with one counted from the start), the trials of the attributes
  short of k partners (k: the model's attribute parents,
  :func:`partners_per_attribute`), new trials for them (the best-ranked
  partners first: a parent says more of the class than its child), each
  one's next supported partners up to k, their other trials, more new trials
  for them in the rotation's order
  (:func:`~stream_nb.stats.selection._rotation.rotation_positions`, from the
  store's ``pair_cursor``), and the other supported pairs.

The choice is revised with the others (:mod:`stream_nb.stats.selection._revision`)
every :data:`JUDGE_EVERY` events, and at the next revision (every
:data:`~stream_nb.stats.selection._revision.REVISE_EVERY` events) when an
attribute significant now holds no pair, on the ranking of that moment: an
attribute taken stays while it is significant, and one not taken is ranked
before the others taken only once it ranks in the better half of as many
attributes as are taken (so that two of about the same score are not
swapped back and forth, each time losing their counts). The counts follow the
rules of the other selections (:mod:`stream_nb.stats.selection._candidates`):
a pair dropped loses its counts, **a pair admitted again starts from no
counts** (``pairs_partial`` is then set and unlearning refused) and is scored
by what those counts support (its tests' n are its own events), and merges
keep every pair either store keeps, each cell the sum of both stores' cells;
the rotation's place and the last revision merge as the later of the two.
"""

from __future__ import annotations

import math

import numpy as np

from ..discretiser import ALPHA
from ._candidates import apply_selection, cmi_from_cells, edge_costs, mirror_selection, padded, parent_scores, prune_units
from ._pair_tests import pair_tests
from ._rotation import MASK64, SCREEN, TRIAL_EVENTS, rotation_positions

__all__ = ["INFORMATIVE", "JUDGE_EVERY", "informative_pairs", "partners_per_attribute", "prune_informative", "prune_pairs", "revise_informative"]

#: the name of KDB's pair rule (:attr:`PairSelection.rule <stream_nb.stats.selection._pair_selection.PairSelection.rule>`)
INFORMATIVE = "informative"
#: events learned between two revisions of KDB's pairs (a pair is judged on hundreds of its own events:
#: the tests, read off every cell held, are not made at each revision of the other rules)
JUDGE_EVERY = 1000


def _ranked(s, taken: np.ndarray | None) -> list[int]:
    """The significant attributes of ``s`` best first (see the module notes); ``taken`` (F,): those taken
    before (a revision), which keep their place while significant; None: the ranking alone decides."""
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
    return ranked


def partners_per_attribute(s) -> int:
    """The supported partners each attribute keeps first: its model's attribute parents (k of a KDB whose
    store keeps (k+1)-way tables; 1 otherwise)."""
    return max(int(s.tuples) - 1, 1) if s.tuples else 1


def informative_pairs(s, limit: int, taken: np.ndarray | None = None, admit: bool = True) -> np.ndarray:
    """(F, F), symmetric: the pairs KDB's rule keeps in ``s`` (see the module notes) within half of
    ``limit`` bytes' worth of cells. ``taken`` (F,): the attributes taken before (a revision), which keep
    their place while significant; None: the ranking alone decides. ``admit``: pairs not held may be
    admitted on trial, in the rotation's order, and the rotation's place (``s.selection.cursor``) advances past
    them (a pruning only narrows)."""
    F = len(s.features)
    names = [str(n) for n in s.features]
    ranked = _ranked(s, taken)
    place = {f: i for i, f in enumerate(ranked)}
    held = np.triu(_kept_edges(s), 1)
    joint, given, n, excess = pair_tests(s)
    # the test of X_i and X_j alone shows a dependence early; once a pair holds an event per degree of freedom
    # of the test given the class (and TRIAL_EVENTS), that one judges it (a dependence through the class
    # alone gives KDB no parent)
    evidence = np.minimum(joint, given)
    r = np.maximum(np.asarray(s.n_values[:F], dtype=float) - 1.0, 0.0)
    df_given = max(float(np.count_nonzero(s.class_count[: s.n_classes])), 1.0) * r[:, None] * r[None, :]
    judged = n >= np.maximum(TRIAL_EVENTS, df_given)
    units = len(ranked) * (len(ranked) - 1) // 2
    level = math.log(ALPHA / max(units, 1))
    screen = math.log(SCREEN)
    k = partners_per_attribute(s)
    supported: dict[int, list[tuple[int, int]]] = {f: [] for f in ranked}
    trial: dict[int, list[tuple[int, int]]] = {f: [] for f in ranked}
    fresh: dict[int, list[tuple[int, int]]] = {f: [] for f in ranked}
    pos = rotation_positions(s)
    for f in ranked:  # each pair belongs to its later-ranked attribute: the earlier one may be its parent
        for g in ranked[: place[f]]:
            e = (min(f, g), max(f, g))
            if not held[e]:
                if admit:
                    fresh[f].append(e)
            elif (given[e] if judged[e] else evidence[e]) <= level:
                supported[f].append(e)
            elif not (judged[e] and given[e] > screen):
                trial[f].append(e)  # a judged pair whose counts show no dependence is dropped, and waits its turn
        # the supported partners by the dependence they show, per event (those of a pair admitted late are
        # not held back by its fewer events); the others by their evidence
        supported[f].sort(key=lambda e: (-excess[e], evidence[e], names[e[0]], names[e[1]]))
        trial[f].sort(key=lambda e: (evidence[e], names[e[0]], names[e[1]]))
    want = {f: max(k - len(supported[f]), 0) for f in ranked}  # partners still to find
    on_trial = {f: trial[f][: want[f]] for f in ranked}
    # new trials in the rotation's order: first as many as each attribute short of partners lacks, then any
    # attribute's, as room allows
    def rotation(pairs):
        return sorted(pairs, key=lambda e: (int(pos[e]) - (int(s.selection.cursor) + 1)) & MASK64)

    # (an attribute short of partners tries the best-ranked first: its parent, if among them, says more of the
    # class than it does)
    new = {f: sorted(fresh[f], key=lambda e: place[e[0] + e[1] - f])[: want[f] - len(on_trial[f])] for f in ranked}
    later = rotation(e for f in ranked if want[f] for e in fresh[f] if e not in new[f])
    groups = (
        [supported[f][0] for f in ranked if supported[f]],  # each one's best partner
        [e for f in ranked for e in on_trial[f]],  # the trials of those still short of k partners
        [e for f in ranked for e in new[f]],  # new trials for them, as many as they are short
        [supported[f][j] for j in range(1, k) for f in ranked if j < len(supported[f])],  # the next partners, in turns
        [e for f in ranked for e in trial[f][len(on_trial[f]):]],  # the other trials of those short of partners
        later,  # more new trials for them, in the rotation's order
        [e for f in ranked for e in supported[f][k:]],  # the other supported pairs, room left
    )
    cost, fixed = edge_costs(s)
    room = limit // (16 * 2 * 2) - fixed  # half: the other half for the trials as they fill
    edges = np.zeros((F, F), dtype=bool)
    used = 0.0
    for part, group in enumerate(groups):
        for a, b in group:
            if used + cost[a, b] <= room:
                edges[a, b] = edges[b, a] = True
                used += float(cost[a, b])
                if part in (2, 5):
                    s.selection.advance(pos[a, b])
    return edges


def _kept_edges(s) -> np.ndarray:
    F = len(s.features)
    if s.selection.edges is None:
        return ~np.eye(F, dtype=bool)
    return padded(s.selection.edges, (F, F)) | padded(s.selection.allowed, (F,))[:, None]


def _select(s, edges: np.ndarray) -> None:
    F = len(s.features)
    if (edges & ~_kept_edges(s)).any():
        s.selection.mark_partial()  # the pairs admitted start from no counts
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
    keep = np.triu(informative_pairs(s, limit, admit=False), 1) & now
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
    """Revise the pairs of ``s`` under KDB's rule on the ranking and the tests of now, when the events
    learned have reached a multiple of :data:`JUDGE_EVERY` since the last revision, or an attribute
    significant now holds no pair (see the module notes)."""
    learned = float(s.class_count[: len(s.classes)].sum())
    taken = _kept_edges(s).any(1)
    if math.floor(learned / JUDGE_EVERY) <= math.floor(float(s.selection.revised) / JUDGE_EVERY) and (
            len(_ranked(s, taken)) < 2 or all(taken[f] for f in _ranked(s, taken))):
        return  # not due, and no significant attribute without pairs
    edges = informative_pairs(s, limit, taken)
    if (edges != padded(s.selection.edges, edges.shape)).any() or padded(s.selection.allowed, (len(edges),)).any():
        _select(s, edges)


def prune_pairs(s, limit: int) -> bool:
    """Make room in the pair tables of ``s`` under its pair rule: KDB's (:func:`prune_informative`) or
    the others' (:func:`~stream_nb.stats.selection._candidates.prune_units`); False (nothing done)
    without a rule or when nothing is left to drop."""
    if s.selection.rule == INFORMATIVE:
        return prune_informative(s, limit)
    return prune_units(s, limit)
