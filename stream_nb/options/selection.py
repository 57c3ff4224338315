"""Which attributes and parents a model keeps on wide data: the ones the counts show informative.

Pass one as ``select=`` to :class:`~stream_nb.KDB` (default None: every
attribute, each with its ``k`` parents). The selection is made at each
rebuild from the counts alone (see :mod:`stream_nb.learners._selection`),
so merged models and snapshots keep their guarantees.

>>> from stream_nb import KDB, Select
>>> KDB(select=Select()).select
Select()
>>> Select(level=1.5)
Traceback (most recent call last):
...
stream_nb.exceptions.ConfigError: Select(level=...): expected a number below 1, got 1.5
"""

from __future__ import annotations

from ..exceptions import ConfigError
from ._declare import Option, Param, option

__all__ = ["Select"]


@option(
    Param("level", "float", 0.01, "selective KDB, off unless given (the default shown is Select()'s): keep only "
          "the attributes that tell more of the class than the earlier attribute they depend on most, and the "
          "parents dependent on their attribute given the class, by G-tests at level A shared among the tests", minimum=0, strict=True, setting="select_level",
          metavar="A"),
)
class Select(Option):
    """Selective KDB: the attributes and the parents kept are those whose G-tests pass at ``level``.

    At each rebuild, in the order of I(x_f; y): an attribute is kept when the G-test rejects its
    independence of the class given the earlier attribute it depends on most (the first: of the
    class alone), and its (up to ``k``) candidate parents of highest I(x_f; x_g | y) among the
    attributes kept are kept when the G-test rejects their independence given the class; an
    attribute not kept is left out of the product. Both tests at ``level`` shared among the tests
    of their kind (Bonferroni).

    Parameters
    ----------
    level
        Significance level of the tests, in (0, 1): lower keeps fewer attributes and parents.

    Examples
    --------
    >>> from stream_nb import KDB, Select
    >>> KDB(k=2, select=Select(level=0.05)).select
    Select(level=0.05)
    """

    def _check_together(self) -> None:
        if self.level >= 1:
            raise ConfigError(f"Select(level=...): expected a number below 1, got {self.level!r}")
