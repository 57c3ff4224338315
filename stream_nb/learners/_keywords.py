"""A model's constructor: its options checked in one place, and the keywords of earlier releases mapped.

Every model's ``__init__`` is wrapped by :func:`takes_options`: a keyword of the
flat parameter list of earlier releases (``window=1000``, ``bins=7``,
``missing="ignore"``) still works for one release, with a
:class:`DeprecationWarning` saying what to write instead (``forgetting=Window(size=1000)``);
:func:`check_options` checks every parameter against its one declaration
(:mod:`stream_nb.options`).
"""

from __future__ import annotations

import functools
import inspect
import warnings

from ..options import FAMILIES, FLAT, MDL, REQUIRED, OPTIONS, PARAMS, Gaussian, Option, binned, flat_names, options_from_flat

__all__ = ["check_options", "defaults_of", "flat_settings", "model_defaults", "takes_options"]

_FLAT = frozenset(n for names in FAMILIES.values() for n in names)


def defaults_of(init) -> dict:
    """``{parameter: default}`` of a constructor, in order."""
    return {n: p.default for n, p in inspect.signature(init).parameters.items() if n != "self"}


def model_defaults(cls) -> dict:
    """``{parameter: default}`` of a model class, with the option each None default stands for
    (``cls._option_defaults``: ``numeric=None`` is naive Bayes' ``Gaussian()``)."""
    return {**defaults_of(cls.__init__), **getattr(cls, "_option_defaults", {})}


def takes_options(init):
    """Wrap a model's ``__init__`` so that the flat keywords of earlier releases map to its options, with a
    DeprecationWarning naming what to write instead (the wrapped signature is the new one: river's
    ``clone`` and ``_get_params`` read it)."""
    defaults = defaults_of(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        old = [k for k in kwargs if k in _FLAT and (k not in defaults or isinstance(kwargs[k], str))]
        if old:
            name = type(self).__name__
            given = {k: kwargs.pop(k) for k in old}
            own = model_defaults(type(self))
            try:
                new = options_from_flat(given, {k: v if kwargs.get(k) is None else kwargs[k] for k, v in own.items()},
                                        getattr(type(self), "_mdl_fine_bins", 64))
            except TypeError as exc:  # a flat keyword of a family this model does not take
                raise TypeError(f"{name}.__init__() got an {exc}") from None
            both = [k for k in new if k in OPTIONS and kwargs.get(k) is not None]
            if both:  # which one the user meant is a guess: e.g. numeric=MDL(fine_bins=8) with bins=3
                olds = ", ".join(k for k in given if k in FAMILIES.get(both[0], ()))
                raise TypeError(f"{name}() got {both[0]}={kwargs[both[0]]!r} and the deprecated {olds}: give "
                                f"one; write {name}({both[0]}={new[both[0]]!r}) with the values in the option")
            words = ", ".join(f"{k}={v!r}" for k, v in new.items())
            warnings.warn(f"{name}({', '.join(f'{k}={v!r}' for k, v in given.items())}) is deprecated and will be "
                          f"removed in the next release; write {name}({words})", DeprecationWarning, stacklevel=2)
            kwargs.update(new)
        init(self, *args, **kwargs)

    return wrapper


def check_options(model) -> None:
    """Check each constructor parameter of ``model`` against its declaration; raise ConfigError (a value out
    of range) or TypeError (a value of the wrong kind, e.g. a number where an option object goes), each
    naming the parameter, what was expected and what was received."""
    name = type(model).__name__
    for param, default in getattr(type(model), "_option_defaults", {}).items():
        if getattr(model, param, None) is None:
            setattr(model, param, default)  # options are frozen: one default object may be shared
    for param, default in model_defaults(type(model)).items():
        value = getattr(model, param)
        if param in PARAMS:
            setattr(model, param, PARAMS[param].check(value, None))
        elif param in OPTIONS:
            kinds = getattr(type(model), "_accepts", {}).get(param) or OPTIONS[param]
            if value is None and default is None:
                continue
            if not isinstance(value, kinds):
                words = " or ".join(c.__name__ for c in kinds) + (" or None" if default is None else "")
                hint = _hint(param, kinds)
                raise TypeError(f"{name}({param}=...): expected {words}, got {value!r:.60}{hint}")


#: How each option class is written in a hint (a value of the wrong kind: what to write instead).
_EXAMPLES = {"Window": "Window(1000)", "Decay": "Decay(half_life=500)", "Gaussian": "Gaussian()", "MDL": "MDL()",
             "EqualFrequency": "EqualFrequency(bins=5)", "Edges": "Edges({...})", "EM": "EM()", "Ignore": "Ignore()",
             "Tree": "Tree(...)", "SuperParent": "SuperParent(...)", "Parents": "Parents(...)",
             "SuperParents": "SuperParents(...)"}


def _hint(param: str, kinds: tuple) -> str:
    """What to write instead of a value of the wrong kind (often an earlier release's value of the same name)."""
    return f"; write {param}=" + " or ".join(_EXAMPLES.get(c.__name__, c.__name__ + "(...)") for c in kinds)


def flat_settings(cls) -> dict:
    """``{flat setting: the model's default}`` of a model class, in its parameters' order: the
    ``stream-nb run`` settings it takes (:data:`stream_nb.settings.MODELS`), read off its constructor.

    >>> from stream_nb import KDB
    >>> flat = flat_settings(KDB)
    >>> flat["discretiser"], flat["fine_bins"], flat["window"], flat["missing"]
    ('equal_frequency', 16, None, 'em')
    """
    defaults = model_defaults(cls)
    values: dict = {}
    for name, default in defaults.items():
        if isinstance(default, Option):
            for p in type(default).PARAMS:
                values[p.setting_name] = getattr(default, p.name)
            if name == "numeric":
                cut = MDL(fine_bins=cls._mdl_fine_bins) if isinstance(default, Gaussian) else binned(default, cls._default_cut)[0]
                values.update(numeric=default.CHOICE or "bins", discretiser=cut.CHOICE, bins=cut.bins,
                              fine_bins=getattr(cut, "fine_bins", cls._mdl_fine_bins), warmup=cut.warmup)
            elif name == "missing":
                values["missing"] = default.CHOICE
        elif default is None and name in FAMILIES:
            values.update({n: None if FLAT[n].default is REQUIRED else FLAT[n].default for n in FAMILIES[name]})
        else:
            values[name] = default
    return {n: values.get(n, FLAT[n].default if n in FLAT else None) for n in flat_names(defaults)}
