"""stream_nb: streaming Bayesian classifiers that learn from every event.

The learners are river classifiers over one shared store of additive
sufficient statistics:

>>> from stream_nb import NaiveBayes, AODE, TAN
"""

from __future__ import annotations

from . import exceptions
from .aode import AODE
from .naive_bayes import NaiveBayes

__all__ = ["NaiveBayes", "AODE", "exceptions"]
__version__ = "0.1.0"
