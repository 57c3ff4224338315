"""Which attribute pairs a store's pair tables count, and since when: the pair selection, a part of the
count store (:class:`PairSelection`, the store's ``selection``).

It holds the choice alone, over feature indices: no count table, no schema. The store gives it the
number of features (or their names) where it needs them, and applies its choice to the tables
(:func:`~stream_nb.stats.selection._candidates.apply_selection`, which makes them
:class:`~stream_nb.stats.selection._candidates.SelectedTable` s); the rules that choose
(:mod:`~stream_nb.stats.selection._candidates`, ``_revision.py``, ``_informative.py``) read the counts and
hand it their choice. See :mod:`stream_nb.stats.selection._candidates` for what is kept and why.
"""

from __future__ import annotations

import numpy as np

from ...exceptions import UnlearnError

__all__ = ["PAIR_RULES", "PairSelection", "padded", "pair_kept"]

#: the pair rules a store may be given: none (every pair, refused at the budget), ``"parents"`` (AODE, SPODE),
#: ``"edges"`` (TAN) and ``"informative"`` (KDB)
PAIR_RULES = (None, "parents", "edges", "informative")


def padded(a: np.ndarray | None, shape: tuple) -> np.ndarray:
    """Booleans ``a`` cut or padded with False to ``shape`` (None: all False)."""
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


