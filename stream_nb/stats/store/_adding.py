"""Adding events to the counts: one event, its expected counts under EM, and batches.

Every count is additive. An event adds its weight to its class, to each
observed value, feature, pair and t-tuple of values, in every count set kept
(the counts and, from the first expected counts on, their observed-only twin).
"""

from __future__ import annotations

import numpy as np

from ...kernels import compiled
from ..selection import selected_cells
from ..tables import PairBlocks, SparseTable, add_pair_rows
from ..selection import add_selected_tuples
from ..values import Encoded
from ..tables import row_chunks

__all__ = ["Adding", "add_pairs_expected"]


def _flat(table: np.ndarray) -> np.ndarray:
    """A flat view of a (C-contiguous) count table, for adding at flat indices."""
    flat = table.reshape(-1)
    if not np.shares_memory(flat, table):
        raise ValueError("a count table must be C-contiguous")
    return flat


def _add_pairs_many(pc, pf, D, dfeats, yc, w, room: int) -> None:
    """Add the observed pairs of the rows of ``D`` to ``pair_count`` and ``pair_feat`` in compiled loops, row
    by row: dense tables (:func:`~stream_nb.kernels._tree.add_pair_rows`) or sparse ones
    (:func:`~stream_nb.stats.tables._sparse.add_pair_rows`; ``room``, the most cells a row adds to one) or pair
    blocks (:meth:`~stream_nb.stats.tables.PairBlocks.add_rows`, grown to the store's columns beforehand)."""
    if isinstance(pc, SparseTable):
        add_pair_rows(pc, pf, D, dfeats, yc, w, room)
    elif isinstance(pc, PairBlocks):  # (its pair_feat is read off the blocks)
        pc.add_rows(D, dfeats, yc, w)
    else:
        compiled().add_pair_rows(np.ascontiguousarray(D), dfeats, yc, w, pc, pf)


def add_pairs_expected(pair_count, pair_feat, c: int, u: np.ndarray, fs: np.ndarray, J: np.ndarray, Jf: np.ndarray) -> None:
    """Add ``J`` to ``pair_count[c, u[r], u[s]]`` and ``Jf`` to ``pair_feat[c, u[r], fs[g]]`` (dense or
    sparse tables; ``u`` and ``fs`` are distinct, so each cell once): EM's expected pairs, or with
    negated weights their removal."""
    if isinstance(pair_count, SparseTable):  # the cells that change (not the pairs of one feature's values)
        r, q = np.nonzero(J)
        pair_count.add((c, u[r], u[q]), J[r, q])
        r, q = np.nonzero(Jf)
        pair_feat.add((c, u[r], fs[q]), Jf[r, q])
    else:
        pair_count[c][u[:, None], u] += J
        pair_feat[c][u[:, None], fs] += Jf


