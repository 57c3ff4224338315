"""Models with a structure (TAN's tree, SPODE's super-parent, KDB's parents) rebuilt from running counts."""

from __future__ import annotations

import abc

from .._checks import check_integer
from ._base import BayesClassifier

__all__ = ["StructuredClassifier"]


class StructuredClassifier(BayesClassifier):
    """A classifier whose structure is rebuilt from the running counts every
    ``rebuild_every`` learned events and on :meth:`rebuild`.

    A subclass provides, beyond :class:`~stream_nb.learners.BayesClassifier`'s hooks:

    - :meth:`rebuild`: choose the structure from the current counts, then call
      :meth:`_rebuilt`;
    - a ``rebuild_every`` parameter, checked by calling :meth:`_setup_rebuilds`
      from ``__init__``.

    Learning then rebuilds every ``rebuild_every`` events (a batch stops at the
    next rebuild, so ``learn_many`` rebuilds where ``learn_one`` would), and a
    merge rebuilds from the merged counts when the model had been built (unless
    ``_rebuild_after_merge`` is False).
    """

    #: Rebuild after a merge (when the model had been built), from the merged counts.
    _rebuild_after_merge = True

    def _setup_rebuilds(self) -> None:
        """Check ``rebuild_every`` and start counting learned events toward the next rebuild."""
        check_integer("rebuild_every", self.rebuild_every, minimum=0)
        self._since_rebuild = 0
        self.n_rebuilds = 0

    @abc.abstractmethod
    def rebuild(self) -> None:
        """Rebuild the structure now from the current counts (then call :meth:`_rebuilt`)."""

    def _rebuilt(self) -> None:
        """Record a rebuild: the count toward the next one starts again."""
        self._since_rebuild = 0
        self.n_rebuilds += 1

    def _learned(self, n: int) -> None:
        self._since_rebuild += n
        if self.rebuild_every and self._since_rebuild >= self.rebuild_every:
            self.rebuild()

    def _batch_limit(self) -> int:
        # a batch stops at the next rebuild, so that learn_many rebuilds where learn_one would
        return self.rebuild_every - self._since_rebuild if self.rebuild_every else 1 << 62

    def _merged(self) -> None:
        if self._rebuild_after_merge and self.n_rebuilds:
            self.rebuild()

    def _check_loaded(self) -> None:
        super()._check_loaded()
        since, n = self._since_rebuild, self.n_rebuilds
        if isinstance(since, bool) or not isinstance(since, int) or since < 0 or (
                self.rebuild_every and since > self.rebuild_every):
            raise ValueError(f"since_rebuild: expected an integer from 0 to rebuild_every={self.rebuild_every}, "
                             f"got {since!r:.60}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n_rebuilds: expected an integer >= 0, got {n!r:.60}")
