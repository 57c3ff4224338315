"""How an option declares its parameters once: the constraint, the default, the help and the setting.

Every parameter of an option object (and every plain model parameter) is one
:class:`Param`: what values it takes (``kind``, bounds, choices), its help
line, and the name of the ``stream-nb run`` setting that gives it (its flag
``--name``, variable ``STREAM_NB_NAME`` and TOML key ``name``). The check of a
value (:meth:`Param.check`), the settings rows (:mod:`stream_nb.settings`) and
the documentation all read these declarations, as scikit-learn's
``_parameter_constraints`` are read.

>>> p = Param("bins", "int", 5, "equal-frequency bins per numeric feature", minimum=1)
>>> p.check(3, "EqualFrequency")
3
>>> p.check(0, "EqualFrequency")
Traceback (most recent call last):
...
stream_nb.exceptions.ConfigError: EqualFrequency(bins=...): expected an integer >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import typing

from ..exceptions import ConfigError

__all__ = ["REQUIRED", "Option", "Param", "option"]

#: The default of a parameter that has none: it must be given.
REQUIRED = dataclasses.MISSING


@dataclasses.dataclass(frozen=True)
class Param:
    """One declared parameter.

    Parameters
    ----------
    name
        The parameter's name (the option's attribute, or the model's keyword).
    kind
        ``"int"``, ``"float"``, ``"str"``, ``"bool"``, ``"choice"``, ``"mapping"``, ``"option"``
        (an instance of one of the classes ``choices``) or ``"detector"`` (a river drift detector or
        its name, checked when the learner makes it).
    default
        The value when none is given.
    help
        One line saying what it does (the ``--help`` of its setting).
    minimum, strict
        Lower bound of a number (``strict``: exclusive).
    choices
        The values a ``"choice"`` takes.
    optional
        ``None`` is a value too (meaning: none, off).
    setting
        The name of the ``stream-nb run`` setting giving it (``""``: none); default: ``name``.
    metavar
        The placeholder of its flag's value in ``--help``.
    """

    name: str
    kind: str
    default: typing.Any
    help: str
    minimum: float | None = None
    strict: bool = False
    choices: tuple = ()
    optional: bool = False
    setting: str | None = None
    metavar: str | None = None

    @property
    def setting_name(self) -> str:
        """The settings' name of this parameter (``""``: it has no setting)."""
        return self.name if self.setting is None else self.setting

    def expected(self) -> str:
        """What a value must be, in words."""
        kind = self.kind
        if kind == "int":
            text = "an integer" + ("" if self.minimum is None else f" >= {self.minimum:g}")
        elif kind == "float":
            bound = "" if self.minimum is None else f" {'>' if self.strict else '>='} {self.minimum:g}"
            text = "a finite number" + bound
        elif kind == "bool":
            text = "True or False"
        elif kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif kind == "mapping":
            text = "a dict"
        elif kind == "detector":
            text = "a river drift detector or its name"
        elif kind == "option":
            text = " or ".join(c.__name__ for c in self.choices)
        else:
            text = "a non-empty string"
        return text + (" or None" if self.optional else "")

    def check(self, value: typing.Any, owner: str | None) -> typing.Any:
        """``value`` if it is one this parameter takes (an integer as ``int``), else
        :class:`~stream_nb.exceptions.ConfigError` naming ``owner(name=...)`` (no ``owner``: the
        setting's name, as a flat setting or keyword gives it), what was expected and what came."""
        if value is None and self.optional:
            return None
        kind, ok = self.kind, False
        if kind in ("int", "float"):
            real = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if kind == "int":
                ok = real and float(value).is_integer() and isinstance(value, numbers.Integral)
            else:
                ok = real and math.isfinite(value)
            if ok and self.minimum is not None:
                ok = value > self.minimum if self.strict else value >= self.minimum
            if ok:
                return int(value) if kind == "int" else value
        elif kind == "bool":
            ok = isinstance(value, bool)
        elif kind == "choice":
            ok = not isinstance(value, bool) and value in self.choices
        elif kind == "mapping":
            ok = isinstance(value, dict)
        elif kind == "option":
            ok = isinstance(value, self.choices)
        elif kind == "detector":
            return value  # a river detector or a name: the learners make it (learners._detectors.make_detector)
        else:
            ok = isinstance(value, str) and bool(value)
        if not ok:
            where = self.setting_name if owner is None else f"{owner}({self.name}=...)"
            raise ConfigError(f"{where}: expected {self.expected()}, got {value!r:.80}")
        return value


def option(*params: Param):
    """Make the decorated :class:`Option` subclass a frozen dataclass whose fields are ``params``, in order:
    the parameters are declared once, here, and the constructor, the checks and the settings read them."""

    def make(cls: type) -> type:
        cls.PARAMS = params
        cls.__annotations__ = {p.name: typing.Any for p in params}
        for p in params:
            if p.default is not REQUIRED:
                setattr(cls, p.name, p.default)
        return dataclasses.dataclass(frozen=True, repr=False)(cls)

    return make


class Option:
    """Base of the option objects: their parameters are :attr:`PARAMS`, checked when one is made.

    A subclass is declared with :func:`option` (a frozen dataclass whose fields are its
    :attr:`PARAMS`, in order); it may add :meth:`_check_together` for a constraint between two of them. Options are equal when
    their parameters are, and :meth:`to_dict` / :func:`~stream_nb.options.option_from_dict` write
    and read them as plain data (a snapshot's parameters).
    """

    #: The declared parameters, in the order of the constructor's.
    PARAMS: typing.ClassVar[tuple[Param, ...]] = ()
    #: The value of the family's choice setting (``--numeric``, ``--discretiser``, ``--missing``) that picks
    #: this class, if one does.
    CHOICE: typing.ClassVar[str | None] = None

    def __post_init__(self) -> None:
        name = type(self).__name__
        for p in self.PARAMS:
            object.__setattr__(self, p.name, p.check(getattr(self, p.name), name))
        self._check_together()

    def _check_together(self) -> None:
        """ConfigError unless the parameters agree with each other; default: nothing to check."""

    def to_dict(self) -> dict:
        """``{"option": class name, parameter: value, ...}``: JSON-able when the values are."""
        return {"option": type(self).__name__, **{p.name: getattr(self, p.name) for p in self.PARAMS}}

    def replace(self, **changes) -> Option:
        """A copy with ``changes`` (checked as any new option is)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        given = [f"{p.name}={getattr(self, p.name)!r}" for p in self.PARAMS
                 if p.default is REQUIRED or getattr(self, p.name) != p.default]
        return f"{type(self).__name__}({', '.join(given)})"
