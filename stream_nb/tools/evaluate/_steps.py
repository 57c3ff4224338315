"""One call of every model on one event: stream_nb's models first, rejections, and a peer's failures.

stream_nb's models share the rules that reject an event
(:class:`~stream_nb.exceptions.InvalidEventError`: a value of the wrong type, a
label of another type than the first), so the first of them to see an event
decides for all, and a rejected event leaves every model untouched. A peer (a
river classifier) rejects nothing; it sees the event after stream_nb's models
have taken it. Any other error of a model on an event (a peer given a value it
cannot compute with, say a string to river's ``GaussianNB``) is a
:class:`ModelError` naming the model and the event.
"""

from __future__ import annotations

import typing

from ...exceptions import InvalidEventError, LabelTypeError, StreamNBError
from ...learners import BayesClassifier

__all__ = ["ModelError", "call_models", "stepping_order"]


class ModelError(StreamNBError, RuntimeError):
    """A model failed on an event with an error other than rejecting it."""


def stepping_order(results: list) -> list[int]:
    """The indices of ``results`` (items with a ``model``), stream_nb's models first, each group in order.

    >>> from types import SimpleNamespace as R
    >>> from river import naive_bayes
    >>> from stream_nb import NaiveBayes
    >>> stepping_order([R(model=naive_bayes.GaussianNB()), R(model=NaiveBayes()), R(model=NaiveBayes())])
    [1, 2, 0]
    """
    return sorted(range(len(results)), key=lambda k: not isinstance(results[k].model, BayesClassifier))


def call_models(results: list, order: list[int], call: typing.Callable, where: str, clock,
                label_field: str | None) -> tuple[list, InvalidEventError | None]:
    """``call(model)`` for each of ``results`` in ``order``, its time added to the result's ``seconds``.

    Returns the outputs by index and ``None``; or, when the first model called rejects the event,
    ``(partial outputs, the error)`` with no other model called. A rejection by a later model (a bug:
    stream_nb's models share the rules) is a ``RuntimeError``; any other error, a :class:`ModelError`.
    """
    outputs: list = [None] * len(results)
    for n, k in enumerate(order):
        r = results[k]
        t = clock()
        try:
            outputs[k] = call(r.model)
        except InvalidEventError as exc:
            if isinstance(exc, LabelTypeError) and label_field and exc.field is None:
                exc = exc.for_field(label_field)
            if n:
                first = results[order[0]].name
                raise RuntimeError(f"{where}: {r.name} rejected an event that {first} took: {exc}") from exc
            return outputs, exc
        except Exception as exc:  # noqa: BLE001 - any error of a model's own code, named with the event
            raise ModelError(f"{where}: {r.name} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            r.seconds += clock() - t
    return outputs, None
