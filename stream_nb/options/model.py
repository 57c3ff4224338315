"""The parameters every model declares once: the plain ones, and the option families with the flat
settings (``stream-nb run``'s flags, the keywords of earlier releases) that describe each.

A model's constructor takes a family's option object (``forgetting=Window(1000)``);
``stream-nb run`` and a snapshot written before the options existed give the
same thing as flat values (``--window 1000``, ``{"window": 1000}``):
:func:`options_from_flat` turns those into the option objects, and
:data:`FLAT` holds the declaration of each flat setting, which
:mod:`stream_nb.settings` makes its rows of.

>>> options_from_flat({"alpha": 0.5, "window": 100, "missing": "ignore"}, {"alpha": 1.0, "forgetting": None,
...                   "missing": EM(), "types": None})
{'alpha': 0.5, 'forgetting': Window(size=100), 'missing': Ignore()}
"""

from __future__ import annotations

import typing

from ..exceptions import ConfigError
from ..stats import DEFAULT_MEMORY_BUDGET
from ._declare import Option, Param
from .forgetting import Decay, Window, window_or_decay
from .missing import EM, Ignore, missing_from
from .numeric import MDL, EqualFrequency, Gaussian, Edges, numeric_from
from .search import FREQUENCY_LIMIT, Parents, SuperParent, SuperParents, Tree

__all__ = ["FAMILIES", "FLAT", "OPTIONS", "PARAMS", "decode_params", "encode_params", "flat_names",
           "options_from_flat"]

#: The plain parameters of the models (each model takes those its constructor names).
PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("alpha", "float", 1.0, "Lidstone smoothing > 0 (1.0 is Laplace's correction)", minimum=0, strict=True,
          metavar="A"),
    Param("k", "int", 2, "most attribute parents per attribute", minimum=0, metavar="K"),
    FREQUENCY_LIMIT,
    Param("max_table_cells", "int", None, "optional hard bound on the (k+1)-way count table; events that "
          "would pass it are dead-lettered as table_full (none: --memory-budget decides)", minimum=1,
          optional=True, metavar="N"),
    Param("max_completions", "int", 4096, "most joint values of missing attributes enumerated per event",
          minimum=1, metavar="N"),
    Param("memory_budget", "int", DEFAULT_MEMORY_BUDGET, "bytes the model's counts may take while dense; tables "
          "that would pass it are kept sparse, holding the same counts (in Python, None: no bound)", minimum=0, optional=True,
          metavar="BYTES"),
    Param("types", "mapping", None, "declare feature types instead of inferring them from the first value "
          "(categorical, numeric, or time: the event's time, not a feature)", optional=True, metavar="FEATURE=categorical|numeric"),
    Param("drift_detector", "detector", None, "river drift detector (or its name) on the prequential error: on a "
          "warning start fresh counts, on a drift switch to them",
          optional=True),
    Param("loss", "mapping", None, "loss matrix {true_label: {predicted_label: cost}}: predict the class of least "
          "expected cost", optional=True),
)}

#: Option family -> the option classes of it.
OPTIONS: dict[str, tuple[type[Option], ...]] = {
    "forgetting": (Window, Decay),
    "numeric": (Gaussian, EqualFrequency, MDL, Edges),
    "missing": (EM, Ignore),
    "search": (Tree, SuperParent, Parents, SuperParents),
}

#: The flat setting choosing a family's class, where one does.
_CHOICES = (
    Param("numeric", "choice", "gaussian", "numeric features as one Gaussian per class, or discretised into "
          "bins", choices=(Gaussian.CHOICE, "bins")),
    Param("discretiser", "choice", "mdl", "mdl (Fayyad and Irani's MDL cut points, moving with the stream) or "
          "equal_frequency (--bins bins from the first --warmup values)",
          choices=(MDL.CHOICE, EqualFrequency.CHOICE)),
    Param("missing", "choice", "em", "learning from events with missing attributes: em (add the expected counts "
          "of the missing values, estimated from the observed values) or ignore (skip them)",
          choices=(EM.CHOICE, Ignore.CHOICE)),
)

#: Family -> its flat settings, in order (``bin_edges`` is the keyword of :class:`Edges`' edges).
FAMILIES: dict[str, tuple[str, ...]] = {
    "forgetting": ("window", "panes", "half_life", "time_field"),
    "numeric": ("var_smoothing", "numeric", "discretiser", "bins", "fine_bins", "warmup", "bin_edges"),
    "missing": ("missing", "learn_unlabeled", "unlabeled_weight"),
    "search": ("tree_score", "parent", "m", "rebuild_every", "backoff", "backoff_to", "select_level", "select_parents",
               "drop_unselected", "select_children"),
}

