"""The models of ``stream-nb evaluate``: ``--models`` specs, building each as ``stream-nb run`` does, state size.

A name with a dot is a *peer*: any classifier named by its import path,
``MODULE.CLASS`` (``river.naive_bayes.GaussianNB``), built with the parameters
given after ``:`` (``river.tree.HoeffdingTreeClassifier:grace_period=100``).
Each value is read as a Python literal (``100``, ``0.5``, ``True``, ``None``,
``'gini'``), else taken as the text itself (``split_criterion=gini``). The
class must take every parameter named, and its instances must have
``predict_one``, ``predict_proba_one`` and ``learn_one``. The global model
flags (``--alpha``, ...) are stream_nb's and do not apply to a peer.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import typing

import numpy as np
import orjson

from ...daemon import build_model
from ...exceptions import ConfigError
from ...settings import BY_NAME, MODELS, convert

__all__ = ["ModelSpec", "is_peer", "make_model", "parse_model_specs", "state_bytes"]

_ALL_PARAMS = tuple(dict.fromkeys(p for _, params in MODELS.values() for p in params))


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One entry of ``--models``: the name shown, the model choice and its own parameters."""

    label: str
    model: str
    params: dict


def parse_model_specs(text: str) -> list[ModelSpec]:
    """Parse ``--models``: ``NAME[:PARAM=VALUE...]`` items, comma-separated; a NAME with a dot is a peer's
    import path (see the module notes).

    >>> parse_model_specs("nb,tan:rebuild_every=500:bins=10")
    [ModelSpec(label='nb', model='nb', params={}), ModelSpec(label='tan:rebuild_every=500:bins=10', model='tan', params={'rebuild_every': 500, 'bins': 10})]
    >>> parse_model_specs("river.tree.HoeffdingTreeClassifier:grace_period=100:split_criterion=gini")[0].params
    {'grace_period': 100, 'split_criterion': 'gini'}
    >>> parse_model_specs("nb,svm")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --models: unknown model 'svm' in 'nb,svm'; expected one of nb, aode, tan..., or a classifier's import path such as river.naive_bayes.GaussianNB
    """
    specs: list[ModelSpec] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, *assignments = (p.strip() for p in item.split(":"))
        if is_peer(name):
            specs.append(ModelSpec(item, name, _peer_params(item, assignments)))
            continue
        if name not in MODELS:
            raise ConfigError(f"--models: unknown model {name!r} in {text!r}; expected one of {', '.join(MODELS)}, "
                              "or a classifier's import path such as river.naive_bayes.GaussianNB")
        params: dict = {}
        for assignment in assignments:
            key, value = _assignment(item, assignment)
            accepted = [p for p in MODELS[name][1] if p != "types"]
            if key not in accepted:
                raise ConfigError(f"--models {item}: {name} takes {', '.join(accepted)} per model, not {key!r}"
                                  + (" (give --types for all models)" if key == "types" else ""))
            params[key] = convert(BY_NAME[key], value, f"--models {item}: {key}")
        specs.append(ModelSpec(item, name, params))
    if not specs:
        raise ConfigError(f"--models: expected at least one of {', '.join(MODELS)} or an import path, got {text!r}")
    labels = [s.label for s in specs]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise ConfigError(f"--models: {', '.join(dup)} listed twice")
    return specs


def is_peer(name: str) -> bool:
    """Whether a ``--models`` name is a peer's import path (it has a dot) rather than a ``--model`` choice.

    Examples
    --------
    >>> is_peer("river.tree.HoeffdingTreeClassifier"), is_peer("tan")
    (True, False)
    """
    return "." in name


def _assignment(item: str, assignment: str) -> tuple[str, str]:
    key, sep, value = assignment.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key:
        raise ConfigError(f"--models {item}: expected PARAM=VALUE after ':', got {assignment!r}")
    return key, value.strip()


def _peer_params(item: str, assignments: list[str]) -> dict:
    params: dict = {}
    for assignment in assignments:
        key, text = _assignment(item, assignment)
        try:
            params[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            params[key] = text  # not a literal: the text itself
    return params


def _make_peer(path: str, params: dict):
    """Import the class ``path`` names and build it with ``params`` (see the module notes)."""
    where = f"--models {path}"
    module_name, _, class_name = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)  # the module the user named, not one of ours
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import the module {module_name!r}: {exc}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise ConfigError(f"{where}: expected a class {class_name!r} in the module {module_name}, "
                          f"got {'nothing' if cls is None else type(cls).__name__}")
    missing = [m for m in ("predict_one", "predict_proba_one", "learn_one") if not callable(getattr(cls, m, None))]
    if missing:
        raise ConfigError(f"{where}: expected a classifier with predict_one, predict_proba_one and learn_one; "
                          f"{class_name} lacks {', '.join(missing)}")
    accepted = [p.name for p in inspect.signature(cls).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in params if k not in accepted]
    if unknown:
        raise ConfigError(f"{where}: {class_name} takes {', '.join(accepted) or 'no parameters'}, "
                          f"not {', '.join(map(repr, unknown))}")
    try:
        return cls(**params)
    except Exception as exc:  # noqa: BLE001 - any error of a third-party constructor is a bad setting here
        raise ConfigError(f"{where}: {class_name}({', '.join(f'{k}={v!r}' for k, v in params.items())}) "
                          f"failed: {type(exc).__name__}: {exc}") from None


def make_model(model: str, params: dict | None = None, defaults: dict | None = None):
    """Build a model as ``stream-nb run --model`` does: ``params`` over the ``defaults`` that apply;
    or a peer, ``model`` an import path (the ``defaults`` do not apply to it).

    ``defaults`` (the global flags) are given only to the model if it takes them;
    ``params`` must all apply (else :class:`~stream_nb.exceptions.ConfigError`).

    >>> model = make_model("tan", {"rebuild_every": 50}, {"alpha": 0.5, "m": 3})   # m is AODE's: ignored
    >>> type(model).__name__, model.alpha, model.rebuild_every
    ('TAN', 0.5, 50)
    >>> make_model("river.tree.HoeffdingTreeClassifier", {"grace_period": 100}).grace_period
    100
    >>> make_model("river.naive_bayes.GaussianNB", {"alpha": 1})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --models river.naive_bayes.GaussianNB: GaussianNB takes no parameters, not 'alpha'
    """
    if is_peer(model):
        return _make_peer(model, params or {})
    accepted = MODELS[model][1]
    settings: dict[str, typing.Any] = {p: None for p in _ALL_PARAMS}
    settings.update({k: v for k, v in (defaults or {}).items() if k in accepted and v not in (None, {})})
    settings.update(params or {})
    settings["model"] = model
    return build_model(settings)


def state_bytes(model) -> int:
    """Bytes of the model's state: ``nbytes`` of every array of ``model.state()[0]`` + the JSON length of the meta.

    >>> from stream_nb import NaiveBayes
    >>> state_bytes(NaiveBayes()) > 0
    True
    """
    arrays, meta = model.state()
    size = sum(int(np.asarray(a).nbytes) for a in arrays.values())
    return size + len(orjson.dumps(meta, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY))
