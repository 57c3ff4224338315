"""The models of ``stream-nb evaluate``: ``--models`` specs, building each as ``stream-nb run`` does, state size."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import orjson

from ...daemon import build_model
from ...exceptions import ConfigError
from ...settings import BY_NAME, MODELS, convert

__all__ = ["ModelSpec", "make_model", "parse_model_specs", "state_bytes"]

_ALL_PARAMS = tuple(dict.fromkeys(p for _, params in MODELS.values() for p in params))


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One entry of ``--models``: the name shown, the model choice and its own parameters."""

    label: str
    model: str
    params: dict


def parse_model_specs(text: str) -> list[ModelSpec]:
    """Parse ``--models``: ``NAME[:PARAM=VALUE...]`` items, comma-separated.

    >>> parse_model_specs("nb,tan:rebuild_every=500:bins=10")
    [ModelSpec(label='nb', model='nb', params={}), ModelSpec(label='tan:rebuild_every=500:bins=10', model='tan', params={'rebuild_every': 500, 'bins': 10})]
    >>> parse_model_specs("nb,svm")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --models: unknown model 'svm' in 'nb,svm'; expected one of nb, aode, tan...
    """
    specs: list[ModelSpec] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, *assignments = (p.strip() for p in item.split(":"))
        if name not in MODELS:
            raise ConfigError(f"--models: unknown model {name!r} in {text!r}; expected one of {', '.join(MODELS)}")
        params: dict = {}
        for assignment in assignments:
            key, sep, value = assignment.partition("=")
            key = key.strip().replace("-", "_")
            if not sep or not key:
                raise ConfigError(f"--models {item}: expected PARAM=VALUE after ':', got {assignment!r}")
            accepted = [p for p in MODELS[name][1] if p != "types"]
            if key not in accepted:
                raise ConfigError(f"--models {item}: {name} takes {', '.join(accepted)} per model, not {key!r}"
                                  + (" (give --types for all models)" if key == "types" else ""))
            params[key] = convert(BY_NAME[key], value.strip(), f"--models {item}: {key}")
        specs.append(ModelSpec(item, name, params))
    if not specs:
        raise ConfigError(f"--models: expected at least one of {', '.join(MODELS)}, got {text!r}")
    labels = [s.label for s in specs]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise ConfigError(f"--models: {', '.join(dup)} listed twice")
    return specs


def make_model(model: str, params: dict | None = None, defaults: dict | None = None):
    """Build a model as ``stream-nb run --model`` does: ``params`` over the ``defaults`` that apply.

    ``defaults`` (the global flags) are given only to the model if it takes them;
    ``params`` must all apply (else :class:`~stream_nb.exceptions.ConfigError`).

    >>> model = make_model("tan", {"rebuild_every": 50}, {"alpha": 0.5, "m": 3})   # m is AODE's: ignored
    >>> type(model).__name__, model.alpha, model.rebuild_every
    ('TAN', 0.5, 50)
    """
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
