"""The option objects a model is configured with, each declared once.

Shared behaviour is passed as a small object, as river passes
``drift_detector=ADWIN()``:

- ``forgetting=``: :class:`Window` or :class:`Decay` (default None: no forgetting);
- ``numeric=``: :class:`Gaussian`, :class:`MDL`, :class:`EqualFrequency` or :class:`Edges`;
- ``missing=``: :class:`EM` or :class:`Ignore`;
- ``search=``: :class:`Tree` (TAN), :class:`SuperParent` (SPODE), :class:`Parents` (KDB) or
  :class:`SuperParents` (AODE), how the structure is chosen (KDB's and AODE's: with ``select``, only the
  attributes and parents the counts show informative).

Each option's parameters are :class:`Param` declarations (constraint, default,
help, the ``stream-nb run`` setting): the constructor, its checks and the
command line's settings are all read from them (:mod:`.model`).
"""

from ._declare import REQUIRED, Option, Param
from .forgetting import Decay, Window
from .missing import EM, Ignore
from .model import FAMILIES, FLAT, OPTIONS, PARAMS, decode_params, encode_params, flat_names, options_from_flat
from .numeric import BINNED, MDL, Edges, EqualFrequency, Gaussian, binned
from .search import Parents, SuperParent, SuperParents, Tree

__all__ = [
    "BINNED", "EM", "FAMILIES", "FLAT", "MDL", "OPTIONS", "PARAMS", "Decay", "Edges", "EqualFrequency", "Gaussian",
    "Ignore", "Option", "Param", "Parents", "REQUIRED", "SuperParent", "SuperParents", "Tree", "Window", "binned", "decode_params", "encode_params",
    "flat_names", "options_from_flat",
]
