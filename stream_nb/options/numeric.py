"""How a model reads a numeric feature: one Gaussian per class, or counted in bins.

Pass one as ``numeric=``. :class:`Gaussian` is naive Bayes' default; AODE,
TAN, SPODE and KDB count every feature, so they take a discretiser:
:class:`MDL` (their default; KDB's is :class:`EqualFrequency`),
:class:`EqualFrequency`, or :class:`Edges` (fixed edges for some features,
another discretiser for the rest).

>>> from stream_nb import AODE, MDL, Edges
>>> AODE(numeric=MDL(fine_bins=32)).numeric
MDL(fine_bins=32)
>>> Edges({"temp": [10.0, 20.0]})
Edges(edges={'temp': [10.0, 20.0]})
>>> MDL(fine_bins=1)
Traceback (most recent call last):
...
stream_nb.exceptions.ConfigError: MDL(fine_bins=...): expected an integer >= 2, got 1
"""

from __future__ import annotations

from ..exceptions import ConfigError
from ._declare import REQUIRED, Option, Param, option

__all__ = ["EqualFrequency", "Edges", "Gaussian", "MDL", "binned", "numeric_from"]

_BINS = Param("bins", "int", 5, "equal-frequency bins per numeric feature (with mdl: the quantiles whose "
              "nearest fine edges may also cut)", minimum=1, metavar="N")
_WARMUP = Param("warmup", "int", 100, "values of a numeric feature used to place its bin edges (TAN, SPODE, "
                "KDB: also the learned events before the first rebuild)", minimum=1, metavar="N")


@option(
    Param("var_smoothing", "float", 1e-9, "floor of each Gaussian variance, as a fraction of the feature's "
          "smallest within-class variance", minimum=0, metavar="V"),
)
class Gaussian(Option):
    """A numeric feature is one Gaussian per class, from running moments (naive Bayes only).

    Parameters
    ----------
    var_smoothing
        Relative variance floor: a fraction of the smallest within-class variance, >= 0.

    Examples
    --------
    >>> from stream_nb import NaiveBayes, Gaussian
    >>> model = NaiveBayes(numeric=Gaussian(var_smoothing=1e-6))
    >>> for t, y in [(1.0, "a"), (1.2, "a"), (3.0, "b"), (3.3, "b")]:
    ...     model.learn_one({"t": t}, y)
    >>> model.predict_one({"t": 1.1})
    'a'
    """

    CHOICE = "gaussian"


@option(_BINS, _WARMUP)
class EqualFrequency(Option):
    """``bins`` equal-frequency bins per numeric feature, placed from its first ``warmup`` values, never moved.

    Parameters
    ----------
    bins
        Bins per feature, >= 1.
    warmup
        Values of a feature read before its edges are placed (TAN, SPODE, KDB: also the learned
        events before their first rebuild).

    Examples
    --------
    >>> from stream_nb import AODE, EqualFrequency
    >>> model = AODE(numeric=EqualFrequency(bins=2, warmup=4))
    >>> for t, y in [(1.0, "a"), (2.0, "a"), (3.0, "b"), (4.0, "b")]:
    ...     model.learn_one({"t": t}, y)
    >>> model.cut_points()
    {'t': [2.5]}
    """

    CHOICE = "equal_frequency"


@option(
    _BINS,
    Param("fine_bins", "int", 64, "fine bins per numeric feature, the places a cut point can fall", minimum=2,
          metavar="N"),
    _WARMUP,
)
class MDL(Option):
    """Supervised cut points (Fayyad and Irani's MDL criterion), chosen again as the stream goes on.

    The cut points fall on a fine layer of ``fine_bins`` equal-frequency bins per feature, placed
    from its first ``warmup`` values (see :mod:`stream_nb.stats.store._fine`).

    Parameters
    ----------
    bins
        The equal-frequency quantiles whose nearest fine edges may also cut, where they tell more of the class.
    fine_bins
        Fine bins per feature, >= 2.
    warmup
        Values of a feature read before its fine edges are placed (TAN, SPODE, KDB: also the
        learned events before their first rebuild).

    Examples
    --------
    >>> from stream_nb import AODE, MDL
    >>> model = AODE(numeric=MDL(bins=1, warmup=4, fine_bins=4))
    >>> for v, y in [(1.0, "a"), (2.0, "a"), (3.0, "a"), (4.0, "b"), (5.0, "b"), (6.0, "b")] * 5:
    ...     model.learn_one({"t": v}, y)
    >>> model.cut_points()
    {'t': [3.25]}
    """

    CHOICE = "mdl"


