"""The compiled path of AODE and SPODE (:mod:`stream_nb.kernels._aode`): what both pass it, and the counts
kept beside the ones it reads and learns."""

from __future__ import annotations

import numpy as np

from ..kernels import compiled

__all__ = ["EVERY_CHILD", "NO_LOSS", "NO_MORE", "NO_TABLE", "NO_WEIGHTS", "UNLABELED", "OneDependenceKernel"]

#: ``more`` of a block that registers no value; the labels of a block of one event to predict; no loss matrix;
#: no second count set (:mod:`stream_nb.kernels._one`).
NO_MORE = np.zeros((0, 0), dtype=np.int64)
NO_LOSS = np.zeros((0, 0))
UNLABELED = np.full(1, -1, dtype=np.int64)
NO_TABLE = np.zeros(0, dtype=np.int64)
#: No decay: every row weighs 1, scored with the model's smoothing.
NO_WEIGHTS = np.zeros(0)
_NO_DENS = np.zeros((0, 0))
#: Every attribute a child of every super-parent (AODE's ``SuperParents(children=...)`` before its first choice).
EVERY_CHILD = np.zeros((0, 0), dtype=np.int8)
_ALL = np.zeros(0, dtype=bool)


class OneDependenceKernel:
    """A model whose ``_kernel_block`` calls an :mod:`~stream_nb.kernels._aode` kernel (list it before its
    base class); with ``_kernel_arguments`` and ``_kernel_learned``."""

    #: (K, K) int8: the children each super-parent's SPODE conditions on it (AODE's choice; empty: every one).
    _children = EVERY_CHILD

    def _kernel_dense(self) -> bool:
        """Whether the block kernels can read the store's pair tables (dense ones; sparse ones are read by
        :meth:`_sparse_jll` and :meth:`_sparse_terms`)."""
        return not self._stats.pairs_sparse

    def _sparse_jll(self, D: np.ndarray, dfeats: np.ndarray) -> np.ndarray:
        """(rows, C) joint log-likelihoods of AODE over sparse (or selected) pair tables, read in compiled
        code (:func:`~stream_nb.kernels._sparse_scores.aode_sparse`): the parents a selection keeps alone."""
        s = self._stats
        pc, pf = s.pair_count, s.pair_feat
        selected, allowed = self._sparse_parents()
        out = np.empty((len(D), s.n_classes))
        compiled().aode_sparse(np.ascontiguousarray(D, dtype=np.int64), np.asarray(dfeats, dtype=np.int64), s.n_classes,
                               float(self._alpha), float(self.m * self._inflation), selected, allowed,
                               self._children_in_use(),
                               s.class_count, s.value_count, s.feat_count, s.n_values, np.array(pc.shape),
                               np.array(pf.shape), *pc.arrays(), *pf.arrays(), pc.rows_held(), pf.rows_held(), True, out)
        return out

    def _children_in_use(self) -> np.ndarray:
        """(K, K) int8: the children each super-parent's SPODE reads given it, as the kernels take them."""
        return self._children

    def _sparse_terms(self, cols: np.ndarray, feats: np.ndarray, only: np.ndarray | None = None) -> np.ndarray:
        """(C, k): the SPODE rooted at each observed value of one event over sparse (or selected) pair tables,
        0 for a feature whose pairs a selection does not count (with ``only``, (F,) booleans: for any feature it
        does not give), read in compiled code (:func:`~stream_nb.kernels._sparse_scores.spode_terms_sparse`)."""
        s = self._stats
        pc, pf = s.pair_count, s.pair_feat
        terms = np.empty((s.n_classes, len(cols)))
        selected = only is not None or s.pairs_selected
        allowed = only if only is not None else s.pair_allowed if s.pairs_selected else _ALL
        compiled().spode_terms_sparse(np.ascontiguousarray(cols, dtype=np.int64), np.asarray(feats, dtype=np.int64),
                                      s.n_classes, float(self._alpha), selected, allowed, s.value_count, s.feat_count,
                                      s.n_values, np.array(pc.shape), np.array(pf.shape), *pc.arrays(), *pf.arrays(),
                                      pc.rows_held(), pf.rows_held(), terms)
        return terms

    def _sparse_parents(self) -> tuple[bool, np.ndarray]:
        """``(selected, allowed)``: whether only some features may be super-parents, and (with ``selected``)
        whether each may; here those whose pairs a pair selection counts (``Stats.pair_allowed``)."""
        s = self._stats
        return s.pairs_selected, (s.pair_allowed if s.pairs_selected else _ALL)

    def _kernel_arguments(self, D: np.ndarray, dfeats: np.ndarray, learn: bool, decay=None) -> tuple:
        """The store's arrays the kernel reads, then the kept denominators and whether they hold: a
        learned block whose columns are every feature in order keeps them (rebuilt when the counts changed
        outside a kernel), a block only scored reads them where they hold still (one event predicted after
        one learned), any other block, and a decayed one (whose smoothing changes every row), reads the
        counts alone."""
        s = self._stats
        schema = s.schema  # (its names read once: the one-event path comes here twice an event)
        F = len(schema.features)
        cached = decay is None and D.shape[1] == F and self._in_order(dfeats, F)
        dens = _NO_DENS
        if cached:
            key = (schema.epoch, s.version, s.pair_feat.shape, F, self._alpha)
            held = self.__dict__.get("_kdens")
            if held is not None and held[0] == key:
                dens = held[1]
            elif learn:
                C, V = s.n_classes, s.pair_count.shape[1]
                dens = np.ones((C, V))
                compiled().den_table(s.pair_feat, schema.value_feature, self._alpha * schema.n_values[:F].astype(float),
                                     C, V, dens)
                self._kdens = [key, dens]
            else:
                cached = False  # not worth making for a block only scored
        return (s.class_count, s.value_count, s.feat_count, schema.n_values, s.pair_count, s.pair_feat,
                schema.value_feature, dens, cached)

    def _dens_hold(self, dfeats: np.ndarray, alpha: float):
        """The kept denominators if they hold for a block of columns ``dfeats`` only scored (as
        :meth:`_kernel_arguments` finds them), else None; ``alpha``: the model's ``_alpha``."""
        held = self.__dict__.get("_kdens")
        if held is None:
            return None
        s = self._stats
        schema = s.schema
        F = len(schema.features)
        if held[0] != (schema.epoch, s.version, s.pair_feat.shape, F, alpha):
            return None
        return held[1] if len(dfeats) == F and self._in_order(dfeats, F) else None

    def _in_order(self, dfeats: np.ndarray, F: int) -> bool:
        """Whether ``dfeats`` is every feature in order: remembered for the last array asked about (the
        events of one shape share theirs)."""
        held = self.__dict__.get("_kfeats")
        if held is None or held[0] is not dfeats or held[1] != F:
            held = self._kfeats = (dfeats, F, len(dfeats) == F and np.array_equal(dfeats, np.arange(F)))
        return held[2]

    def _one_class(self, c: int) -> np.ndarray:
        """``[c]`` as the labels of a block of one learned event: one array kept for every event (the kernels
        only read it)."""
        held = self.__dict__.get("_yc_one")
        if held is None:
            held = self._yc_one = np.empty(1, dtype=np.int64)
        held[0] = c
        return held

    def _kernel_learned(self, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, cached: bool, decay=None) -> None:
        """After a kernel counted a block's labelled rows (with ``decay``'s weights): count them in the
        observed-only twin too, and mark the counts changed (``Stats.add_many`` does both), the denominators
        kept still holding."""
        s = self._stats
        if not (yc[0] >= 0 if len(yc) == 1 else (yc >= 0).any()):
            return
        if s.keeps_observed:  # complete rows: their observed values are all they hold
            compiled().weigh_rows(D, dfeats, yc, NO_WEIGHTS if decay is None else decay.weight[: len(yc)], False,
                                  s.class_count, s.obs_value_count, s.obs_feat_count, s.obs_pair_count,
                                  s.obs_pair_feat)
        s.mark_counted(len(yc) > 1)
        held = self.__dict__.get("_kdens")
        if cached and held is not None:
            held[0] = (s.epoch, s.version, s.pair_feat.shape, len(s.features), self._alpha)
