"""Adding events to the counts: one event, its expected counts under EM, and batches.

Every count is additive. An event adds its weight to its class, to each
observed value, feature, pair and t-tuple of values, in every count set kept
(the counts and, from the first expected counts on, their observed-only twin).
"""

from __future__ import annotations

import numpy as np

from ._budget import scatter_add
from ._sparse import SparseTable
from ._tuple_candidates import selected_tuple_cells
from ._values import Encoded
from ._working import WORKING_CELLS, row_chunks

__all__ = ["Adding", "add_pairs_expected"]


def _flat(table: np.ndarray) -> np.ndarray:
    """A flat view of a (C-contiguous) count table, for adding at flat indices."""
    flat = table.reshape(-1)
    if not np.shares_memory(flat, table):
        raise ValueError("a count table must be C-contiguous")
    return flat


def _leading(feats: np.ndarray, width: int) -> int:
    """``len(feats)`` when ``feats`` are the features 0, 1, ..., in order (a complete event, a run's
    columns) and fit in ``width``, else 0: then an event adds to ``tuple_feat`` the first cells of
    each row of it that its values pick (a slice per row: 2.5x faster than an index per cell)."""
    k = len(feats)
    return k if k <= width and k and feats[0] == 0 and feats[-1] == k - 1 and np.array_equal(feats, np.arange(k)) else 0


def _whole(a: np.ndarray) -> bool:
    """Whether every number of ``a`` is a whole number or infinite (NaN is not; the caller bounds the sums)."""
    return bool(np.array_equal(a, np.trunc(a)))


def _exact_sums(w: np.ndarray, total: float) -> bool:
    """Whether a batch of weights ``w`` may be summed per cell in any order and added once: whole weights,
    and sums below 2^52 (each cell holds at most ``total``, the weight learned so far, and the batch adds at
    most its own), where sums of whole numbers are exact. The touched cells must be whole too (:func:`_whole`)."""
    return _whole(w) and total + float(np.abs(w).sum()) < 2.0**52


#: What one matrix product of a class's rows costs beyond its arithmetic (the numpy calls around it), and
#: what the product path costs once a run, in scattered adds (:func:`_product_pays`).
_PER_CLASS, _PER_RUN = 3_000, 6_000


def _product_pays(D: np.ndarray, yc: np.ndarray, t: int) -> bool:
    """Whether adding the t-way counts of the complete rows ``D`` as matrix products
    (:func:`_dense_tuple_add`) costs less than scattering their ``rows * k^t`` cells, in units of one
    scattered add: the path pays :data:`_PER_RUN`, each class present :data:`_PER_CLASS` and about half
    a unit a cell of its ``m^t`` block (checked and added), and each row a 25th of a unit a cell of it (the
    product's multiply-adds)."""
    rows, k = D.shape
    m = int(D.max()) + 1
    classes = len(np.unique(yc))
    return _PER_RUN + classes * _PER_CLASS + (classes / 2 + rows / 25) * float(m) ** t < rows * float(k) ** t


def _dense_tuple_add(tc, tc_shape, D, yc, w) -> bool:
    """Add complete rows of whole weights to the flat t-way table ``tc`` class by class as one matrix
    product each: over the values ``0 .. m - 1`` (``m`` past the highest value the rows hold), the sum of
    ``w x (x) ... (x) x`` over a class's rows (``x`` a row's values as 0/1) is that class's additions to its
    leading ``m x ... x m`` cells, added to them as one slice.

    Exact, and equal to adding row by row, when the weights and the counts of those slices are whole
    numbers whose sums stay below 2^52 (the caller bounds them): such sums are exact in any order. Returns
    False, having added nothing, when a count of the slices is not a whole number, a row holds a value
    twice, or the rows' products would not fit the working-set limit."""
    t, cv = len(tc_shape) - 1, tc_shape[-1]
    rows, k = D.shape
    m = int(D.max()) + 1
    if rows * m ** (t - 1) > WORKING_CELLS or m**t > WORKING_CELLS:
        return False
    order = np.argsort(yc, kind="stable")  # the rows class by class, each class's in their order
    ys = yc[order]
    classes, starts = np.unique(ys, return_index=True)
    X = np.zeros((rows, m))
    X[np.arange(rows)[:, None], D[order]] = 1.0
    if np.count_nonzero(X) != rows * k:
        return False  # a value twice in a row: its cells are not a product
    held = tc.reshape((tc_shape[0],) + (cv,) * t)[(slice(0, int(classes[-1]) + 1),) + (slice(0, m),) * t]  # a view
    if not _whole(held):
        return False
    XW = X * w[order, None]
    for c, lo, hi in zip(classes.tolist(), starts.tolist(), starts[1:].tolist() + [rows]):
        Xc = X[lo:hi]
        P = Xc
        for _ in range(t - 2):
            P = (P[:, :, None] * Xc[:, None, :]).reshape(hi - lo, -1)
        held[c] += (XW[lo:hi].T @ P).reshape((m,) * t)
    return True


