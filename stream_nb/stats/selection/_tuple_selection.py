"""Which candidate parents a store's t-way tables count the tuples of, and since when: the tuple selection,
a part of the count store (:class:`TupleSelection`, the store's ``tuple_selection``).

It holds the choice alone, over feature indices: no count table, no schema. The rules that choose and
narrow it (:mod:`~stream_nb.stats.selection._tuple_candidates`: ``choose_tuples``, ``revise_tuples``,
``prune_tuples``, ``widen_tuples_to_either``) read the counts and hand it their choice, and make the
tables follow it; see that module for what is kept and why.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TupleSelection"]


class TupleSelection:
    """The candidate parents whose t-tuples a store counts (see the module notes). Read its state, change it
    by its methods:

    - ``rule``: set by the model (KDB): past the budget, keep the candidate parents' t-tuples rather than
      refuse (:meth:`set_rule`);
    - ``cand`` (F, F): ``[f, g]`` whether g is a candidate parent of f; None: every tuple counted
      (:meth:`choose`, :meth:`grow`, :meth:`clear`);
    - ``pending``: the choice waits for the model's first rebuild, the tables holding nothing meanwhile
      (:meth:`wait`, :meth:`resolve`);
    - ``start``: the events learned before the t-way tables of the choice started counting (0.0: from the
      first);
    - ``ready``: the model has a structure, so the first choice may rank candidates (:meth:`set_ready`);
    - ``score`` (F, F): what candidates are ranked by (the CMI they were chosen by); None: read off the
      pair counts (:meth:`set_score`).

    Examples
    --------
    >>> sel = TupleSelection()
    >>> sel.selected, sel.summary()
    (False, None)
    >>> cand = np.zeros((3, 3), dtype=bool)
    >>> cand[0, [1, 2]] = cand[2, 1] = True
    >>> sel.choose(cand)
    >>> sel.lists().tolist()  # each feature's candidate parents, padded with -1
    [[1, 2], [-1, -1], [1, -1]]
    >>> sel.summary()
    {'pending': False, 'candidates': 3, 'most_per_feature': 2, 'features_with_candidates': 2, 'counted_from_event': 0.0}
    """

    __slots__ = ("rule", "cand", "pending", "start", "ready", "score", "_lists")

    def __init__(self, rule: bool = False):
        self.rule = bool(rule)
        self.cand: np.ndarray | None = None
        self.pending = False
        self.start = 0.0
        self.ready = False
        self.score: np.ndarray | None = None
        self._lists: tuple | None = None  # (the cand they were made of, its lists)

    # ------------------------------------------------------------------ reading the choice

    @property
    def selected(self) -> bool:
        """Whether the t-way tables keep only the tuples of candidate parents (or nothing, while pending)."""
        return self.cand is not None

    def lists(self) -> np.ndarray:
        """(F, m): each feature's candidate parents, padded with -1 (kept until the choice changes)."""
        cand = self.cand
        if self._lists is not None and self._lists[0] is cand:
            return self._lists[1]
        m = int(cand.sum(1).max()) if cand.size else 0
        out = np.full((len(cand), m), -1, dtype=np.int64)
        for f in range(len(cand)):
            g = np.flatnonzero(cand[f])
            out[f, : len(g)] = g
        self._lists = (cand, out)
        return out

    def units(self, n_features: int) -> np.ndarray:
        """(F, F): the candidate parents whose tuples are counted (every other feature without a choice)."""
        F = n_features
        if self.cand is None:
            return ~np.eye(F, dtype=bool)
        out = np.zeros((F, F), dtype=bool)
        n = min(len(self.cand), F)
        out[:n, :n] = self.cand[:n, :n]
        return out

    def summary(self) -> dict | None:
        """What a store's ``memory_used`` shows of the choice: the candidate parents kept, and since when."""
        cand = self.cand
        if cand is None:
            return None
        per = cand.sum(1)
        return {"pending": bool(self.pending), "candidates": int(cand.sum()),
                "most_per_feature": int(per.max()) if len(per) else 0,
                "features_with_candidates": int((per > 0).sum()), "counted_from_event": float(self.start)}

    # ------------------------------------------------------------------ changing it

    def set_rule(self, rule: bool) -> None:
        """Past the budget, keep candidate parents' tuples (True) or refuse (False)."""
        self.rule = bool(rule)

    def set_ready(self, ready: bool) -> None:
        """Whether the model has a structure the first choice may rank candidates by."""
        self.ready = bool(ready)

    def set_score(self, score: np.ndarray | None) -> None:
        """What candidates are ranked by from now on (None: read off the pair counts)."""
        self.score = score

    def choose(self, cand: np.ndarray) -> None:
        """Count from now on the tuples of candidate parents ``cand`` (F, F)."""
        self.cand = cand

    def grow(self, n_features: int) -> np.ndarray | None:
        """New features (no candidates): the choice padded to ``n_features``; returns it."""
        if self.cand is not None and len(self.cand) < n_features:
            grown = np.zeros((n_features, n_features), dtype=bool)
            grown[: len(self.cand), : len(self.cand)] = self.cand
            self.cand = grown
        return self.cand

    def clear(self) -> None:
        """Count every tuple again (nothing pending)."""
        self.cand, self.pending = None, False

    def wait(self) -> None:
        """The tables take nothing until the model's first rebuild chooses the candidates."""
        self.pending = True

    def resolve(self, events: float) -> bool:
        """The candidates are chosen now, with ``events`` learned: a pending choice counts from here.
        Returns whether it was pending."""
        pending, self.pending = self.pending, False
        if pending:
            self.start = float(events)
        return pending

    def widen(self, other: TupleSelection, fmap: np.ndarray, n_features: int) -> np.ndarray:
        """A merge: the candidate parents counted here (over ``n_features``) or by ``other`` (``fmap`` maps its
        features to ours), (F, F). The events neither's tables hold add up, the scores are the larger of the
        two, and the model is ready if either was; pending while both are (:meth:`clear` if every tuple is
        counted again)."""
        F = n_features
        mine, theirs = self.units(F), other.units(len(fmap))
        mine[np.ix_(fmap, fmap)] |= theirs
        self.start = float(self.start) + float(other.start)  # the events the t-way tables of neither hold
        score = np.zeros((F, F))
        for sel, where in ((self, np.arange(F)), (other, fmap)):
            if sel.score is not None:
                n = min(len(sel.score), len(where))
                block = score[np.ix_(where[:n], where[:n])]
                score[np.ix_(where[:n], where[:n])] = np.maximum(block, sel.score[:n, :n])
        self.score = score
        self.ready = bool(self.ready or other.ready)
        self.pending = bool(self.pending and other.pending)
        return mine

    def differs(self, other: TupleSelection, fmap: np.ndarray, n_features: int) -> bool:
        """Whether ``other`` counts other candidate parents than this choice over its features (``fmap``)."""
        return bool((self.units(n_features)[np.ix_(fmap, fmap)] != other.units(len(fmap))).any())

    # ------------------------------------------------------------------ as plain data (a store's state)

    def state(self, n_features: int) -> tuple[dict, dict]:
        """``(arrays, meta)`` of a store's state, each key written only when it says something: ``tuple_rule``,
        ``tuple_pending``, ``tuple_from``; ``tuple_cand``, ``tuple_score`` (over ``n_features``)."""
        F = n_features
        arrays, meta = {}, {}
        if self.rule:
            meta["tuple_rule"] = True
        if self.cand is not None:
            arrays["tuple_cand"] = self.cand[:F, :F].copy()
            score = np.zeros((F, F))
            if self.score is not None:
                n = min(len(self.score), F)
                score[:n, :n] = self.score[:n, :n]
            arrays["tuple_score"] = score
            meta["tuple_pending"], meta["tuple_from"] = bool(self.pending), float(self.start)
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict, meta: dict, n_features: int, tuples: int) -> TupleSelection:
        """The choice :meth:`state` wrote, for a store of ``n_features`` features and t-way tables of ``tuples``
        (0: none); ValueError naming what does not fit (as ``stats.*``)."""
        rule = meta.get("tuple_rule", False)
        if not isinstance(rule, bool):
            raise ValueError(f"stats.tuple_rule: expected a boolean, got {rule!r:.60}")
        out = cls(rule)
        if "tuple_cand" not in arrays:
            return out
        F = n_features
        cand = np.asarray(arrays["tuple_cand"])
        if cand.shape != (F, F) or cand.dtype != bool:
            raise ValueError(f"stats.tuple_cand: expected booleans of shape [{F}, {F}], got {cand.dtype} {list(cand.shape)}")
        if not tuples:
            raise ValueError("stats.tuple_cand: candidate parents in a store that keeps no t-way tables")
        pending, since = meta.get("tuple_pending", False), meta.get("tuple_from", 0.0)
        if not isinstance(pending, bool) or isinstance(since, bool) or not isinstance(since, (int, float)) or not since >= 0:
            raise ValueError(f"stats.tuple_pending, tuple_from: expected a boolean and a number >= 0, got "
                             f"{pending!r:.30} and {since!r:.30}")
        if pending and cand.any():
            raise ValueError("stats.tuple_pending: a pending selection has no candidate parents yet")
        score = np.asarray(arrays.get("tuple_score", np.zeros((F, F))))
        if score.shape != (F, F) or score.dtype.kind != "f" or not np.isfinite(score).all():
            raise ValueError(f"stats.tuple_score: expected finite numbers of shape [{F}, {F}], got {score.dtype} "
                             f"{list(score.shape)}")
        out.cand, out.pending, out.start, out.score = cand, pending, float(since), score
        return out
