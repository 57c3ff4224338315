"""The discretisation parameters shared by the models that count numeric features in bins.

AODE, TAN, SPODE, KDB (and NaiveBayes with ``numeric="bins"``) discretise
numeric features online. ``discretiser="mdl"`` (the default): Fayyad and
Irani's MDL cut points, chosen again as the stream goes on, over a fine layer
of ``fine_bins`` equal-frequency bins per feature placed from its first
``warmup`` values (see :mod:`stream_nb.stats._fine`).
``discretiser="equal_frequency"``: ``bins`` equal-frequency bins whose edges
are chosen from the first ``warmup`` values and never move (see
:mod:`stream_nb.stats._discretise`). Either way, ``bin_edges`` fixes some
features' edges up front.
"""

from __future__ import annotations

from .._checks import check_choice, check_integer

__all__ = ["DISCRETISERS", "check_binning"]

#: the ways a numeric feature can be cut into bins
DISCRETISERS = ("mdl", "equal_frequency")


def check_binning(bins, warmup, discretiser="equal_frequency", fine_bins=64) -> None:
    """Raise :class:`~stream_nb.exceptions.ConfigError` unless the discretisation settings are valid.

    >>> check_binning(5, 100)
    >>> check_binning(0, 100)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: bins: expected an integer >= 1, got 0
    >>> check_binning(5, 100, "quantile")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: discretiser: expected one of 'mdl', 'equal_frequency', got 'quantile'
    """
    check_integer("bins", bins, minimum=1)
    check_integer("warmup", warmup, minimum=1)
    check_choice("discretiser", discretiser, DISCRETISERS)
    check_integer("fine_bins", fine_bins, minimum=2)
