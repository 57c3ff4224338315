"""KDB's compiled path: which events its kernel scores, and the call (see :mod:`stream_nb.kernels._kdb`)."""

from __future__ import annotations

import weakref

import numpy as np

from ..kernels import NO_DETECTOR, compiled
from ._decision import normalise

__all__ = ["KDBKernel"]

_NO_MORE = np.zeros((0, 0), dtype=np.int64)
_NO_TABLE = np.zeros(0)
_NO_LOSS = np.zeros((0, 0))
_NONE = np.zeros(0)  # no decay: every row weighs 1, scored with the model's smoothing
# what the sparse kernel is given of what it does not read: the candidate parents and cells held before the
# store's room check, the dense pair tables beside pair blocks, the blocks beside dense tables
_NO_LISTS = np.zeros((0, 0), dtype=np.int64)
_NO_HELD = np.zeros(2, dtype=np.int64)
_NO_PAIRS = np.zeros((0, 0, 0))
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_BLOCKS = (_NO_INDEX, _NO_INDEX, _NO_INDEX, _NO_TABLE, np.zeros((0, 0)))
_NO_PRIORS = np.zeros((0, 0))
_NO_KEPT = np.zeros(0, dtype=np.int64)
# the packed t = 3 cells a store's last block left (kdb_block's keptU, kept), with what vouches that its
# t-way table still holds them: the store's (epoch, version) after the block and the table itself. Beside
# the store, not in it: never copied, pickled or merged, and gone with the store.
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class KDBKernel:
    """The compiled kernel of a :class:`~stream_nb.KDB` (a part of it, not used alone): it provides
    ``_parents``, ``_dropped``, ``k``, ``_sync_parents()`` and the store; list it before the model's base classes."""

    #: :meth:`_parent_columns`' cache (the structure, the features, their parents' columns), None until first made.
    _pcols: tuple | None = None

    def _parent_columns(self, dfeats: np.ndarray):
        """``(par, npar)``: for each feature of ``dfeats``, the positions in ``dfeats`` of its parents
        (``par[j, :npar[j]]``; -1 for a parent not among ``dfeats``; ``npar[j] = -1``: a feature the
        selection left out, not scored), cached for the structure and ``dfeats``."""
        cached = self._pcols
        if cached is not None and cached[0] is self._parents and cached[1] == dfeats.tobytes():
            return cached[2]
        pos = {f: j for j, f in enumerate(dfeats.tolist())}
        par = np.full((len(dfeats), max(self.k, 1)), -1, dtype=np.int64)
        npar = np.zeros(len(dfeats), dtype=np.int64)
        for j, f in enumerate(dfeats.tolist()):
            npar[j] = len(pa := self._parents.get(f, ()))
            par[j, : len(pa)] = [pos.get(p, -1) for p in pa]
            if f in self._dropped:
                npar[j] = -1  # left out of the product by the selection (still counted)
        self._pcols = (self._parents, dfeats.tobytes(), (par, npar))
        return par, npar

    _kernel_modules = ("_kdb", "_kdb_sparse")

    def _kernel_block(self, D, dfeats, G, gslots, yc, more, out, learn: bool, joint: bool = False,
                      decay=None) -> int:
        """Score each row of an encoded block into ``out`` (log posteriors; with ``joint``, log P(c, x)) and,
        with ``learn``, count each labelled row after scoring it, feeding the drift detector first; return the
        rows done (:func:`~stream_nb.kernels._kdb.kdb_block`): every observed attribute's parents observed
        (:meth:`_kernel_takes`). ``decay``: the rows' weights and smoothing
        (:func:`~stream_nb.learners._decay_runs.decay_run`)."""
        self._sync_parents()
        s = self._stats
        if s.tuples_sparse:  # (the sparse kernel takes no decay nor detector: see _kernel_ready)
            return self._sparse_block(D, dfeats, G, gslots, yc, out, learn, joint)
        watch = self._kernel_detector() if learn else NO_DETECTOR  # fed the error of each row before its count
        loss = _NO_LOSS if self._decision is None or not watch[0] else np.ascontiguousarray(
            self._decision.matrix(s.classes))
        weights, alphas = (_NONE, _NONE) if decay is None else (decay.weight, self._alpha_given * decay.inflation)
        par, npar = self._parent_columns(dfeats)
        t = s.tuples
        twin = s.keeps_observed
        o = "obs_" if twin else ""
        tc = tf = otc = otf = _NO_TABLE
        V = Ft = 0
        if t:
            tc, tf = s.tuple_count.reshape(-1), s.tuple_feat.reshape(-1)
            otc, otf = getattr(s, o + "tuple_count").reshape(-1), getattr(s, o + "tuple_feat").reshape(-1)
            V, Ft = s.tuple_count.shape[1], s.tuple_feat.shape[-1]
        keptU, kept = _NO_KEPT, _NO_TABLE
        if t == 3 and learn and not twin and len(D) > 1 and s.count_layer() is s:  # (not for one event a call)
            # the packed cells of the store's last block, if nothing has written to its table since: every
            # writer of the counts moves the store's version or epoch, and a table replaced is another object
            # (one layer of counts: a two-layer store derives its table from the fine layer's)
            held = _KEPT.get(s)
            if held is not None and held[0] == (s.epoch, s.version) and held[1]() is s.tuple_count:
                keptU, kept = held[2], held[3]
            else:
                keptU = np.full(V + 1, -1, dtype=np.int64)
        done, cells = compiled().kdb_block(
            D, dfeats, par, npar, _NO_MORE if more is None else more, G, gslots, yc, weights, alphas, learn,
            s.n_classes, float(self._alpha), float(self._var_smoothing), t, V, Ft, s.class_count, s.value_count,
            s.feat_count, s.pair_count, s.pair_feat, tc, tf, s.n_values, twin, getattr(s, o + "value_count"), getattr(s, o + "feat_count"),
            getattr(s, o + "pair_count"), getattr(s, o + "pair_feat"), otc, otf, s.g_n, s.g_mean, s.g_m2, out, joint,
            loss, *watch, keptU, kept)
        if learn and (yc[:done] >= 0).any():
            s.mark_counted(len(yc) > 1)  # counts changed in place, as Stats.add or add_many marks them
        if len(keptU):
            if keptU[0] >= 0:
                _KEPT[s] = ((s.epoch, s.version), weakref.ref(s.tuple_count), keptU, cells)
            else:
                _KEPT.pop(s, None)
        return done

    def _sparse_block(self, D, dfeats, G, gslots, yc, out, learn: bool, joint: bool) -> int:
        """:meth:`_kernel_block` over sparse t-way tables (:func:`~stream_nb.kernels._kdb_sparse.kdb_block_sparse`),
        learning (``learn``) into those of candidate parents, beside dense pair tables or pair blocks.

        The kernel stops at a row to count, once scored, where the one-event way would act first: the first
        labelled row, and any row that could take a t-way table past half its slots. The store then makes the
        room check it makes before each event it adds (which may narrow the candidates, and so the structure)
        and gives the tables room (:meth:`~stream_nb.stats.Stats.tuple_run_room`), and the kernel goes on from
        that row: the same scores and counts as one event at a time."""
        s = self._stats
        C, t, blocks = s.n_classes, s.tuples, s.pairs_blocks
        # the rows' joint log-likelihoods, normalised here in numpy, as one event's prediction is (numba's exp
        # and log and numpy's differ in the last digit of some values): the same log posteriors either way
        priors = _NO_PRIORS if joint else np.empty((len(D), C))
        D = np.ascontiguousarray(D, dtype=np.int64)
        R, r, first, checked = len(D), 0, 0, False
        lists, room, tc, tf, held = _NO_LISTS, 0, s.tuple_count, s.tuple_feat, _NO_HELD
        while True:
            if checked:
                lists, room, tc, tf, held = s.tuple_run_room(D.shape[1], dfeats)
                self._sync_parents()
            par, npar = self._parent_columns(dfeats)
            pc, pf = (s.pair_count, s.pair_feat) if learn and not blocks else (_NO_PAIRS, _NO_PAIRS)
            (ck, cv), (fk, fv) = tc.arrays(), tf.arrays()
            done = compiled().kdb_block_sparse(
                D[r:], dfeats, par, npar, G[r:], gslots, yc[r:], first, checked, learn, C, float(self._alpha),
                float(self._var_smoothing), s.class_count, s.value_count, s.feat_count, s.n_values, t,
                np.array(tc.shape, dtype=np.int64), np.array(tf.shape, dtype=np.int64), ck, cv, fk, fv, lists, held,
                room, blocks, pc, pf, *(s.pair_count.arrays() if learn and blocks else _NO_BLOCKS), s.g_n, s.g_mean,
                s.g_m2, out[r:], True, priors[r:])
            if checked:
                s.tuple_run_held(held)
            r += done
            if r == R or not learn:
                break
            first, checked = 1, True  # row r scored and not counted: the store looks at its room first
        if not joint:
            out[:r] = normalise(out[:r], priors[:r])
        if learn and (yc[:r] >= 0).any():
            s.mark_counted(len(yc) > 1)  # counts changed in place, as Stats.add or add_many marks them
        return r

    def _sparse_runs(self) -> bool:
        """Whether the sparse kernel may learn runs now (:meth:`_kernel_ready`): t-way tables of candidate
        parents (a store with a tuple rule: no forgetting, no drift detector), one count set (no observed-only
        twin, no second layer), dense pair tables or pair blocks, no receipt recording."""
        s = self._stats
        return (s.tuples >= 3 and s.tuple_rule and s.tuples_selected and not s.pairs_sparse and not s.keeps_observed
                and s.count_layer() is s and s.journal is None and not self._kernel_detector()[0])

    def _kernel_ready(self) -> bool:
        """The kernel's condition (:meth:`~stream_nb.learners._runs.VectorisedRuns._kernel_ready`), asked of the
        pair layout as it stands (pair blocks grown to the columns, or sparse past the budget, here, never while a
        kernel reads them); over sparse t-way tables, :meth:`_sparse_runs`."""
        s = self._stats
        s.sync_pairs()
        return self._sparse_runs() if s.tuples_sparse else super()._kernel_ready()

    def _kernel_takes(self, D: np.ndarray, dfeats: np.ndarray) -> np.ndarray:
        """Per row of ``D``: whether the kernel scores it (every observed attribute's parents observed; dense
        t-way tables, or sparse ones, which the sparse kernel reads whatever the pair tables are), else the
        enumeration of :meth:`_marginal_jll` sums the missing parents out."""
        s = self._stats
        if not s.n_classes or not (s.tuples_sparse and s.tuples >= 3) and (s.tuples_sparse or s.pairs_sparse):
            return np.zeros(len(D), dtype=bool)
        par, npar = self._parent_columns(dfeats)
        has = npar[:, None] > np.arange(par.shape[1])[None, :]  # (k, parents)
        P = np.where(has & (par >= 0), D[:, np.maximum(par, 0)], np.where(has, -1, 0))  # (rows, k, parents)
        return ~((D >= 0)[:, :, None] & (P < 0)).any((1, 2))