#: Every flat setting's declaration: the plain parameters, the family choices and the options' parameters.
FLAT: dict[str, Param] = {**PARAMS, **{p.name: p for p in _CHOICES}}
for _classes in OPTIONS.values():
    for _cls in _classes:
        for _p in _cls.PARAMS:
            if _p.setting_name:
                FLAT.setdefault(_p.setting_name, _p)


def flat_names(defaults: dict) -> tuple[str, ...]:
    """The flat settings of a model whose constructor's defaults are ``defaults``, in its parameters' order:
    each plain parameter, and the flat settings of each family it takes (binning only: no ``numeric`` or
    ``var_smoothing``; a structure: those of its default's class).

    Examples
    --------
    >>> flat_names({"alpha": 1.0, "forgetting": None})
    ('alpha', 'window', 'panes', 'half_life', 'time_field')
    """
    out: list[str] = []
    for name, default in defaults.items():
        if name == "numeric" and not isinstance(default, Gaussian):
            out += [n for n in FAMILIES["numeric"] if n not in ("numeric", "var_smoothing", "bin_edges")]
        elif name == "numeric":
            out += [n for n in FAMILIES["numeric"] if n != "bin_edges"]
        elif name == "search":
            out += [p.setting_name for p in type(default).PARAMS]
        elif name in FAMILIES:
            out += FAMILIES[name]
        else:
            out.append(name)
    return tuple(dict.fromkeys(out))


def options_from_flat(flat: dict, defaults: dict, fine_bins: int = 64) -> dict:
    """The constructor's keywords for flat values ``flat`` (``{"window": 1000, "alpha": 0.5}``) of a model
    whose constructor's defaults are ``defaults``: each family's flat settings become its option object.
    ``fine_bins`` is the model's fine bins when its flat ``discretiser`` is ``mdl``.

    ConfigError names a flat setting with a bad value; TypeError one the model does not take.
    """
    def old(n: str) -> bool:  # a flat setting (``missing="em"`` is one; ``missing=EM()`` is not)
        return n in _FLAT_NAMES and (n not in defaults or isinstance(flat[n], str))

    out = {k: v for k, v in flat.items() if k in defaults and not old(k)}
    for family, names in FAMILIES.items():
        given = {n: flat[n] for n in names if n in flat and flat[n] is not None and old(n)}
        if not given:
            continue
        if family not in defaults:
            raise TypeError(f"unexpected keyword argument {next(iter(given))!r}")
        if family == "forgetting":
            out[family] = window_or_decay(given)
            time_field = given.get("time_field")
            if time_field is not None and not isinstance(out[family], Decay):
                # the event's time with no decay (the join's clock): still not a feature
                FLAT["time_field"].check(time_field, None)
                out["types"] = {**(out.get("types") or defaults.get("types") or {}), time_field: "time"}
        elif family == "numeric":
            out[family] = numeric_from(given, defaults["numeric"], {"fine_bins": fine_bins})
        elif family == "missing":
            out[family] = missing_from(given)
        else:
            default = defaults["search"]
            cls = type(default)
            unknown = [n for n in given if n not in {p.setting_name for p in cls.PARAMS}]
            if unknown:
                raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
            out[family] = default.replace(**{p.name: p.check(given[p.setting_name], None) for p in cls.PARAMS
                                             if p.setting_name in given})
    return out


_FLAT_NAMES = frozenset(n for names in FAMILIES.values() for n in names)
_BY_NAME = {cls.__name__: cls for classes in OPTIONS.values() for cls in classes}


def encode_params(params: dict) -> dict:
    """``params`` as plain data: each option object as its :meth:`~Option.to_dict`.

    Examples
    --------
    >>> encode_params({"alpha": 0.5, "forgetting": Window(100, panes=2)})
    {'alpha': 0.5, 'forgetting': {'option': 'Window', 'size': 100, 'panes': 2}}
    """
    def plain(v: typing.Any) -> typing.Any:
        return {k: plain(x) for k, x in v.to_dict().items()} if isinstance(v, Option) else v

    return {k: plain(v) for k, v in params.items()}


def decode_params(params: dict) -> dict:
    """:func:`encode_params` undone: each ``{"option": name, ...}`` becomes the option object again.

    Examples
    --------
    >>> decode_params({"forgetting": {"option": "Window", "size": 100, "panes": 2}})
    {'forgetting': Window(size=100, panes=2)}
    """
    def obj(v: typing.Any) -> typing.Any:
        if isinstance(v, dict) and isinstance(v.get("option"), str):
            cls = _BY_NAME.get(v["option"])
            if cls is None:
                raise ConfigError(f"option: expected one of {', '.join(_BY_NAME)}, got {v['option']!r:.60}")
            return cls(**{k: obj(x) for k, x in v.items() if k != "option"})
        return v

    return {k: obj(v) for k, v in params.items()}
