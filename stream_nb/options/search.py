"""How TAN, SPODE and KDB choose their structure, and how often they choose it again.

Pass one as ``search=``: :class:`Tree` to :class:`~stream_nb.TAN`,
:class:`SuperParent` to :class:`~stream_nb.SPODE`, :class:`Parents` to
:class:`~stream_nb.KDB`, :class:`SuperParents` to :class:`~stream_nb.AODE`. Each is rebuilt every
``rebuild_every`` learned events, and early: after the numeric option's
``warmup`` events and each time the count doubles below ``rebuild_every``
(see :class:`~stream_nb.learners.StructuredClassifier`).

>>> from stream_nb import TAN, Tree
>>> TAN(search=Tree(score="cmi", rebuild_every=500)).search
Tree(score='cmi', rebuild_every=500)
"""

from __future__ import annotations

from ..exceptions import ConfigError
from ._declare import Option, Param, option

__all__ = ["FREQUENCY_LIMIT", "REBUILD_EVERY", "Parents", "SuperParent", "SuperParents", "Tree"]

#: Learned events between two rebuilds (each search's ``rebuild_every``).
REBUILD_EVERY = Param(
    "rebuild_every", "int", 1000, "rebuild the structure (or re-choose the super-parent) every N learned "
    "events, early ones from --warmup on (0: only on rebuild())", minimum=0, metavar="N")

#: The frequency limit of a super-parent (AODE's in :class:`SuperParents`, SPODE's as a model parameter).
FREQUENCY_LIMIT = Param("m", "int", 1, "a value is a parent only once seen in M events", minimum=0, metavar="M")


def _check_level(option: Option) -> None:
    """ConfigError unless ``option.select`` (a test's level) is None or below 1."""
    if option.select is not None and option.select >= 1:
        raise ConfigError(f"{type(option).__name__}(select=...): expected a number below 1, got {option.select!r}")


@option(
    Param("score", "choice", "bayes", "how a rebuild weighs an edge: conditional mutual information (cmi) or "
          "the gain in the Bayesian network score, as Weka's TAN (bayes)",
          choices=("cmi", "bayes"), setting="tree_score"),
    REBUILD_EVERY,
    Param("backoff", "float", None, "an attribute's estimate given its tree parent backs off toward "
          "--backoff-to's with weight M where the parent value is rare (none: Lidstone's)", minimum=0, strict=True,
          optional=True, metavar="M"),
    Param("backoff_to", "choice", "parent", "what a thin cell backs off toward: the attribute given its parent over "
          "all classes (parent) or given the class alone (class)", choices=("parent", "class")),
)
class Tree(Option):
    """TAN's tree: the maximum spanning tree of the edge weights ``score``, rebuilt every ``rebuild_every`` events.

    Parameters
    ----------
    score
        ``"bayes"``: the gain in the local Bayesian-Dirichlet score, which charges an edge for the
        cells it adds (Weka's ``BayesNet`` TAN weight); ``"cmi"``: the conditional mutual information
        I(x_i; x_j | y) (Friedman et al.), which charges nothing.
    rebuild_every
        Learned events between two rebuilds (0: only on :meth:`~stream_nb.TAN.rebuild`).
    backoff
        None (default): each attribute's estimate given its tree parent is Lidstone's,
        (|D_c,u,v| + alpha) / (|D_c,u| + alpha N). A number m > 0: the m-estimate
        (|D_c,u,v| + m P̂) / (|D_c,u| + m), which backs off toward P̂ where the parent value was
        seen in few events of the class (see :mod:`stream_nb.learners._backoff`).
    backoff_to
        P̂ of the back-off: ``"parent"`` (default), P̂(v | u) over all classes; ``"class"``,
        P̂(v | c), the attribute's class-conditional estimate.

    Examples
    --------
    >>> from stream_nb import TAN, Tree
    >>> Tree(score="gain")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: Tree(score=...): expected one of 'cmi', 'bayes', got 'gain'
    """


@option(
    Param("parent", "str", None, "the super-parent attribute (unset or None: chosen from the stream, the lowest "
          "running log loss at each rebuild)", optional=True, metavar="FEATURE"),
    REBUILD_EVERY,
)
class SuperParent(Option):
    """SPODE's super-parent: a fixed feature, or (``parent=None``) the one of lowest running log loss,
    chosen again every ``rebuild_every`` learned events.

    Parameters
    ----------
    parent
        The super-parent's name, or None to choose it from the stream.
    rebuild_every
        Learned events between two choices (0: only on :meth:`~stream_nb.SPODE.rebuild`).

    Examples
    --------
    >>> from stream_nb import SPODE, SuperParent
    >>> SPODE(search=SuperParent("outlook")).search
    SuperParent(parent='outlook')
    """


