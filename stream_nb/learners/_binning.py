"""The discretisation parameters shared by the models that count numeric features in bins.

AODE, TAN, SPODE and KDB discretise numeric features online (see
:mod:`stream_nb.stats._discretise`): ``bins`` equal-frequency bins whose edges
are chosen from the first ``warmup`` values, or given up front in ``bin_edges``.
"""

from __future__ import annotations

from .._checks import check_integer

__all__ = ["check_binning"]


def check_binning(bins, warmup) -> None:
    """Raise :class:`~stream_nb.exceptions.ConfigError` unless ``bins`` and ``warmup`` are integers >= 1.

    >>> check_binning(5, 100)
    >>> check_binning(0, 100)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: bins: expected an integer >= 1, got 0
    """
    check_integer("bins", bins, minimum=1)
    check_integer("warmup", warmup, minimum=1)