def _add_tuple_rows(tc, tf, tc_shape, tf_shape, D, dfeats, yc, w, total: float = np.inf):
    """Add complete rows to the flat t-way tables in row order, as one event at a time adds them.

    ``tuple_count``: with whole weights and whole counts (sums of whole numbers are exact in any order)
    and a value space small beside the cells the rows add (:func:`_product_pays`), each class's rows by
    one matrix product (:func:`_dense_tuple_add`); else rows of equal weight (the usual run) by one
    ``np.add.at`` over a piece of rows (it adds in index order, so exactly as row by row; a third cheaper
    than a fancy-index add per row), else row by row (a row's k^t cells are distinct, so a fancy-index add
    is exact).
    ``tuple_feat``: where the columns are the features in order, a row adds its weight to the first
    k cells of each of its k^(t-1) rows of the table; with whole weights and whole counts the batch's
    additions to each row of the table are summed first and added once, else a slice per event."""
    t, cv, cf = len(tc_shape) - 1, tc_shape[-1], tf_shape[-1]
    rows, k = D.shape

    def heads_of(Dm, ym):  # (rows, k, ..., k): each row's flat (class, t - 1 values) prefixes
        head = ym.reshape((-1,) + (1,) * (t - 1))
        for a in range(t - 1):  # the first t - 1 values, broadcast over their own axis
            head = head * cv + Dm.reshape((-1,) + (1,) * a + (k,) + (1,) * (t - 2 - a))
        return head

    lead = _leading(dfeats, cf)
    tf_rows = tf.reshape(-1, cf)  # tuple_feat's rows: (class, t - 1 values) -> features
    exact = _exact_sums(w, total)
    if exact and t >= 2 and _product_pays(D, yc, t) and _dense_tuple_add(tc, tc_shape, D, yc, w):
        tc = None  # added
    if lead and exact:
        per_row = np.bincount(heads_of(D, yc).reshape(-1), weights=np.repeat(w, k ** (t - 1)), minlength=len(tf_rows))
        used = np.flatnonzero(per_row)
        touched = tf_rows[used, :lead]
        if _whole(touched):
            tf_rows[used, :lead] = touched + per_row[used, None]
            tf = None  # added
    if tc is None and tf is None:
        return
    for part in row_chunks(rows, k**t, most=16):
        Dm, weights = D[part], w[part].tolist()
        head = heads_of(Dm, yc[part])
        if tc is not None:
            cells = (head[..., None] * cv + Dm.reshape((-1,) + (1,) * (t - 1) + (k,))).reshape(len(Dm), -1)
            if len(set(weights)) == 1:
                np.add.at(tc, cells.reshape(-1), weights[0])
            else:
                for r, wr in enumerate(weights):
                    tc[cells[r]] += wr
        if tf is None:
            continue
        if lead:
            heads = head.reshape(len(Dm), -1)
            for r, wr in enumerate(weights):
                tf_rows[heads[r], :lead] += wr
        else:
            fcells = (head[..., None] * cf + dfeats.reshape((1,) * t + (k,))).reshape(len(Dm), -1)
            for r, wr in enumerate(weights):
                tf[fcells[r]] += wr


def _pair_cells(D, dfeats, yc, w, mask, pair_shape, feat_shape):
    """Flat indices into ``pair_count`` and ``pair_feat`` of every observed pair of each row, and their
    weights, in row-major order (row, first value, second value): as adding the rows one by one does.
    Complete rows (the vectorised runs) are indexed by broadcasting, 10x cheaper than gathering."""
    _, cv, cv2 = pair_shape
    cf = feat_shape[2]
    if mask.all():
        k = D.shape[1]
        head = yc[:, None, None] * cv + D[:, :, None]
        return ((head * cv2 + D[:, None, :]).ravel(), (head * cf + dfeats[None, None, :]).ravel(), np.repeat(w, k * k))
    r3, a3, b3 = np.nonzero(mask[:, :, None] & mask[:, None, :])
    head = yc[r3] * cv + D[r3, a3]
    return head * cv2 + D[r3, b3], head * cf + dfeats[b3], w[r3]


