"""stream_nb: streaming Bayesian classifiers that learn from every event.

The learners (:mod:`stream_nb.learners`) are river classifiers over one shared
store of additive sufficient statistics (:mod:`stream_nb.stats`):

- :class:`NaiveBayes`: categorical counts with Lidstone smoothing, Gaussian numeric features;
- :class:`AODE`: averaged one-dependence estimators;
- :class:`TAN`: tree-augmented naive Bayes, its tree rebuilt from running counts;
- :class:`SPODE`: one super-parent for every attribute, chosen from the stream;
- :class:`KDB`: each attribute depends on up to k others (Sahami's k-dependence classifier).

:func:`save` and :func:`load` write and read a model as a snapshot file; the
errors every layer raises are in :mod:`stream_nb.exceptions`. Shared behaviour is
given as option objects (:mod:`stream_nb.options`): ``forgetting=Window(...)`` or
``Decay(...)``, ``numeric=Gaussian()``, ``MDL()``, ``EqualFrequency()`` or
``Edges({...})``, ``missing=EM()`` or ``Ignore()``, ``search=Tree()``, ``SuperParent()``,
``Parents()`` or ``SuperParents()``.

>>> from stream_nb import NaiveBayes, AODE, TAN
"""

# No ``from __future__ import annotations`` here: it would be a public name ``stream_nb.annotations``.
from . import exceptions
from ._version import __version__
from .learners import AODE, KDB, SPODE, TAN, NaiveBayes
from .options import EM, MDL, Decay, Edges, EqualFrequency, Gaussian, Ignore, Parents, SuperParent, SuperParents, Tree, Window
from .snapshots import load, save

__all__ = [
    "NaiveBayes", "AODE", "TAN", "SPODE", "KDB",
    "Window", "Decay", "Gaussian", "MDL", "EqualFrequency", "Edges", "EM", "Ignore", "Tree", "SuperParent", "Parents",
    "SuperParents",
    "exceptions", "save", "load",
]
