"""The classifiers: one estimator per module over one documented base.

Every model is a river classifier and a view of one count store
(:mod:`stream_nb.stats`); what a model adds is how it reads the counts.

=====================  ===========================================================================
module                 what it holds
=====================  ===========================================================================
``_base.py``           :class:`BayesClassifier`: the template (what a subclass provides is listed
                       there), learning, EM's driver, the prequential step of one event
``_step.py``           :func:`prequential_step`: the prequential step of any river classifier
``_keywords.py``       the constructor's options checked in one place; earlier releases' keywords mapped
``_structured.py``     :class:`StructuredClassifier`: a structure rebuilt every ``rebuild_every`` events
``_runs.py``           :class:`~stream_nb.learners._runs.VectorisedRuns`: runs of events scored at once
``_results.py``        :class:`PrequentialResults`: ``prequential_many``'s results of a DataFrame, over arrays
``_decision.py``       the log prior, logsumexp, the posterior, the loss-matrix decision
``_em.py``             EM's E-steps (naive Bayes, one-dependence) and AODE's imputation posterior
``_impute.py``         the posterior of missing attributes and their filling-in (``impute_one``)
``_batches.py``        ``learn_many``, ``predict_proba_many``, ``predict_many``
``_structure.py``      mutual information, conditional mutual information, maximum spanning tree
``naive_bayes.py``     :class:`NaiveBayes`
``aode.py``            :class:`AODE` (and the SPODE terms SPODE shares)
``tan.py``             :class:`TAN`
``spode.py``           :class:`SPODE`
``kdb.py``             :class:`KDB`
=====================  ===========================================================================

To add a model: a module here with a subclass of :class:`BayesClassifier` (or of
:class:`StructuredClassifier`) that defines the abstract methods, listed in
``MODELS`` below and exported by :mod:`stream_nb`.
"""

from ._base import BayesClassifier, Step
from ._step import prequential_step
from ._detectors import DETECTORS
from ._keywords import flat_settings
from ._results import PrequentialResults
from ._runs import RunBlock
from ._structure import conditional_mutual_information, maximum_spanning_tree, mutual_information_with_class
from ._structured import StructuredClassifier
from .aode import AODE
from .kdb import KDB
from .naive_bayes import NaiveBayes
from .spode import SPODE
from .tan import TAN

#: Every model class by name (the name a snapshot records).
MODELS: dict[str, type[BayesClassifier]] = {cls.__name__: cls for cls in (NaiveBayes, AODE, TAN, SPODE, KDB)}

__all__ = [
    "AODE", "DETECTORS", "KDB", "MODELS", "SPODE", "TAN", "BayesClassifier", "NaiveBayes", "PrequentialResults",
    "RunBlock", "Step",
    "StructuredClassifier", "flat_settings",
    "conditional_mutual_information", "maximum_spanning_tree", "mutual_information_with_class",
    "prequential_step",
]
