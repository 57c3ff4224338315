"""Forgetting: windows of panes, exponential decay, and a reset of the counts on a detected drift.

:class:`Forgetting` is the part of :class:`~stream_nb.learners.BayesClassifier` behind the ``forgetting``
(``Window``, ``Decay``) and ``drift_detector`` parameters. It works on the store
(:mod:`stream_nb.stats.forgetting._forgetting`), so every model gets it at once. The docs' *Forgetting*
page gives the rules, the memory and the costs.
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import InvalidEventError, MergeError, UnlearnError
from ..stats import (SparseTable, capture, capture_difference, capture_nbytes, check_event, count_difference,
                     scale_counts, subtract_counts)
from ._decay_runs import RENORMALISE_AT
from ._detectors import decode_object, encode_object, watched_detector
from ._drift import DriftWatch
from ._unlearn import Receipt

__all__ = ["Forgetting"]

# ---------------------------------------------------------------------- the model's part


class _State:
    """What forgetting keeps beside the store (see the module notes)."""

    def __init__(self, window, panes, half_life, detector):
        self.window, self.panes, self.half_life = window, panes, half_life
        self.pane_size = math.ceil(window / panes) if window else 0
        self.deltas: list[dict] = []  # the complete panes in the window, oldest first
        self.base: dict | None = None  # capture at the start of the pane in progress (None: empty counts)
        self.pane_n = 0  # events learned in the pane in progress
        self.step = 2.0 ** (1.0 / half_life) if half_life else 1.0
        self.inflation = 1.0  # stored counts = true counts * inflation
        self.clock: float | None = None  # decay in event time: the latest event time learned
        self.halvings = 0.0  # decay so far, in half-lives (an event's weight is 2**-(halvings now - then))
        self.pane_no = 0  # window: the number of the pane in progress (the kept ones are the ones before it)
        self.expired_unlearns = 0  # unlearn_one of events whose pane had expired: nothing to take back
        self.detector = detector
        self.warn_base: dict | None = None  # capture at the warning (the fresh counts are what came since)
        self.warning = False
        self.seen = 0  # labeled events the detector watched
        self.paused = 0  # inside drift_paused(): learning feeds the detector nothing
        self.drifts: list[int] = []


class Forgetting(DriftWatch):
    """Windows, decay and drift resets of a :class:`~stream_nb.learners.BayesClassifier` (a part of it);
    see the module notes."""

    _forget: _State | None = None

    def _setup_forgetting(self) -> None:
        """Start forgetting as ``forgetting`` and ``drift_detector`` say (their values are checked where they are
        declared, :mod:`stream_nb.options`); ``_setup`` calls it."""
        window, half_life, panes = self.window, self.half_life, self.panes
        self._time_name = self.time_field  # (what _forget_time reads for each event)
        detector = watched_detector(getattr(self, "drift_detector", None))
        if window is None and half_life is None and detector is None:
            self._forget = None
            return
        self._forget = _State(window, panes, half_life, detector)
        self._stats.bin_floats_at_once()

    # -------------------------------------------------------------- smoothing of inflated counts

    @property
    def _alpha(self) -> float:
        """The smoothing as the stored counts need it: ``alpha`` times the decay's inflation."""
        f = self._forget
        return self._alpha_given if f is None or f.inflation == 1.0 else self._alpha_given * f.inflation

    @_alpha.setter
    def _alpha(self, value: float) -> None:
        self._alpha_given = value

    @property
    def _inflation(self) -> float:
        """The decay's inflation of the stored counts (1.0 without decay)."""
        return 1.0 if self._forget is None else self._forget.inflation

    # -------------------------------------------------------------- hooks of the learning paths

    def _forget_time(self, x: dict) -> tuple[dict, float | None]:
        """``x`` without its ``time_field`` (not a feature) and that time (None: ``x`` has none); nothing
        changes (InvalidEventError, reason ``bad_time``, unless the time is a finite number)."""
        if type(x) is not dict:
            check_event(x)  # the first read of x when learning: no dict, no event (EventTypeError)
        name = self._time_name
        if name is None or name not in x:
            return x, None
        t = x[name]
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t):
            raise InvalidEventError(f"field {name!r} (time_field): expected the event's time, a finite number, "
                                    f"got {t!r:.60}", reason="bad_time", field=name)
        return {k: v for k, v in x.items() if k != name}, float(t)

    def _forget_weight(self, w: float, t: float | None = None) -> float:
        """The stored weight of the event about to be added (decay: advances the clock one event, or in
        event time to ``t`` when it is later than the latest time learned)."""
        f = self._forget
        if f is None or not f.half_life:
            return w
        if getattr(self, "time_field", None) is None:
            f.inflation *= f.step
            f.halvings += 1.0 / f.half_life
        elif t is not None:
            if f.clock is not None and t > f.clock:
                self._decay_by((t - f.clock) / f.half_life)
            f.clock = t if f.clock is None else max(f.clock, t)
        return w * f.inflation

    def _decay_by(self, halvings: float) -> None:
        """Decay every count by ``2**-halvings``: in the inflation, or (when that would pass the
        renormalisation point) in the cells themselves."""
        f = self._forget
        f.halvings += halvings
        if math.log2(f.inflation) + halvings < math.log2(RENORMALISE_AT):
            f.inflation *= 2.0**halvings
            return
        self._settle()
        scale_counts(self._stats, 2.0 ** -halvings, (f.warn_base,))

    def _forget_learned(self, n: int) -> None:
        """After ``n`` learned events: close the pane when full (expiring the oldest), renormalise decayed counts."""
        f = self._forget
        if f is None:
            return
        if f.window:
            f.pane_n += n
            if f.pane_n >= f.pane_size:
                s = self._stats
                f.deltas.append(count_difference(s, f.base))
                if len(f.deltas) > f.panes - 1:
                    subtract_counts(s, f.deltas.pop(0))
                f.base = capture(s)
                f.pane_n = 0
                f.pane_no += 1
        elif f.half_life and f.inflation >= RENORMALISE_AT:
            self._settle()

    def _settle(self) -> None:
        """Renormalise decayed counts (inflation back to 1): the stored counts are then the true ones."""
        f = self._forget
        if f is not None and f.inflation != 1.0:
            scale_counts(self._stats, 1.0 / f.inflation, (f.warn_base,))
            f.inflation = 1.0

    def _forget_limit(self) -> int:
        """Events that may be learned in one batch before forgetting must act (the end of the pane)."""
        f = self._forget
        if f is None or not f.window:
            return 1 << 62
        return max(1, f.pane_size - f.pane_n)

    def _check_times(self, X) -> None:
        """Check every time of a batch's ``time_field`` column (if any) before anything is learned, so that
        a bad one leaves no trace."""
        name = getattr(self, "time_field", None)
        if name is not None and name in X.columns:
            for t in X[name].tolist():
                self._forget_time({name: t})

    @property
    def forgetting_nbytes(self) -> int:
        """Bytes of counts forgetting keeps beside the store (panes, captures)."""
        f = self._forget
        if f is None:
            return 0
        return sum(capture_nbytes(d) for d in f.deltas) + capture_nbytes(f.base) + capture_nbytes(f.warn_base)

    def _forget_merge(self, other) -> None:
        """Check and prepare a merge: windows cannot merge; decayed counts are renormalised first."""
        for model, which in ((self, "this model"), (other, "the other model")):
            if getattr(model, "window", None) is not None:
                raise MergeError(f"cannot merge: {which} forgets by a window (window={model.window}); the panes of "
                                 f"two models hold different events, so no merged window is exact. Merge models "
                                 f"without window (decayed counts merge exactly)")
        self._settle()
        other._settle()
        clocks = [m._forget.clock for m in (self, other) if m._forget is not None and m._forget.clock is not None]
        for model in (self, other):  # decay in event time: both sets of counts as of the later clock
            f = model._forget
            if f is not None and f.half_life and clocks:
                if f.clock is not None and f.clock < max(clocks):
                    scale_counts(model._stats, 2.0 ** (-(max(clocks) - f.clock) / f.half_life), (f.warn_base,))
                f.clock = max(clocks)
        if self._forget is not None and self._forget.warning:
            self._forget.warn_base = capture(self._stats)  # the merged counts count as before the warning

    def learn_one_receipt(self, x: dict, y, w: float = 1.0) -> Receipt:
        """``learn_one_receipt``; the receipt's ``stamp`` names the event's pane and the decay so far."""
        f = self._forget
        pane = None if f is None else f.pane_no
        receipt = super().learn_one_receipt(x, y, w)
        return receipt if f is None else receipt._replace(stamp=(pane, f.halvings))

    def unlearn_one(self, x: dict, y, w: float = 1.0, *, receipt=None) -> None:
        """:meth:`~stream_nb.learners._unlearn.Unlearning.unlearn_one` under forgetting.

        Window: the event leaves the counts and its pane (the receipt's, else the pane in progress);
        if that pane expired (or a drift dropped it), nothing changes and :attr:`expired_unlearns` counts it.
        Decay: its weight decayed since the receipt's stamp is subtracted (receipt and plain counting needed).
        A drift detector without a window is refused (``reason="forgets"``): a switch drops counts by time.
        """
        f = self._forget
        if f is None:
            super().unlearn_one(x, y, w, receipt=receipt)
            return
        x, _ = self._forget_time(x)
        stamp = receipt.stamp if isinstance(receipt, Receipt) else None
        if f.half_life:
            if stamp is None:
                raise UnlearnError(f"unlearning: with decay (half_life={f.half_life}) the event's weight depends on "
                                   "when it was learned: unlearn it with the receipt learn_one_receipt returned",
                                   reason="needs_receipt")
            if receipt.extra is not None or any(e[0] not in ("count", "gauss") for e in receipt.entries):
                raise UnlearnError("unlearning: with decay only an event learned by plain counting (every feature "
                                   "observed, or missing=Ignore()) can be taken back", reason="forgets")
            w = w * 2.0 ** -(f.halvings - stamp[1]) * f.inflation
            receipt = None
        if not f.window:
            if f.detector is not None:
                raise UnlearnError(f"unlearning: this model forgets (drift_detector={type(f.detector).__name__}): "
                                   "the event's counts may have been dropped by a switch since it was learned, so "
                                   "they cannot be taken back exactly", reason="forgets")
            super().unlearn_one(x, y, w, receipt=receipt)
            return
        pane = f.pane_no if stamp is None else stamp[0]
        first = f.pane_no - len(f.deltas)  # the oldest pane still in the counts
        if pane > f.pane_no:
            raise UnlearnError(f"receipt: it names pane {pane}, but the pane in progress is {f.pane_no}")
        if pane < first:
            f.expired_unlearns += 1  # its pane expired (or a drift dropped it): nothing of it is left
            return
        before = None if pane == f.pane_no else capture(self._stats)  # the pane in progress: counts since base
        super().unlearn_one(x, y, w, receipt=receipt)
        if before is None:
            return
        part = capture_difference(before, capture(self._stats))  # what the event held in the counts
        k = pane - first
        f.deltas[k] = capture_difference(f.deltas[k], part)
        f.base = capture_difference(f.base, part)  # the pane in progress starts from counts without it

    @property
    def expired_unlearns(self) -> int:
        """Events ``unlearn_one`` found expired from the window (nothing taken back); 0 without forgetting."""
        return 0 if self._forget is None else self._forget.expired_unlearns

    # -------------------------------------------------------------- state

    def _forget_state(self) -> tuple[dict, dict | None]:
        """``(arrays, meta)`` of forgetting (keys of ``arrays`` start with ``forget.``)."""
        f = self._forget
        if f is None:
            return {}, None
        arrays: dict = {}
        caps = {"base": f.base, "warn": f.warn_base, **{f"pane{i}": d for i, d in enumerate(f.deltas)}}
        sparse = {}
        for tag, cap in caps.items():
            for name, a in (cap or {}).items():
                if isinstance(a, SparseTable):  # a sparse t-way table: its cells and their counts
                    idx, vals = a.cells()
                    arrays[f"forget.{tag}.{name}.cells"] = np.stack(idx).astype(np.int64) if len(vals) else \
                        np.zeros((len(a.shape), 0), dtype=np.int64)
                    arrays[f"forget.{tag}.{name}.counts"] = vals.copy()
                    sparse[f"{tag}.{name}"] = list(a.shape)
                else:
                    arrays[f"forget.{tag}.{name}"] = a.copy()
        meta = {
            "panes_kept": len(f.deltas), "base": f.base is not None, "warn": f.warn_base is not None,
            "pane_n": f.pane_n, "inflation": f.inflation.hex(), "warning": f.warning, "seen": f.seen,
            "sparse": sparse, "drifts": list(f.drifts),
            "clock": None if f.clock is None else f.clock.hex(), "halvings": f.halvings.hex(),
            "pane_no": f.pane_no, "expired_unlearns": f.expired_unlearns, "rebuild_origin": int(getattr(self, "_rebuild_origin", 0)),
            "detector": None if f.detector is None else encode_object(f.detector),
        }
        return arrays, meta

    def _forget_load(self, arrays: dict, meta: dict | None) -> None:
        """Restore what :meth:`_forget_state` saved (ValueError naming what does not fit)."""
        f = self._forget
        if f is None or meta is None:
            if (f is None) != (meta is None):
                raise ValueError("forget: the state's forgetting does not match the model's window, half_life "
                                 "and drift_detector")
            return
        try:
            sparse = meta.get("sparse") or {}

            def cap(tag):
                prefix = f"forget.{tag}."
                out = {k[len(prefix):]: np.array(v, dtype=float) for k, v in arrays.items()
                       if k.startswith(prefix) and f"{tag}.{k[len(prefix):]}" not in sparse
                       and not k.endswith((".cells", ".counts"))}
                for key, shape in sparse.items():
                    if key.startswith(tag + "."):
                        name = key[len(tag) + 1:]
                        table = SparseTable(tuple(shape))
                        cells, counts = arrays[f"forget.{key}.cells"], np.asarray(arrays[f"forget.{key}.counts"])
                        if len(counts):
                            table.add(tuple(np.asarray(cells, dtype=np.int64)), counts)
                        out[name] = table
                return out

            f.deltas = [cap(f"pane{i}") for i in range(int(meta["panes_kept"]))]
            f.base = cap("base") if meta["base"] else None
            f.warn_base = cap("warn") if meta["warn"] else None
            f.pane_n = int(meta["pane_n"])
            f.inflation = float.fromhex(meta["inflation"])
            f.warning, f.seen = bool(meta["warning"]), int(meta["seen"])
            f.drifts = [int(d) for d in meta["drifts"]]
            f.clock = None if meta.get("clock") is None else float.fromhex(meta["clock"])
            f.halvings = float.fromhex(meta.get("halvings", "0x0p+0"))
            f.pane_no, f.expired_unlearns = int(meta.get("pane_no", 0)), int(meta.get("expired_unlearns", 0))
            if meta.get("rebuild_origin"):
                self._rebuild_origin = int(meta["rebuild_origin"])
            if meta["detector"] is not None:
                f.detector = decode_object(meta["detector"])
        except Exception as exc:  # noqa: BLE001 - a snapshot is untrusted data: whatever breaks is one refusal
            raise ValueError(f"forget: cannot restore the forgetting state: {exc!r:.80}") from None
        if not (f.inflation >= 1.0 and math.isfinite(f.inflation)) or f.pane_n < 0 or (
                f.window and (f.pane_n > f.pane_size or len(f.deltas) > f.panes - 1)):
            raise ValueError("forget: the forgetting state does not fit the model's window and panes")