def _dense_pairs(pc, pf, D, dfeats, yc, w, total: float) -> bool:
    """Add complete rows of whole weights to dense pair tables at once, when sums are exact in any order
    (whole weights and counts below 2^52): ``pair_count`` by :func:`_dense_tuple_add` (t = 2), and, where the
    columns are the features in order, ``pair_feat`` by each (class, value) row's summed weight added to its
    first cells. Returns False, having added nothing, where that does not hold or would not pay."""
    k = D.shape[1]
    lead = _leading(dfeats, pf.shape[2])
    if (isinstance(pc, SparseTable) or not lead or pc.shape[1] != pc.shape[2] or not _exact_sums(w, total)
            or not _product_pays(D, yc, 2)):
        return False
    pf_rows = _flat(pf).reshape(-1, pf.shape[2])  # (class, value) -> features
    per_row = np.bincount((yc[:, None] * pf.shape[1] + D).ravel(), weights=np.repeat(w, k), minlength=len(pf_rows))
    used = np.flatnonzero(per_row)
    touched = pf_rows[used, :lead]
    if not _whole(touched) or not _dense_tuple_add(_flat(pc), pc.shape, D, yc, w):
        return False
    pf_rows[used, :lead] = touched + per_row[used, None]
    return True


def _add_pairs_many(pc, pf, D, dfeats, yc, w, mask, cells: dict, total: float = np.inf) -> None:
    """Add the observed pairs of the rows of ``D`` to ``pair_count`` and ``pair_feat``: complete rows of
    whole weights at once (:func:`_dense_pairs`, ``total`` the weight learned so far, which bounds every
    count), else in pieces of rows whose index arrays stay within the working-set limit
    (:func:`row_chunks`); ``cells`` keeps the index arrays of a batch that fits in one piece, for the next
    count set (same shapes)."""
    if D.shape[1] and mask.all() and _dense_pairs(pc, pf, D, dfeats, yc, w, total):
        return
    parts = row_chunks(len(D), D.shape[1] ** 2)
    for part in parts:
        got = cells.get((pc.shape, pf.shape)) if len(parts) == 1 else None
        if got is None:
            got = _pair_cells(D[part], dfeats, yc[part], w[part], mask[part], pc.shape, pf.shape)
            if len(parts) == 1:
                cells[pc.shape, pf.shape] = got
        pidx, fidx, pw = got
        if isinstance(pc, SparseTable):  # the same flat keys: both number the cells C-ordered over the shape
            pc.add_flat(pidx, pw)
            pf.add_flat(fidx, pw)
        else:
            np.add.at(_flat(pc), pidx, pw)
            np.add.at(_flat(pf), fidx, pw)


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

    #: a list while a learner records what one event adds (its receipt, see :mod:`stream_nb.stats._removing`)
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

    def counted_one(self, c: int, w: float) -> None:
        """A kernel has counted the event just encoded for learning (class ``c``, weight ``w``) into these
        arrays: a second layer counts it in its own (here, there is none)."""

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
        if self.pairs and self.pairs_selected:  # the candidate pairs alone (stats/_candidates.py)
            r, q = np.nonzero(self.pair_mask(feats))
            getattr(self, p + "pair_count").add((c, cols[r], cols[q]), w)
            getattr(self, p + "pair_feat").add((c, cols[r], feats[q]), w)
        elif self.pairs and self.pairs_sparse:  # the event's pairs are distinct cells: as the dense += below
            getattr(self, p + "pair_count").add((c, cols[:, None], cols[None, :]), w)
            getattr(self, p + "pair_feat").add((c, cols[:, None], feats[None, :]), w)
        elif self.pairs:
            rows = cols[:, None]
            getattr(self, p + "pair_count")[c][rows, cols] += w
            getattr(self, p + "pair_feat")[c][rows, feats] += w
        if self.tuples and self.tuples_selected:  # the candidate parents' tuples alone (_tuple_candidates.py)
            self._count_selected_tuples(p, cols[None, :], feats, np.array([c]), np.array([float(w)]))
            return
        if self.tuples:
            # flat indices into the class's contiguous block: 3x faster than np.ix_
            if isinstance(getattr(self, p + "tuple_count"), SparseTable):
                self._count_sparse_tuples(p, cols, feats, c, w)
                return
            tc, tf = getattr(self, p + "tuple_count")[c], getattr(self, p + "tuple_feat")[c]
            idx = cols
            for _ in range(self.tuples - 2):
                idx = (idx[:, None] * tc.shape[-1] + cols[None, :]).ravel()
            head = idx
            idx = (head[:, None] * tc.shape[-1] + cols[None, :]).ravel()
            tc.reshape(-1)[idx] += w
            lead = _leading(feats, tf.shape[-1])
            if lead:
                tf.reshape(-1, tf.shape[-1])[head, :lead] += w
            else:
                tf.reshape(-1)[(head[:, None] * tf.shape[-1] + feats[None, :]).ravel()] += w

    def _count_sparse_tuples(self, p: str, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
        """The t-tuples of one event's values (and of its values with a feature last) into sparse tables."""
        t = self.tuples
        for part in row_chunks(len(cols), len(cols) ** (t - 1)):  # by first value, within the working set
            grid = np.ix_(cols[part], *([cols] * (t - 1)))
            getattr(self, p + "tuple_count").add((c, *grid), w)
            getattr(self, p + "tuple_feat").add((c, *grid[:-1], feats.reshape(grid[-1].shape)), w)

    def _count_selected_tuples(self, p: str, D, dfeats, yc, w, mask=None) -> None:
        """The kept t-tuples of rows ``D`` (of features ``dfeats``) into the selected tables, in row order."""
        for part in row_chunks(len(D), len(dfeats) * max(self.tuple_lists().shape[1], 1) ** (self.tuples - 1), most=64):
            Dm = D[part]
            r, cells, fcells = selected_tuple_cells(self, Dm, dfeats, Dm >= 0 if mask is None else mask[part])
            if len(r):
                ym, wm = yc[part][r], w[part][r]
                getattr(self, p + "tuple_count").add_kept((ym, *cells), wm)
                getattr(self, p + "tuple_feat").add_kept((ym, *fcells), wm)

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

    def add_many(self, D, dfeats, G, gslots, yc, w=None, observed: bool = True, pair_cells: dict | None = None) -> None:
        """Add a batch of encoded events (see :meth:`encode_frame`).

        ``observed=False``: the rows are completions of one incomplete event
        (KDB's M-step), so they go to the counts and not to the observed-only
        twin (started here, if wanted and not yet kept, as in :meth:`add_expected`).
        ``pair_cells``: a dict that keeps the flat pair cells of the batch (per table shape) for another
        store adding the same rows (a two-layer store's fine layer, when its columns are these).
        """
        if w is None or np.all(np.asarray(w) >= 0):  # removing (negative weights) needs no room
            self._check_sparse_room(D.shape[1])
        if not observed and self.wants_observed:
            self.keep_observed()
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
            # per pair table shape (every count set has the same): the flat cells the rows add to
            cells = {} if pair_cells is None else pair_cells
            for p in self._sets() if observed else ("",):
                np.add.at(getattr(self, p + "value_count"), (cc, D[rr, jj]), w[rr])
                np.add.at(getattr(self, p + "feat_count"), (cc, dfeats[jj]), w[rr])
                if self.pairs:
                    _add_pairs_many(getattr(self, p + "pair_count"), getattr(self, p + "pair_feat"),
                                    D, dfeats, yc, w, mask, cells, total=float(np.abs(self.class_count).sum()))
                if self.tuples:
                    self._add_tuples_many(p, D, dfeats, yc, w, mask)
        self.add_gaussian_rows(G, gslots, yc, w)

    def _add_tuples_many(self, p, D, dfeats, yc, w, mask):
        t = self.tuples
        tuple_count, tuple_feat = getattr(self, p + "tuple_count"), getattr(self, p + "tuple_feat")
        k = D.shape[1]
        if self.tuples_selected:
            self._count_selected_tuples(p, D, dfeats, yc, w, mask)
            return
        if isinstance(tuple_count, SparseTable):
            self._add_tuples_sparse(p, D, dfeats, yc, w, mask)
            return
        if mask.all() and k:  # complete rows (the vectorised runs): each row's cells are distinct, as in _count
            _add_tuple_rows(_flat(tuple_count), _flat(tuple_feat), tuple_count.shape, tuple_feat.shape, D, dfeats, yc, w,
                            total=float(np.abs(self.class_count).sum()))
            return
        grid = np.indices((k,) * t).reshape(t, -1)  # every t-tuple of column positions
        for lo in range(0, len(D), 64):
            Dm, mk = D[lo : lo + 64], mask[lo : lo + 64]
            ok = np.logical_and.reduce([mk[:, g] for g in grid])  # (rows, k^t)
            r, j = np.nonzero(ok)
            cols = tuple(Dm[r, grid[a][j]] for a in range(t))
            ww = w[lo : lo + 64][r]
            scatter_add(tuple_count, (yc[lo : lo + 64][r],) + cols, ww)
            scatter_add(tuple_feat, (yc[lo : lo + 64][r],) + cols[:-1] + (dfeats[grid[-1][j]],), ww)
