"""Models with a structure (TAN's tree, SPODE's super-parent, KDB's parents) rebuilt from running counts."""

from __future__ import annotations

import abc

from .._checks import is_integer

from ._base import BayesClassifier
from ._structure import dependence_shown

__all__ = ["StructuredClassifier"]


class StructuredClassifier(BayesClassifier):
    """A classifier whose structure is rebuilt from the running counts, on a schedule and on :meth:`rebuild`.

    Early rebuilds come after ``warmup`` learned events and each time the count doubles below
    ``rebuild_every``, then one every ``rebuild_every`` events (:meth:`rebuild_interval`); an early one
    takes place only when the counts show a dependence (the ``_early_rule`` of
    :func:`~stream_nb.learners._structure.dependence_shown`, ``"g"`` or ``"bic"``). A batch stops at the
    next rebuild, and a merge rebuilds from the merged counts (unless ``_rebuild_after_merge`` is False).
    A subclass gives :meth:`rebuild` (which calls :meth:`_rebuilt`), calls :meth:`_setup_rebuilds` from
    ``__init__``, and may set ``_early_rule``.

    Examples
    --------
    >>> from stream_nb import TAN
    >>> from stream_nb.learners import StructuredClassifier
    >>> model = TAN()
    >>> isinstance(model, StructuredClassifier), model.n_rebuilds, model.rebuild_interval()
    (True, 0, 100)

    Notes
    -----
    The docs' *The models* page gives the schedule and the tests; *Benchmarks* measures the early rebuilds.
    """

    #: Rebuild after a merge (when the model had been built), from the merged counts.
    _rebuild_after_merge = True
    #: the test an early rebuild waits for (:func:`~stream_nb.learners._structure.dependence_shown`)
    _early_rule = "g"
    #: ``(warmup, rebuild_every, early rebuilds)`` of :meth:`_early_rebuilds`, kept while the options are those.
    _early_cache: tuple | None = None

    def _setup_rebuilds(self) -> None:
        """Start counting learned events toward the next rebuild (``rebuild_every`` is checked where it is declared)."""
        self._since_rebuild = 0
        self.n_rebuilds = 0

    @abc.abstractmethod
    def rebuild(self) -> None:
        """Rebuild the structure now from the current counts (then call :meth:`_rebuilt`)."""

    def _rebuilt(self) -> None:
        """Record a rebuild: the count toward the next one starts again."""
        self._since_rebuild = 0
        self.n_rebuilds += 1

    def _early_rebuilds(self) -> int:
        """How many early rebuilds the schedule has: the doublings of ``warmup`` below ``rebuild_every``."""
        w, r = self.warmup, self.rebuild_every
        cached = self._early_cache
        if cached is None or cached[:2] != (w, r):
            k = 0
            while r and (w << k) < r:
                k += 1
            cached = self._early_cache = (w, r, k)
        return cached[2]

    def rebuild_interval(self) -> int:
        """Learned events from the last rebuild (or the start) to the next one (0: no automatic rebuild); a
        function of the rebuilds so far, so a restored or merged model keeps its place.

        >>> from stream_nb import MDL, TAN, Tree
        >>> model = TAN(numeric=MDL(warmup=100), search=Tree(rebuild_every=1000))
        >>> intervals = []
        >>> for model.n_rebuilds in range(7):
        ...     intervals.append(model.rebuild_interval())
        >>> intervals   # rebuilds after 100, 200, 400, 800 (early), 1000, 2000, 3000 learned events
        [100, 100, 200, 400, 200, 1000, 1000]
        """
        r, w, k = self.rebuild_every, self.warmup, self.n_rebuilds - self._rebuild_origin
        early = self._early_rebuilds()
        if k < early:
            return w if k == 0 else w << (k - 1)
        if k == early:
            return r - (w << (early - 1)) if early else r
        return r

    def _learned(self, n: int) -> None:
        super()._learned(n)  # forgetting first: the structure is built from the counts that remain
        self._since_rebuild += n
        key = (self.n_rebuilds, self._rebuild_origin)  # what the interval depends on, the options aside (frozen)
        held = self.__dict__.get("_interval")
        if held is None or held[0] != key:
            held = self._interval = (key, self.rebuild_interval() if self.rebuild_every else 0)
        if held[1] and self._since_rebuild >= held[1]:
            self._settle()  # decayed counts renormalised: a structure reads counts, not only ratios
            if (self.n_rebuilds - self._rebuild_origin < self._early_rebuilds()
                    and not dependence_shown(self._stats, self._early_rule)):
                self._since_rebuild = 0  # an early rebuild with nothing to build on: keep the structure
                self.n_rebuilds += 1
            else:
                self.rebuild()

    def _batch_limit(self) -> int:
        # a batch stops at the next rebuild, so that learn_many rebuilds where learn_one would
        own = max(1, self.rebuild_interval() - self._since_rebuild) if self.rebuild_every else 1 << 62
        return min(own, super()._batch_limit())

    def _switched(self) -> None:
        # new counts after a detected drift: rebuild from them, and restart the early rebuilds
        if self.n_rebuilds:
            self._settle()
            self.rebuild()
        self._rebuild_origin, self._since_rebuild = self.n_rebuilds, 0

    def _merged(self) -> None:
        if self._rebuild_after_merge and self.n_rebuilds:
            self._settle()
            self.rebuild()

    def _check_loaded(self) -> None:
        super()._check_loaded()
        since, n = self._since_rebuild, self.n_rebuilds
        if not is_integer(since) or since < 0 or (
                self.rebuild_every and since > self.rebuild_every):
            raise ValueError(f"since_rebuild: expected an integer from 0 to rebuild_every={self.rebuild_every}, "
                             f"got {since!r:.60}")
        if not is_integer(n) or n < 0:
            raise ValueError(f"n_rebuilds: expected an integer >= 0, got {n!r:.60}")
