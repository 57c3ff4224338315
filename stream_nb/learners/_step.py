"""One prequential step of any river classifier: stream_nb's, or another's."""

from __future__ import annotations

from ._base import BayesClassifier, Step

__all__ = ["prequential_step"]


def prequential_step(model, x: dict, y, *, impute: bool = False) -> Step:
    """One prequential step of any river classifier: predict ``x``, then learn ``(x, y)``.

    stream_nb's models take :meth:`BayesClassifier.prequential_one` (``x`` encoded once).
    Any other river classifier predicts with ``predict_one`` and ``predict_proba_one`` and
    learns labeled events only; ``impute`` needs a model with ``impute_one``. The engine,
    ``prequential_many`` and ``stream-nb evaluate`` all go through this step.

    >>> from river import naive_bayes
    >>> model = naive_bayes.MultinomialNB()
    >>> prequential_step(model, {"w": 2}, "a")
    Step(prediction=None, proba={}, learned=True, imputed=None)
    """
    if isinstance(model, BayesClassifier):
        return model.prequential_one(x, y, impute=impute)
    prediction, proba = model.predict_one(x), model.predict_proba_one(x)
    imputed = None
    if impute:
        imputed = {k: v for k, v in model.impute_one(x).items() if k not in x or x[k] is None}
    learned = y is not None
    if learned:
        model.learn_one(x, y)
    return Step(prediction, proba, learned, imputed)
