"""Vectorised runs of a two-layer store (:class:`~stream_nb.stats.TwoLayerStats`): each run encoded in both.

The models score a run on the coarse layer's columns; the fine layer, whose
cells the coarse counts are sums of, learns the same rows in its own columns.
A labeled event with a categorical value never seen stays in its run when both
layers hold the value without growing a table: each layer registers it, in the
order one event at a time would, once the run is learned
(:meth:`register_run_values`).
"""

from __future__ import annotations

import numpy as np

from ...kernels import compiled
from ..values import BINNED

__all__ = ["FineRuns"]

#: Empty pair tables: a fine layer whose pair counts are its coarse layer's counts no pairs (count_rows).
_NO_PAIRS = np.zeros((0, 0, 0))


class FineRuns:
    """The runs of a :class:`~stream_nb.stats.TwoLayerStats` (a part of it, not used alone): it provides
    ``fine``, ``learn_limit()``, ``_fine_changed()`` and the ``_pending_rows``/``_pending_labeled`` the
    fine rows of a run wait in until :meth:`add_many` learns them."""

    #: Whether the last run's fine rows are its coarse rows (:meth:`_mirrored` when it was encoded).
    _run_mirrored = False

    def encode_run(self, xs: list, ys: list, start: int, complete: bool, limit: int, unseen: bool = False,
                   new_values: bool = False):
        limit = min(limit, self.learn_limit())
        self.fine.run_new = None
        stop, D, G, yc = super().encode_run(xs, ys, start, complete, limit, unseen, new_values)
        self._pending_rows = None
        self._run_mirrored = False
        if stop > start:  # (a run of one: a compiled kernel takes it)
            if self._mirrored():  # the fine layer would encode the run as this one did
                fD, fG, fyc = D, G, yc
                self._run_mirrored = True
            else:
                fstop, fD, fG, fyc = self.fine.encode_run(xs, ys, start, complete, stop - start, unseen, new_values)
                if fstop < stop:  # a fine bin never seen yet (or no room for a new value): the run stops there
                    stop, D, G, yc = fstop, D[: fstop - start], G[: fstop - start], yc[: fstop - start]
            keep = fyc >= 0
            self._pending_rows = (fD[keep], np.arange(fD.shape[1]), fG[keep], np.arange(fG.shape[1]))
            self._pending_labeled = np.cumsum(keep)  # labeled rows up to each row of the run
        return stop, D, G, yc

    def _mirrored(self) -> bool:
        """Whether the two layers are one: no feature is binned (a categorical stream) and both number the
        same features, values and classes alike, so an event's columns are the same in both."""
        fine = self.fine
        return (BINNED not in self.kinds and fine.features == self.features and fine.kinds == self.kinds
                and fine.value_keys == self.value_keys and fine.classes == self.classes)

    def cut_run(self, n: int) -> None:
        if self._pending_rows is None:
            return
        m = int(self._pending_labeled[n - 1]) if n > 0 else 0
        fD, fdfeats, fG, fgslots = self._pending_rows
        self._pending_rows = (fD[:m], fdfeats, fG[:m], fgslots)

    def add_fine_run(self, yc: np.ndarray, w=None, rows: tuple | None = None) -> None:
        """Count in the fine layer the rows set aside for it (by :meth:`encode_run`),
        of classes ``yc`` and weights ``w``: :meth:`add_many`'s second half, and all that is left to do
        once a compiled kernel counted a run in this layer."""
        if rows is not None:  # one event's fine columns and features (Stats.counted_one), no Gaussian
            fD, fdfeats, fG, fgslots = rows[0], rows[1], np.empty((1, 0)), rows[1][:0]
        else:
            fD, fdfeats, fG, fgslots = self._pending_rows
            self._pending_rows = None
        fine = self.fine
        shared = self.shared_pairs  # (its pair counts are this layer's, which the kernel counted: no pairs)
        if (w is None and self.journal is None and (fine.pairs or shared) and not fine.tuples
                and not fine.pairs_sparse and not fine.keeps_observed and not fG.shape[1]):
            # what fine.add_many adds, row by row in compiled code (whole weights: exact in any order), with
            # no matrix product for a BLAS thread to spin on
            pairs = (_NO_PAIRS, _NO_PAIRS) if shared else (fine.pair_count, fine.pair_feat)
            compiled().count_rows(fD, fdfeats, yc, True, fine.class_count, fine.value_count, fine.feat_count, *pairs)
            fine.epoch += rows is None  # (one event: as Stats.add, its version alone)
        else:
            self._journal_fine(fine.add_many, fD, fdfeats, fG, fgslots, yc, w)
        self.n_events += len(yc) if rows is None else 0

    def registers_in_runs(self) -> bool:
        # both layers hold the new values: neither keeps a t-way table or sparse pair tables
        fine = self.fine
        return not (self.tuples or fine.tuples or self.pairs_sparse or fine.pairs_sparse)

    def _run_value_room(self) -> int:
        return min(super()._run_value_room(), self.fine._run_value_room())

    def register_run_values(self, n: int) -> None:
        """Register the new values of the run's first ``n`` rows in both layers, each in its order (a
        mirrored run's fine layer takes the coarse layer's values, in the same columns)."""
        new = self.run_new
        fine = self.fine
        if self._run_mirrored:
            fine.run_new = new
        registered = fine.run_new is not None
        fine.register_run_values(n)
        super().register_run_values(n)
        if registered:
            self._fine_changed()