@option(
    REBUILD_EVERY,
    Param("select", "float", None, "selective KDB: keep only the attributes and parents that G-tests at level A "
          "show informative (none: every attribute with its --k parents)",
          minimum=0, strict=True, optional=True, setting="select_level", metavar="A"),
)
class Parents(Option):
    """KDB's parents: each attribute's (up to ``k``) parents chosen again every ``rebuild_every`` learned
    events, and with ``select`` only the attributes and parents the counts show informative.

    Parameters
    ----------
    rebuild_every
        Learned events between two rebuilds (0: only on :meth:`~stream_nb.KDB.rebuild`).
    select
        None (default): every attribute, each with its ``k`` parents. A significance level in (0, 1):
        selective KDB, keeping only the attributes and parents that G-tests at that level (shared among
        the tests) show informative; 0.01 is a usual level (see the docs' *Options* page).

    Examples
    --------
    >>> from stream_nb import KDB, Parents
    >>> KDB(k=2, search=Parents(select=0.05)).search
    Parents(select=0.05)
    >>> Parents(select=1.5)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: Parents(select=...): expected a number below 1, got 1.5
    """

    def _check_together(self) -> None:
        _check_level(self)


@option(
    FREQUENCY_LIMIT,
    Param("select", "float", None, "selective AODE (none: off, every attribute a super-parent): an attribute is a "
          "super-parent only when the G-test of its dependence on the class rejects independence at level A shared "
          "among the attributes; chosen again every --rebuild-every events",
          minimum=0, strict=True, optional=True, setting="select_parents", metavar="A"),
    REBUILD_EVERY,
    Param("drop", "bool", False, "selective AODE: an attribute not kept as a super-parent is left out of the model "
          "altogether, no child either (counted all the same)", setting="drop_unselected"),
    Param("children", "float", None, "each SPODE conditions on its super-parent only the attributes that the G-test "
          "of their dependence given the class shows dependent on it, at level A shared among the pairs; the others "
          "it estimates given the class alone, as naive Bayes (none: every attribute)",
          minimum=0, strict=True, optional=True, setting="select_children", metavar="A"),
)
class SuperParents(Option):
    """AODE's super-parents: the values seen in at least ``m`` events, and with ``select`` only those of the
    attributes the counts show informative of the class, chosen again every ``rebuild_every`` learned events.

    Parameters
    ----------
    m
        Frequency limit: an attribute value is a super-parent only when seen in at least ``m`` events (the
        textbook suggests 30; 1 is Weka's default).
    select
        None (default): every attribute is a super-parent. A significance level in (0, 1): selective AODE.
        Every ``rebuild_every`` learned events an attribute is kept as a super-parent when the likelihood-ratio
        (G) test of its independence of the class, :math:`2 n I(x_p; y)` against the chi-square quantile with
        :math:`(|C| - 1)(|X_p| - 1)` degrees of freedom, rejects it at level ``select`` shared among the
        attributes (Bonferroni); an attribute not kept is still a child in every kept one's estimator (with
        ``drop``, not: it is left out of the model, as in Chen et al.'s selective AnDE). Until the
        first choice every attribute is a super-parent; when none passes, the model predicts by naive Bayes
        over the same counts, as when no value passes ``m``. The choice is made from the counts alone (see
        :mod:`stream_nb.learners._selection`), so merged models and snapshots keep their guarantees.
    rebuild_every
        Learned events between two choices (0: only on :meth:`~stream_nb.AODE.rebuild`); read only with
        ``select``.
    drop
        With ``select``: leave the attributes not kept out of every estimator as children too (False: they
        stay children). They are counted all the same, so a later choice may take them back.
    children
        None (default): each SPODE estimates every other attribute given the class and its super-parent. A
        significance level in (0, 1): every ``rebuild_every`` learned events the pairs of attributes whose
        G-test, :math:`2 n I(x_i; x_j | y)` against the chi-square quantile with
        :math:`|C| (|X_i| - 1)(|X_j| - 1)` degrees of freedom, rejects their independence given the class at
        level ``children`` shared among the pairs (Bonferroni) are chosen, and a SPODE estimates P(x_i | y, x_p)
        only for those; any other attribute it estimates by P(x_i | y), as naive Bayes does. On many attributes
        each SPODE otherwise sums the noise of hundreds of pair estimates that say nothing more than the class
        does. Until the first choice every pair is estimated; the choice is a function of the counts alone, so
        merges and snapshots keep their guarantees. EM's expected counts are made as without it (counts serve
        any later choice).

    Examples
    --------
    >>> from stream_nb import AODE, SuperParents
    >>> AODE(search=SuperParents(m=30, select=0.01)).search
    SuperParents(m=30, select=0.01)
    >>> SuperParents(select=1.0)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: SuperParents(select=...): expected a number below 1, got 1.0
    """

    def _check_together(self) -> None:
        _check_level(self)
        if self.children is not None and self.children >= 1:
            raise ConfigError(f"SuperParents(children=...): expected a number below 1, got {self.children!r}")
