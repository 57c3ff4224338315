"""Mini-batches: ``learn_many``, ``predict_proba_many`` and ``predict_many`` over a DataFrame.

A batch gives the same model and predictions as the rows one at a time
(``learn_one``, ``predict_proba_one``). ``learn_many`` checks the whole batch,
then learns it as ``prequential_many`` does
(:meth:`~stream_nb.learners._runs.VectorisedRuns.learn_events`): runs of rows
through the model's compiled kernel, each row counted in turn, and the other
rows one at a time. The predictions are encoded column by column
(:meth:`Stats.encode_frame <stream_nb.stats.Stats.encode_frame>`) and scored
in one vectorised pass.
"""

from __future__ import annotations

import numpy as np

from .._pandas import pd
from ..exceptions import EventTypeError, InvalidEventError
from ..stats import is_missing_label
from ._decision import normalise

__all__ = ["MiniBatches"]


class MiniBatches:
    """The mini-batch methods of a :class:`~stream_nb.learners.BayesClassifier` (a part of it, not used alone)."""

    def learn_many(self, X: pd.DataFrame, y: pd.Series) -> None:
        """Learn a batch: the same model as ``learn_one`` over the rows in order, or an error and nothing learned.

        A new feature takes its type from the column's dtype (an integer column with missing values is
        float in pandas: declare it in ``types``). The docs' *Learners in Python* page says more.
        The rows are learned in order, as ``prequential_many`` learns them, in the model's kernel.

        >>> import pandas as pd
        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_many(pd.DataFrame({"sky": ["sun", "rain", "sun"]}), pd.Series(["play", "stay", "play"]))
        >>> model.class_counts()
        {'play': 2.0, 'stay': 1.0}
        """
        _check_frame(X)
        if len(X) != len(y):
            raise ValueError(f"learn_many: X has {len(X)} rows but y has {len(y)} labels")
        # every label of the batch is of the model's label type (a fresh model: of the first one's), checked
        # before anything changes; one per value unless pandas holds them in one dtype (it factorises True and 1 as one)
        uniform = isinstance(y, pd.Series) and y.dtype != object and not isinstance(y.dtype, pd.CategoricalDtype)
        labels = pd.unique(y).tolist() if uniform else list(y)
        self._stats.check_labels(labels)
        missing = pd.isna(y if isinstance(y, pd.Series) else pd.Series(list(y), dtype=object)).to_numpy()
        if missing.any() and not self.learn_unlabeled:
            raise InvalidEventError(
                f"the label is missing (None or NaN) at row {int(np.argmax(missing))} of the batch", reason="bad_label"
            )
        # the whole batch is checked first, so that a bad row leaves no trace; then it is learned in order,
        # as prequential_many learns (runs through the kernel, the other rows one at a time)
        self._check_times(X)
        self._stats.validate_frame(X, [v for v in labels if not is_missing_label(v)])
        refused = self.learn_events(X, y)
        if refused:  # a row the checks let through: the one learn_one would have refused there
            raise refused[0][1]

    def _log_posterior_many(self, X: pd.DataFrame) -> np.ndarray:
        _check_frame(X)
        D, dfeats, G, gslots = self._stats.encode_frame(X)
        return normalise(self._jll_many(D, dfeats, G, gslots), self._log_prior())

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        if not self._stats.n_classes:
            return pd.DataFrame(index=X.index)
        p = np.exp(self._log_posterior_many(X))
        return pd.DataFrame(p, index=X.index, columns=list(self._stats.classes))

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        s = self._stats
        if not s.n_classes:
            return pd.Series([None] * len(X), index=X.index, dtype=object)
        idx = self._decide(self._log_posterior_many(X))
        return pd.Series([s.classes[i] for i in idx], index=X.index)


def _check_frame(X) -> None:
    """Raise :class:`~stream_nb.exceptions.EventTypeError` (a ``TypeError``) unless ``X`` is a DataFrame."""
    if not isinstance(X, pd.DataFrame):
        raise EventTypeError(f"X: expected a pandas DataFrame of feature columns, got {type(X).__name__} {X!r:.60}")
