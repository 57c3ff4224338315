"""Adding events to the counts: one event, its expected counts under EM, and batches.

Every count is additive. An event adds its weight to its class, to each
observed value, feature, pair and t-tuple of values, in every count set kept
(the counts and, from the first expected counts on, their observed-only twin).
"""

from __future__ import annotations

import numpy as np

from ..selection import add_selected_tuples, selected_cells
from ..tables import selected_room
from ..values import Encoded

__all__ = ["Adding"]


class Adding:
    """Counting of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    #: a list while a learner records what one event adds (its receipt, see :mod:`stream_nb.stats.store._removing`)
    journal: list | None = None

    def add(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        """Add one (encoded) event of class index ``c`` with weight ``w`` (its observed values, to every count set)."""
        self.layout.check_event(self, len(enc.cols))
        if self.journal is not None:
            self.journal.append(("count", enc, c, w))
        self.version += 1
        self.tables.add_class(c, w)
        if len(enc.cols):
            for p in self._sets():
                self.count_values(p, enc.cols, enc.feats, c, w)
        self.add_gaussian(c, w, enc.gslots, enc.gx)

    def counted_one(self, c: int, w: float, twin: bool = False) -> None:
        """A kernel has counted the event just encoded for learning (class ``c``, weight ``w``) into these
        arrays (``twin``: and into :meth:`counted_twin`'s): a second layer counts it in its own (here, there
        is none)."""

    def counted_twin(self, enc: Encoded):
        """The address table (:class:`~stream_nb.kernels.Addresses`) of a second layer's class, value,
        feature and pair counts, when a kernel counting the event just encoded for learning (``enc``, of
        weight 1) may count it there too, in the same columns; else None (here, there is none)."""
        return None

    def mark_counted(self, many: bool) -> None:
        """A compiled kernel has added events to the counts in place: mark them changed, as :meth:`add` does
        (``many``: as :meth:`add_many` does, which also tells the views to derive their tables again)."""
        self.version += 1
        if many:
            self.epoch += 1

    def add_observed(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        """Count the observed values of ``enc`` in the observed-only twin alone (nothing without one).

        EM's M-step adds an incomplete event to the counts with
        :meth:`add_expected` and to the twin with this: the twin then holds what
        ``missing="ignore"`` would have counted.
        """
        if self.keeps_observed and len(enc.cols):
            self.layout.check_event(self, len(enc.cols))
            if self.journal is not None:
                self.journal.append(("observed", enc, c, w))
            self.version += 1
            self.count_values("obs_", enc.cols, enc.feats, c, w)

    def count_values(self, p: str, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
        """Add weight ``w`` to the values ``cols`` (of features ``feats``) of class ``c`` in count set ``p``."""
        tables = self.tables
        tables.add_values(p, c, cols, w, feats, w)
        self.sync_pairs()  # (pair blocks grown to the event's columns, or sparse past the budget)
        if self.pairs:  # (a selection's sparse tables add the candidate pairs alone: _candidates.py)
            tables.add_pair_rows(p, cols[None, :], feats, np.array([c]), np.array([float(w)]),
                                 selected_cells(self, len(cols)) if self.pairs_sparse else 0)
        if self.tuples and self.tuples_selected:  # the candidate parents' tuples alone (_tuple_candidates.py)
            self._count_selected_tuples(p, cols[None, :], feats, np.array([c]), np.array([float(w)]))
        elif self.tuples:
            tables.add_event_tuples(p, self.tuples, cols, feats, c, w)

    def _count_selected_tuples(self, p: str, D, dfeats, yc, w, mask=None) -> None:
        """The kept t-tuples of rows ``D`` (of features ``dfeats``; ``mask``, where given, is ``D >= 0``) into
        the selected tables, in row order, in compiled code."""
        add_selected_tuples(self, p, D, dfeats, yc, w)

    def tuple_run_room(self, k: int, dfeats: np.ndarray) -> tuple:
        """Before a compiled run counts its next event (``k`` values, of features ``dfeats``) into selected t-way
        tables: the room check :meth:`add` makes before an event (which may narrow the candidates), then each
        table given room for one event's kept tuples (:meth:`CountTables.reserve_tuples`). Returns ``(lists,
        room, tuple_count, tuple_feat, held)``: the candidate parents (:meth:`tuple_lists`), the most cells an
        event adds to a table, the tables, and the cells they hold, which the run updates and gives back to
        :meth:`tuple_run_held`."""
        self.layout.check_event(self, k)
        lists = self.tuple_lists()
        room = selected_room(self.tuples, lists, np.asarray(dfeats, dtype=np.int64))
        return (lists, room, *self.tables.reserve_tuples(room))

    def tuple_run_held(self, held: np.ndarray) -> None:
        """A compiled run has added cells to the selected t-way tables' hash arrays in place: record the cells
        they hold (``held`` of :meth:`tuple_run_room`)."""
        self.tables.tuples_held(held)

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Count one labeled event's observed values."""
        enc, c = self.encode_labeled(x, y)
        self.add(enc, c, w)

    def add_expected(self, c: int, w: float, u: np.ndarray, m: np.ndarray, feats_u: np.ndarray, J=None) -> None:
        """Add one event of class ``c`` whose values are known only in expectation (EM's M-step).

        ``u`` are the columns the event may take (an observed feature: its one
        column; a missing one: all its values), grouped by feature in
        contiguous blocks (``feats_u``); ``m`` is the expected indicator of
        each column and ``J`` the expected pair indicators over ``u`` (needed
        when pair counts are kept): ``J[r, s]`` is added to
        ``pair_count[c, u[r], u[s]]``, the row being the value conditioned on.
        ``J`` need not be symmetric (EM fills the rows of each feature under
        its own one-dependence model), but each row block of a feature must
        sum to ``m`` over every other feature's columns. Each feature's block
        of ``m`` sums to 1, so the event adds exactly weight ``w`` everywhere.
        Only the counts receive it; the observed-only twin (started here, if
        wanted and not yet kept) takes the event's observed values through
        :meth:`add_observed`.
        """
        self.layout.check_event(self, len(u))
        self.blocks_to_sparse()  # expected pairs have no place in pair blocks
        if self.wants_observed:
            self.keep_observed()
        if self.journal is not None:
            self.journal.append(("expected", c, w, u, m, feats_u, J))
        self.version += 1
        self.tables.add_class(c, w)
        starts = np.flatnonzero(np.r_[True, feats_u[1:] != feats_u[:-1]])
        fs = feats_u[starts]
        self.tables.add_values("", c, u, w * m, fs, w)
        if self.pairs:
            self.tables.add_expected_pairs(c, u, fs, w * J, w * np.add.reduceat(J, starts, axis=1))

    def add_many(self, D, dfeats, G, gslots, yc, w=None, observed: bool = True) -> None:
        """Add a batch of encoded events (rows of ``D``, ``G`` as :meth:`encode_run` gives them).

        ``observed=False``: the rows are completions of one incomplete event
        (KDB's M-step), so they go to the counts and not to the observed-only
        twin (started here, if wanted and not yet kept, as in :meth:`add_expected`).
        """
        if w is None or np.all(np.asarray(w) >= 0):  # removing (negative weights) needs no room
            self.layout.check_event(self, D.shape[1])
        if not observed and self.wants_observed:
            self.keep_observed()
        self.sync_pairs()
        if self.journal is not None:
            self.journal.append(("many", D, dfeats, G, gslots, yc, w, observed))
        n = len(yc)
        self.epoch += 1
        w = np.ones(n) if w is None else np.asarray(w, dtype=float)
        C = len(self.classes)
        self.tables.add_class(slice(0, C), np.bincount(yc, weights=w, minlength=C))
        if D.shape[1]:
            mask = D >= 0
            rr, jj = np.nonzero(mask)
            cc = yc[rr]
            for p in self._sets() if observed else ("",):
                self.tables.add_value_rows(p, cc, D[rr, jj], dfeats[jj], w[rr])
                if self.pairs:
                    self.tables.add_pair_rows(p, D, dfeats, yc, w, selected_cells(self, D.shape[1]))
                if self.tuples and self.tuples_selected:
                    self._count_selected_tuples(p, D, dfeats, yc, w, mask)
                elif self.tuples:
                    self.tables.add_tuple_rows(p, self.tuples, D, dfeats, yc, w, mask)
        self.add_gaussian_rows(G, gslots, yc, w)