class Adding:
    """Counting of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    #: a list while a learner records what one event adds (its receipt, see :mod:`stream_nb.stats.store._removing`)
    journal: list | None = None

    def add(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        """Add one (encoded) event of class index ``c`` with weight ``w`` (its observed values, to every count set)."""
        self._check_sparse_room(len(enc.cols))
        if self.journal is not None:
            self.journal.append(("count", enc, c, w))
        self.version += 1
        self.class_count[c] += w
        if len(enc.cols):
            for p in self._sets():
                self._count(p, enc.cols, enc.feats, c, w)
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
            self._check_sparse_room(len(enc.cols))
            if self.journal is not None:
                self.journal.append(("observed", enc, c, w))
            self.version += 1
            self._count("obs_", enc.cols, enc.feats, c, w)

    def _count(self, p: str, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
        """Add weight ``w`` to the values ``cols`` (of features ``feats``) of class ``c`` in count set ``p``."""
        getattr(self, p + "value_count")[c, cols] += w
        getattr(self, p + "feat_count")[c, feats] += w
        self.sync_pairs()  # (pair blocks grown to the event's columns, or sparse past the budget)
        if self.pairs and self.pairs_blocks:
            _add_pairs_many(getattr(self, p + "pair_count"), None, cols[None, :], feats, np.array([c]),
                            np.array([float(w)]), 0)
        elif self.pairs and self.pairs_sparse:  # (a selection's tables add the candidate pairs alone: _candidates.py)
            add_pair_rows(getattr(self, p + "pair_count"), getattr(self, p + "pair_feat"), cols[None, :], feats,
                          np.array([c]), np.array([float(w)]), selected_cells(self, len(cols)))
        elif self.pairs:
            compiled().add_pair_rows(cols[None, :], feats, np.array([c]), np.array([float(w)]),
                                     getattr(self, p + "pair_count"), getattr(self, p + "pair_feat"))
        if self.tuples and self.tuples_selected:  # the candidate parents' tuples alone (_tuple_candidates.py)
            self._count_selected_tuples(p, cols[None, :], feats, np.array([c]), np.array([float(w)]))
            return
        if self.tuples:
            tc, tf = getattr(self, p + "tuple_count"), getattr(self, p + "tuple_feat")
            if isinstance(tc, SparseTable):
                self._count_sparse_tuples(p, cols, feats, c, w)
                return
            compiled().add_tuple_rows(cols[None, :], feats, np.array([c]), np.array([float(w)]), self.tuples,
                                      tc.shape[-1], tf.shape[-1], _flat(tc), _flat(tf))

    def _count_sparse_tuples(self, p: str, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
        """The t-tuples of one event's values (and of its values with a feature last) into sparse tables."""
        t = self.tuples
        for part in row_chunks(len(cols), len(cols) ** (t - 1)):  # by first value, within the working set
            grid = np.ix_(cols[part], *([cols] * (t - 1)))
            getattr(self, p + "tuple_count").add((c, *grid), w)
            getattr(self, p + "tuple_feat").add((c, *grid[:-1], feats.reshape(grid[-1].shape)), w)

    def _count_selected_tuples(self, p: str, D, dfeats, yc, w, mask=None) -> None:
        """The kept t-tuples of rows ``D`` (of features ``dfeats``; ``mask``, where given, is ``D >= 0``) into
        the selected tables, in row order, in compiled code."""
        add_selected_tuples(self, p, D, dfeats, yc, w)

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
        self._check_sparse_room(len(u))
        self.blocks_to_sparse()  # expected pairs have no place in pair blocks
        if self.wants_observed:
            self.keep_observed()
        if self.journal is not None:
            self.journal.append(("expected", c, w, u, m, feats_u, J))
        self.version += 1
        self.class_count[c] += w
        self.value_count[c, u] += w * m
        starts = np.flatnonzero(np.r_[True, feats_u[1:] != feats_u[:-1]])
        fs = feats_u[starts]
        self.feat_count[c, fs] += w
        if self.pairs:
            add_pairs_expected(self.pair_count, self.pair_feat, c, u, fs, w * J, w * np.add.reduceat(J, starts, axis=1))

    def add_many(self, D, dfeats, G, gslots, yc, w=None, observed: bool = True) -> None:
        """Add a batch of encoded events (rows of ``D``, ``G`` as :meth:`encode_run` gives them).

        ``observed=False``: the rows are completions of one incomplete event
        (KDB's M-step), so they go to the counts and not to the observed-only
        twin (started here, if wanted and not yet kept, as in :meth:`add_expected`).
        """
        if w is None or np.all(np.asarray(w) >= 0):  # removing (negative weights) needs no room
            self._check_sparse_room(D.shape[1])
        if not observed and self.wants_observed:
            self.keep_observed()
        self.sync_pairs()
        if self.journal is not None:
            self.journal.append(("many", D, dfeats, G, gslots, yc, w, observed))
        n = len(yc)
        self.epoch += 1
        w = np.ones(n) if w is None else np.asarray(w, dtype=float)
        C = len(self.classes)
        self.class_count[:C] += np.bincount(yc, weights=w, minlength=C)
        if D.shape[1]:
            mask = D >= 0
            rr, jj = np.nonzero(mask)
            cc = yc[rr]
            for p in self._sets() if observed else ("",):
                np.add.at(getattr(self, p + "value_count"), (cc, D[rr, jj]), w[rr])
                np.add.at(getattr(self, p + "feat_count"), (cc, dfeats[jj]), w[rr])
                if self.pairs:
                    _add_pairs_many(getattr(self, p + "pair_count"), getattr(self, p + "pair_feat"),
                                    D, dfeats, yc, w, selected_cells(self, D.shape[1]))
                if self.tuples:
                    self._add_tuples_many(p, D, dfeats, yc, w, mask)
        self.add_gaussian_rows(G, gslots, yc, w)

    def _add_tuples_many(self, p, D, dfeats, yc, w, mask):
        t = self.tuples
        tuple_count, tuple_feat = getattr(self, p + "tuple_count"), getattr(self, p + "tuple_feat")
        if self.tuples_selected:
            self._count_selected_tuples(p, D, dfeats, yc, w, mask)
            return
        if isinstance(tuple_count, SparseTable):
            self._add_tuples_sparse(p, D, dfeats, yc, w, mask)
            return
        # dense tables: every ordered t-tuple of each row's observed values, in row order (as one at a time)
        compiled().add_tuple_rows(np.ascontiguousarray(D), dfeats, yc, w, t, tuple_count.shape[-1], tuple_feat.shape[-1],
                                  _flat(tuple_count), _flat(tuple_feat))

    def _add_tuples_sparse(self, p: str, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, w: np.ndarray,
                           mask: np.ndarray) -> None:
        """Add the t-tuples of a batch of encoded rows (see ``Adding.add_many``) to sparse tables.

        The tuples of positions that hold one value in every row (EM's completions of one event
        differ only where it was missing) are added once, with the rows' total weight; the
        others row by row, in chunks.
        """
        t = self.tuples
        if not len(D):
            return
        tables = (getattr(self, p + "tuple_count"), getattr(self, p + "tuple_feat"))
        one_class = bool((yc == yc[0]).all())
        const = one_class & (D == D[0]).all(0) & (D[0] >= 0)  # observed, and the same in every row
        everywhere = one_class & mask.all(0)  # observed in every row (the feature axis needs no more)
        k = D.shape[1]
        for part in row_chunks(k, k ** (t - 1)):  # the tuples by their first position, within the working set
            grid = np.indices((part.stop - part.start,) + (k,) * (t - 1)).reshape(t, -1)  # t-tuples of positions
            grid[0] += part.start
            done = []
            for table, fixed in zip(tables, (const[grid].all(0), const[grid[:-1]].all(0) & everywhere[grid[-1]])):
                g = grid[:, fixed]
                if len(g[0]):
                    last = D[0, g[-1]] if table is tables[0] else dfeats[g[-1]]
                    table.add((yc[0], *(D[0, g[a]] for a in range(t - 1)), last), float(w.sum()))
                done.append(fixed)
            for table, fixed in zip(tables, done):
                g = grid[:, ~fixed]
                for rows in row_chunks(len(D), len(g[0]), most=64):
                    Dm, ok = D[rows], np.logical_and.reduce([mask[rows][:, a] for a in g])
                    r, j = np.nonzero(ok)
                    last = Dm[r, g[-1][j]] if table is tables[0] else dfeats[g[-1][j]]
                    table.add((yc[rows][r], *(Dm[r, g[a][j]] for a in range(t - 1)), last), w[rows][r])
