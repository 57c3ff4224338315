"""kappa_t and kappa_m, the two kappas of streaming evaluation that river lacks, as river metrics.

Both compare the model's accuracy ``p0`` with the accuracy ``pe`` of a trivial
classifier over the same events: ``(p0 - pe) / (1 - pe)`` (0.0 when ``pe`` is 1,
as river's ``CohenKappa``). :class:`KappaT`'s trivial classifier predicts the
label of the event before (*no-change*); :class:`KappaM`'s the *majority class*,
counted after the event's own label, a tie going to the class seen first, as
MOA's evaluator does. The docs' *Evaluate* page says where they differ from MOA.

>>> kt, km = KappaT(), KappaM()
>>> for y_true, y_pred in [("a", "a"), ("a", "a"), ("b", "a"), ("b", "b")]:
...     kt.update(y_true, y_pred)
...     km.update(y_true, y_pred)
>>> kt.get()   # p0 = 3/4; no-change right on events 2 and 4: pe = 2/4
0.5
>>> km.get()   # majority after counting: a, a, a (2 a, 1 b), a (2 a, 2 b: a first): pe = 2/4
0.5
"""

from __future__ import annotations

import typing

from river import base

__all__ = ["KappaM", "KappaT"]


def _kappa(p0: float, pe: float) -> float:
    return 0.0 if pe == 1.0 else (p0 - pe) / (1.0 - pe)


class _Kappa(base.Base):
    """What the two kappas share: the weights seen, the model's and the trivial classifier's correct weight.

    They have the interface of a river classification metric (``update``, ``revert``, ``get``,
    ``works_with``, ``requires_labels``, ``bigger_is_better``), so river's ``progressive_val_score``
    takes them, without a subclass of ``river.metrics.base``: that module loads scipy.stats (a second
    on every ``stream-nb`` start), and only an evaluation needs it.
    """

    def __init__(self):
        self.weight = 0.0
        self.correct = 0.0
        self.reference_correct = 0.0

    def _count(self, y_true, y_pred, w: float, reference) -> None:
        self.weight += w
        self.correct += w * (y_pred == y_true)
        self.reference_correct += w * (reference is not None and reference == y_true)

    def revert(self, y_true, y_pred, w=1.0) -> None:
        raise TypeError(f"{type(self).__name__} cannot be reverted: its trivial classifier depends on the order "
                        "of the labels; use a fresh one per window instead of utils.Rolling")

    @property
    def p0(self) -> float:
        """The model's accuracy over the events seen."""
        return self.correct / self.weight if self.weight else 0.0

    @property
    def pe(self) -> float:
        """The trivial classifier's accuracy over the same events."""
        return self.reference_correct / self.weight if self.weight else 0.0

    def get(self) -> float:
        """The kappa: ``(p0 - pe) / (1 - pe)``; 0.0 before any event and when ``pe`` is 1."""
        return _kappa(self.p0, self.pe) if self.weight else 0.0

    @property
    def bigger_is_better(self) -> bool:
        return True

    @property
    def requires_labels(self) -> bool:
        """It scores predicted labels (river's ``progressive_val_score`` then calls ``predict_one``)."""
        return True

    def works_with(self, model) -> bool:
        return isinstance(model, base.Classifier)

    def __repr__(self) -> str:
        return f"{type(self).__name__}: {self.get():.6f}"


class KappaT(_Kappa):
    """Kappa against the no-change classifier: ``(p0 - pe) / (1 - pe)``, ``pe`` the accuracy of predicting
    each event's label as the label of the event before (see the module notes).

    Parameters
    ----------
    last
        The label before the first event this metric sees (``None``: none, the first event is a miss
        of the no-change classifier). A window of a longer stream takes the label that closed the
        window before (:attr:`last` of that window's metric).

    Examples
    --------
    >>> m = KappaT()
    >>> for y_true, y_pred in [(0, 0), (0, 1), (1, 1), (1, 1), (1, 1)]:
    ...     m.update(y_true, y_pred)
    >>> m.p0, m.pe, m.get()   # no-change: -, 0, 0, 1, 1 -> right on 3 of 5
    (0.8, 0.6, 0.5000000000000001)
    >>> m.last
    1
    """

    def __init__(self, last: typing.Any = None):
        super().__init__()
        self.last = last

    def update(self, y_true, y_pred, w=1.0) -> None:
        self._count(y_true, y_pred, w, self.last)
        self.last = y_true


class KappaM(_Kappa):
    """Kappa against the majority class: ``(p0 - pe) / (1 - pe)``, ``pe`` the accuracy of predicting each
    event's label as the most frequent label counted so far, the event's own included (see the module notes).

    Examples
    --------
    >>> m = KappaM()
    >>> for y_true, y_pred in [("x", "x"), ("y", "y"), ("y", "x"), ("x", "x")]:
    ...     m.update(y_true, y_pred)
    >>> m.counts, m.pe, m.get()   # majority: x, x (tie: x first), y, x (tie) -> right on x, y, x
    ({'x': 2.0, 'y': 2.0}, 0.75, 0.0)
    """

    def __init__(self):
        super().__init__()
        self.counts: dict = {}
        self.majority = None

    def update(self, y_true, y_pred, w=1.0) -> None:
        self.counts[y_true] = self.counts.get(y_true, 0.0) + w
        # max takes the first of equal counts, and the dict holds the classes in the order first counted:
        # the class counted first wins a tie, as the lowest class index does in MOA
        self.majority = max(self.counts, key=self.counts.__getitem__)
        self._count(y_true, y_pred, w, self.majority)
