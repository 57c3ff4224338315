"""What a model does with what is missing: a feature's value, or the label itself.

Pass one as ``missing=``: :class:`EM` (the default) or :class:`Ignore`.

>>> from stream_nb import NaiveBayes, EM, Ignore
>>> NaiveBayes(missing=EM(unlabeled=True, unlabeled_weight=0.5)).missing
EM(unlabeled=True, unlabeled_weight=0.5)
>>> NaiveBayes(missing=Ignore()).missing
Ignore()
"""

from __future__ import annotations

from ..exceptions import ConfigError
from ._declare import Option, Param, option

__all__ = ["EM", "Ignore", "missing_from"]


@option(
    Param("attributes", "bool", True, "learn from events with missing attributes by online EM: add the "
          "expected counts of the missing values, estimated from the observed values", setting=""),
    Param("unlabeled", "bool", False, "learn from unlabeled events too, by EM over the class "
          "(semi-supervised)", setting="learn_unlabeled"),
    Param("unlabeled_weight", "float", 1.0, "weight of an unlabeled event relative to a labeled one",
          minimum=0, metavar="W"),
)
class EM(Option):
    """Learn what is missing by online expectation-maximisation.

    With ``attributes``, an event with missing attributes adds the expected counts of the
    missing values, their posterior read off observed-only counts (kept beside the counts from the
    first incomplete event on). With ``unlabeled``, an unlabeled event (``learn_one(x, None)``) is
    spread over the classes by its posterior, with weight ``unlabeled_weight`` (Nigam et al. 2000).

    Parameters
    ----------
    attributes
        EM over missing attribute values (False: skip them when learning).
    unlabeled
        EM over the class of unlabeled events.
    unlabeled_weight
        Weight of an unlabeled event relative to a labeled one, >= 0.

    Examples
    --------
    >>> from stream_nb import NaiveBayes, EM
    >>> model = NaiveBayes(missing=EM(unlabeled=True))
    >>> model.learn_one({"sky": "sun"}, "play")
    >>> model.learn_one({"sky": "sun"}, None)   # learned as "play", the only class known
    >>> model.n_learned
    2.0
    """

    CHOICE = "em"


@option()
class Ignore(Option):
    """Skip what is missing: a missing value adds no count, and an unlabeled event is not learned
    (``prequential_one`` predicts it and learns nothing; ``learn_one`` refuses it).

    Examples
    --------
    >>> from stream_nb import NaiveBayes, Ignore
    >>> model = NaiveBayes(missing=Ignore())
    >>> model.learn_one({"sky": "sun", "wind": None}, "play")
    >>> model.prequential_one({"sky": "sun"}, None).learned
    False
    >>> model.n_learned
    1.0
    """

    CHOICE = "ignore"
    attributes = False
    unlabeled = False
    unlabeled_weight = 1.0


def missing_from(values: dict) -> EM | Ignore:
    """The ``missing`` option the flat settings ``missing`` (``em``/``ignore``), ``learn_unlabeled`` and
    ``unlabeled_weight`` describe (those given are in ``values``).

    >>> missing_from({"missing": "ignore", "learn_unlabeled": True})
    EM(attributes=False, unlabeled=True)
    >>> missing_from({"missing": "drop"})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: missing: expected one of 'em', 'ignore', got 'drop'
    """
    kind = values.get("missing")
    kind = "em" if kind is None else kind
    if isinstance(kind, bool) or kind not in ("em", "ignore"):
        raise ConfigError(f"missing: expected one of 'em', 'ignore', got {kind!r:.60}")
    given = {p.name: p.check(values[p.setting_name], None) for p in EM.PARAMS[1:] if values.get(p.setting_name) is not None}
    if kind == "ignore" and not given.get("unlabeled"):
        return Ignore()
    return EM(attributes=kind == "em", **given)
