"""The option objects a model is configured with, each declared once.

Shared behaviour is passed as a small object, as river passes
``drift_detector=ADWIN()``:

- ``forgetting=``: :class:`Window` or :class:`Decay` (default None: no forgetting);
- ``numeric=``: :class:`Gaussian`, :class:`MDL`, :class:`EqualFrequency` or :class:`Edges`;
- ``missing=``: :class:`EM` or :class:`Ignore`;
- ``search=``: :class:`Tree` (TAN) or :class:`SuperParent` (SPODE), how the structure is chosen;
- ``select=``: :class:`Select` (KDB), which attributes and parents the counts show informative.

Each option's parameters are :class:`Param` declarations (constraint, default,
help, the ``stream-nb run`` setting): the constructor, its checks and the
command line's settings are all read from them (:mod:`.model`).
"""

from ._declare import REQUIRED, Option, Param
from .forgetting import Decay, Window
from .missing import EM, Ignore
from .model import FAMILIES, FLAT, OPTIONS, PARAMS, decode_params, encode_params, flat_names, options_from_flat
from .numeric import BINNED, MDL, Edges, EqualFrequency, Gaussian, binned
from .search import SuperParent, Tree
from .selection import Select

__all__ = [
    "BINNED", "EM", "FAMILIES", "FLAT", "MDL", "OPTIONS", "PARAMS", "Decay", "Edges", "EqualFrequency", "Gaussian",
    "Ignore", "Option", "Param", "REQUIRED", "Select", "SuperParent", "Tree", "Window", "binned", "decode_params", "encode_params",
    "flat_names", "options_from_flat",
]
