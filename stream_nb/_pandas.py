"""pandas, imported on first use.

Only the mini-batch methods (``learn_many``, ``predict_proba_many``, ...) take
DataFrames, and a caller of those has pandas loaded already. The daemon and
the command line never need it, and importing it would be about a third of
their start-up, paid by every ``stream-nb`` invocation. ``pd.X`` imports
pandas the first time it is read and is pandas' ``X`` from then on.
"""

from __future__ import annotations

import importlib

__all__ = ["pd"]


class _Pandas:
    """Stands for the pandas module until an attribute is read (then pandas is imported)."""

    __slots__ = ()

    def __getattr__(self, name: str):
        return getattr(importlib.import_module("pandas"), name)  # heavy: imported on first use only

    def __repr__(self) -> str:
        return "<pandas, imported on first use>"


pd = _Pandas()
