"""stream_nb: streaming Bayesian classifiers that learn from every event.

The learners are river classifiers over one shared store of additive
sufficient statistics (:mod:`stream_nb._stats`):

- :class:`NaiveBayes`: categorical counts with Lidstone smoothing, Gaussian numeric features;
- :class:`AODE`: averaged one-dependence estimators;
- :class:`TAN`: tree-augmented naive Bayes, its tree rebuilt from running counts;
- :class:`SPODE`: one super-parent for every attribute, chosen from the stream;
- :class:`KDB`: each attribute depends on up to k others (Sahami's k-dependence classifier).

>>> from stream_nb import NaiveBayes, AODE, TAN
"""

from __future__ import annotations

from . import exceptions
from .aode import AODE
from .kdb import KDB
from .naive_bayes import NaiveBayes
from .spode import SPODE
from ._version import __version__
from .snapshots import load, save
from .tan import TAN

__all__ = ["NaiveBayes", "AODE", "TAN", "SPODE", "KDB", "exceptions", "save", "load"]