class PairSelection:
    """The attribute pairs a store counts (see the module notes). Read its state, change it by its methods:

    - ``rule``: the pair rule (:data:`PAIR_RULES`), :meth:`set_rule`;
    - ``allowed`` (F,) and ``edges`` (F, F): None while every pair is counted; once pairs were dropped,
      the features whose rows are kept (super-parents) and the pairs kept both ways
      (:meth:`choose`, :meth:`grow`, :meth:`clear`);
    - ``cursor`` (the rotation's place: the hash of the last pair admitted) and ``revised`` (the events
      learned at the last revision): :meth:`advance`, :meth:`revised_at`;
    - ``partial``: some kept pair holds fewer events than the store (one admitted again from no counts,
      or kept by only one of two merged stores); set for good by :meth:`mark_partial`, and unlearning is
      refused from then on (:meth:`check_whole`).

    Examples
    --------
    >>> sel = PairSelection("edges")
    >>> sel.selected, bool(sel.kept(3).all())  # no selection yet: every pair counted
    (False, True)
    >>> edges = np.zeros((3, 3), dtype=bool)
    >>> edges[0, 2] = edges[2, 0] = True
    >>> sel.choose(np.zeros(3, dtype=bool), edges)
    >>> sel.kept(3).astype(int).tolist()  # the diagonal and the edge {0, 2}
    [[1, 0, 1], [0, 1, 0], [1, 0, 1]]
    >>> sel.pair_mask(np.array([2, 1, 0])).astype(int).tolist()  # the same pairs, over an event's features
    [[1, 0, 1], [0, 1, 0], [1, 0, 1]]
    >>> sel.summary(["a", "b", "c"])
    {'rule': 'edges', 'parents': [], 'edges': [['a', 'c']]}
    """

    __slots__ = ("rule", "allowed", "edges", "cursor", "revised", "partial")

    def __init__(self, rule: str | None = None):
        self.rule = rule
        self.allowed: np.ndarray | None = None
        self.edges: np.ndarray | None = None
        self.cursor = 0
        self.revised = 0.0
        self.partial = False

    # ------------------------------------------------------------------ reading the choice

    @property
    def selected(self) -> bool:
        """Whether only some pairs are counted (some were dropped for the budget)."""
        return self.allowed is not None

    def kept(self, n_features: int) -> np.ndarray:
        """(F, F): the pairs counted, ``n_features`` of them (all of them without a selection)."""
        F = n_features
        if self.allowed is None:
            return np.ones((F, F), dtype=bool)
        return padded(self.allowed, (F,))[:, None] | padded(self.edges, (F, F)) | np.eye(F, dtype=bool)

    def edge_ok(self, n_features: int) -> np.ndarray | None:
        """(F, F): the pairs whose counts are kept (None: all of them)."""
        return None if self.allowed is None else self.kept(n_features)

    def parent_ok(self, feats) -> np.ndarray:
        """Per feature of ``feats``, whether its pairs as a super-parent are counted (all, without a selection)."""
        feats = np.asarray(feats)
        if self.allowed is None:
            return np.ones(feats.shape, dtype=bool)
        a = self.allowed
        return (feats < len(a)) & a[np.minimum(feats, max(len(a) - 1, 0))] if len(a) else np.zeros(feats.shape, bool)

    def pair_mask(self, feats: np.ndarray) -> np.ndarray:
        """(k, k): whether the pair (feats[r], feats[q]) is counted, the first the row (a selection's)."""
        return pair_kept(self.allowed, self.edges, feats[:, None], feats[None, :])

    def mapped(self, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The choice over another store's features: ``where[g]`` is this selection's index of its feature
        ``g`` (-1: none, never kept). Returns ``(allowed, edges)`` of that store."""
        have = where >= 0
        pa = np.zeros(len(where), dtype=bool)
        pa[have] = self.allowed[where[have]]
        pe = np.zeros((len(where), len(where)), dtype=bool)
        pe[np.ix_(have, have)] = self.edges[np.ix_(where[have], where[have])]
        return pa, pe

    def summary(self, features: list) -> dict | None:
        """The rule, the parents and the edges kept, by the names ``features`` (None: no selection)."""
        if self.allowed is None:
            return None
        parents = [features[f] for f in np.flatnonzero(self.allowed)]
        i, j = np.nonzero(np.triu(self.edges, 1))
        return {"rule": self.rule, "parents": parents,
                "edges": [[features[a], features[b]] for a, b in zip(i.tolist(), j.tolist())]}

    def check_whole(self) -> None:
        """UnlearnError (reason ``"partial_pairs"``) when :attr:`partial`: taking an event back from a
        pair that came back would take it from counts that may never have held it."""
        if self.partial:
            raise UnlearnError(
                "unlearning: some candidate pairs hold only the events learned since they came back (a "
                "revision of the selection, or a merge with a store that kept other pairs), so an event "
                "learned before cannot be taken back exactly; nothing was changed. A model that must unlearn "
                "wide data keeps its pairs within memory_budget (no selection) or unlearns before the first "
                "revision", reason="partial_pairs")

    # ------------------------------------------------------------------ changing it

    def set_rule(self, rule: str | None) -> None:
        """Choose pairs under ``rule`` (:data:`PAIR_RULES`) from the next time the tables pass the budget."""
        if rule not in PAIR_RULES:
            raise ValueError(f"pair rule: expected one of {PAIR_RULES}, got {rule!r:.60}")
        self.rule = rule

    def choose(self, allowed: np.ndarray, edges: np.ndarray) -> None:
        """Count from now on the rows of the ``allowed`` parents (F,) and the pairs of ``edges`` (F, F)."""
        self.allowed, self.edges = allowed, edges

    def grow(self, n_features: int) -> None:
        """New features (none of their pairs kept): the choice padded to ``n_features``."""
        if self.allowed is not None and len(self.allowed) < n_features:
            self.allowed = padded(self.allowed, (n_features,))
            self.edges = padded(self.edges, (n_features, n_features))

    def clear(self) -> None:
        """Count every pair again (the rule stays)."""
        self.allowed = self.edges = None

    def advance(self, cursor: int) -> None:
        """The rotation admitted pairs up to the one at ``cursor``."""
        self.cursor = int(cursor)

    def revised_at(self, events: float) -> None:
        """A revision was made with ``events`` learned: the next is due :data:`REVISE_EVERY` later."""
        self.revised = float(events)

    def mark_partial(self) -> None:
        """Some kept pair holds fewer events than the store, from now on (see :meth:`check_whole`)."""
        self.partial = True

    def follow(self, other: PairSelection) -> None:
        """The schedule of ``other``, the selection of the other layer of a two-layer store: its rotation's
        place, last revision and :attr:`partial` (the choice itself is given by :meth:`choose`)."""
        self.cursor, self.revised, self.partial = other.cursor, other.revised, other.partial

    def adopt_partial(self, other: PairSelection) -> None:
        """:attr:`partial` as ``other``'s: a layer derived from another store's counts holds what they hold."""
        self.partial = other.partial

    def widen(self, other: PairSelection, fmap: np.ndarray, n_features: int) -> np.ndarray:
        """A merge: the pairs counted by this selection (over ``n_features``) or by ``other`` (``fmap`` maps
        its features to ours), (F, F). :attr:`partial` is set when the two did not count the same pairs
        (or either was partial), and the rotation's place and last revision are the later of the two."""
        kept = self.kept(n_features)
        theirs = other.kept(len(fmap))
        shared = kept[np.ix_(fmap, fmap)]
        if other.partial or (shared != theirs).any():
            self.mark_partial()
        kept[np.ix_(fmap, fmap)] = shared | theirs
        self.cursor = max(int(self.cursor), int(other.cursor))
        self.revised = max(float(self.revised), float(other.revised))
        return kept

    # ------------------------------------------------------------------ as plain data (a store's state)

    def state(self, n_features: int) -> tuple[dict, dict]:
        """``(arrays, meta)`` of a store's state (:meth:`~stream_nb.stats.Stats.state`), each key written only
        when it says something: ``pair_rule``; ``pair_allowed``, ``pair_edges`` (over ``n_features``);
        ``pair_cursor``, ``pair_revised``; ``pairs_partial``."""
        F = n_features
        arrays, meta = {}, {}
        if self.rule is not None:
            meta["pair_rule"] = self.rule
        if self.allowed is not None:
            arrays["pair_allowed"], arrays["pair_edges"] = self.allowed[:F].copy(), self.edges[:F, :F].copy()
        if self.cursor or self.revised:  # the revisions of the selection (stats/selection/_revision.py)
            meta["pair_cursor"], meta["pair_revised"] = int(self.cursor), float(self.revised)
        if self.partial:  # unlearning is refused (check_whole)
            meta["pairs_partial"] = True
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict, meta: dict, n_features: int, pairs: bool) -> PairSelection:
        """The selection :meth:`state` wrote, for a store of ``n_features`` features that keeps pair tables
        (``pairs``) or not (a state without the keys: no selection, 0, as written before revisions);
        ValueError naming what does not fit (as ``stats.*``)."""
        rule = meta.get("pair_rule")
        if rule not in PAIR_RULES:
            raise ValueError(f"stats.pair_rule: expected 'parents', 'edges', 'informative' or null, got {rule!r:.60}")
        out = cls(rule)
        cursor, revised = meta.get("pair_cursor", 0), meta.get("pair_revised", 0.0)
        if isinstance(cursor, bool) or not isinstance(cursor, int) or not 0 <= cursor < 1 << 64:
            raise ValueError(f"stats.pair_cursor: expected an integer from 0 to 2**64 - 1, got {cursor!r:.60}")
        if isinstance(revised, bool) or not isinstance(revised, (int, float)) or not 0 <= revised < float("inf"):
            raise ValueError(f"stats.pair_revised: expected a number >= 0 (events), got {revised!r:.60}")
        out.cursor, out.revised = cursor, float(revised)
        partial = meta.get("pairs_partial", False)
        if not isinstance(partial, bool):
            raise ValueError(f"stats.pairs_partial: expected true or false, got {partial!r:.60}")
        out.partial = partial
        if "pair_allowed" not in arrays and "pair_edges" not in arrays:
            return out
        F = n_features
        allowed, edges = np.asarray(arrays.get("pair_allowed")), np.asarray(arrays.get("pair_edges"))
        if allowed.shape != (F,) or edges.shape != (F, F) or allowed.dtype != bool or edges.dtype != bool:
            raise ValueError(f"stats.pair_allowed, pair_edges: expected booleans of shapes [{F}] and [{F}, {F}], got "
                             f"{allowed.dtype} {list(allowed.shape)} and {edges.dtype} {list(edges.shape)}")
        if not pairs:
            raise ValueError("stats.pair_allowed: candidate pairs in a store that keeps no pairs")
        out.choose(allowed, edges)
        return out
