"""The classifiers: one estimator per module over one documented base."""

from ._base import BayesClassifier, StructuredClassifier
from .aode import AODE
from .kdb import KDB
from .naive_bayes import NaiveBayes
from .spode import SPODE
from .tan import TAN

__all__ = ["AODE", "KDB", "NaiveBayes", "SPODE", "TAN", "BayesClassifier", "StructuredClassifier"]