@option(
    Param("edges", "mapping", REQUIRED, "{feature: [edges]}: fixed bin edges of these features", setting=""),
    Param("rest", "option", None, "the discretiser of the other numeric features (None: the model's default)",
          choices=(EqualFrequency, MDL), optional=True, setting=""),
)
class Edges(Option):
    """Fixed bin edges for some features: ``{feature: [increasing edges]}``; the other numeric features
    are cut by ``rest`` (None: the model's default discretiser).

    Parameters
    ----------
    edges
        ``{feature: [edges]}``; ``k`` edges make ``k + 1`` bins.
    rest
        An :class:`EqualFrequency` or :class:`MDL` for the features not in ``edges``.

    Examples
    --------
    >>> from stream_nb import AODE, Edges
    >>> model = AODE(numeric=Edges({"t": [2.0]}))
    >>> model.learn_one({"t": 1.0}, "a")
    >>> model.cut_points()
    {'t': [2.0]}
    """

    def __hash__(self) -> int:  # the edges are a dict
        return hash((type(self).__name__, repr(self.edges), self.rest))


#: What a model that counts numeric features in bins takes as ``numeric``.
BINNED = (EqualFrequency, MDL, Edges)


def binned(numeric: Option, default: Option) -> tuple[Option, dict]:
    """``(discretiser, edges)`` of a binning ``numeric`` option: the :class:`EqualFrequency` or
    :class:`MDL` that cuts the features without fixed edges, and the fixed ``edges``.

    >>> binned(Edges({"t": [1.0]}), MDL())
    (MDL(), {'t': [1.0]})
    """
    if isinstance(numeric, Edges):
        return (default if numeric.rest is None else numeric.rest), numeric.edges
    return numeric, {}


def numeric_from(values: dict, default: Option, bin_defaults: dict) -> Option:
    """The ``numeric`` option the flat settings ``numeric`` (``gaussian``/``bins``), ``discretiser``,
    ``bins``, ``fine_bins``, ``warmup``, ``bin_edges`` and ``var_smoothing`` describe (those given are in
    ``values``), for a model whose default is ``default`` and whose binning defaults are ``bin_defaults``.

    >>> numeric_from({"bins": 7, "discretiser": "equal_frequency"}, MDL(), {"fine_bins": 64})
    EqualFrequency(bins=7)
    >>> numeric_from({"numeric": "bins", "bin_edges": {"t": [1.0]}}, Gaussian(), {"fine_bins": 64})
    Edges(edges={'t': [1.0]}, rest=MDL())
    """
    kind = values.get("numeric")
    if kind is None:
        kind = "gaussian" if isinstance(default, Gaussian) else "bins"
    elif kind not in ("gaussian", "bins"):
        raise ConfigError(f"numeric: expected one of 'gaussian', 'bins', got {kind!r:.60}")
    chosen = {**bin_defaults, **{k: v for k, v in values.items() if v is not None}}
    for p in (*MDL.PARAMS, *Gaussian.PARAMS):
        if p.name in chosen:
            chosen[p.name] = p.check(chosen[p.name], None)  # a flat setting's error names the setting
    if kind == "gaussian":
        if not isinstance(default, Gaussian):
            raise ConfigError(f"numeric: expected 'bins' (this model counts every feature), got {kind!r}")
        return Gaussian(chosen.get("var_smoothing", Gaussian.var_smoothing))
    start = binned(default, MDL())[0] if not isinstance(default, Gaussian) else MDL()
    discretiser = values.get("discretiser") or start.CHOICE
    if discretiser == "mdl":
        cut = MDL(**{p.name: chosen.get(p.name, getattr(MDL, p.name)) for p in MDL.PARAMS})
    elif discretiser == "equal_frequency":
        cut = EqualFrequency(**{p.name: chosen.get(p.name, p.default) for p in EqualFrequency.PARAMS})
    else:
        raise ConfigError(f"discretiser: expected one of 'mdl', 'equal_frequency', got {discretiser!r:.60}")
    edges = values.get("bin_edges")
    return cut if edges is None else Edges(edges, cut)
