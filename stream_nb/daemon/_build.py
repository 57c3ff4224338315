"""Building the daemon's pieces from the settings: the model (with its loss file), the engine's config, the operations."""

from __future__ import annotations

import re
import typing

import orjson

import stream_nb

from ..engine import check_config
from ..exceptions import ConfigError
from ..ops import Operations
from ..settings import BY_NAME, MODEL_PARAMS, MODELS, describe_setting

__all__ = ["build_model", "check_engine_config", "engine_config", "load_loss", "make_operations"]


def _label_aliases(key: str) -> list[typing.Any]:
    """A loss-file key and, when it reads as a JSON integer or boolean, that label too."""
    try:
        parsed = orjson.loads(key)
    except orjson.JSONDecodeError:
        return [key]
    if isinstance(parsed, (bool, int)):
        return [key, parsed]
    return [key]


def load_loss(path: str) -> dict[typing.Any, dict[typing.Any, float]]:
    """Read a loss matrix ``{true_label: {predicted_label: cost}}`` from a JSON file.

    JSON object keys are strings, so a key that reads as an integer or a
    boolean (``"1"``, ``"true"``) also stands for that label.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "loss.json")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"spam": {"ham": 5}, "ham": {"spam": 1}}')
    >>> load_loss(path)
    {'spam': {'ham': 5}, 'ham': {'spam': 1}}
    """
    try:
        with open(path, "rb") as f:
            data = orjson.loads(f.read().removeprefix(b"\xef\xbb\xbf"))  # a leading byte order mark is ignored
    except OSError as exc:
        raise ConfigError(f"loss file {path}: cannot read it: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"loss file {path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(row, dict) for row in data.values()):
        raise ConfigError(f"loss file {path}: expected an object {{true_label: {{predicted_label: cost}}}}")
    loss: dict[typing.Any, dict[typing.Any, float]] = {}
    for truth, row in data.items():
        out_row: dict[typing.Any, float] = {}
        for predicted, cost in row.items():
            if isinstance(cost, bool) or not isinstance(cost, (int, float)):
                raise ConfigError(f"loss file {path}: cost [{truth!r}][{predicted!r}] must be a number, got {cost!r}")
            for alias in _label_aliases(predicted):
                out_row[alias] = cost
        for alias in _label_aliases(truth):
            loss[alias] = out_row
    return loss


def build_model(settings: dict[str, typing.Any]) -> typing.Any:
    """Instantiate the ``--model`` class with the model parameters that were set."""
    choice = settings["model"]
    class_name, accepted = MODELS[choice]
    params: dict[str, typing.Any] = {}
    for name in MODEL_PARAMS:
        value = settings[name]
        if value is None or value == {}:
            continue
        if name not in accepted:
            flags = ", ".join(BY_NAME[p].flag for p in accepted)
            given = describe_setting(settings, name)
            given = f"{given} ({name})" if given == BY_NAME[name].flag else given
            raise ConfigError(f"{given} does not apply to {_model_words(settings)}, which takes {flags}")
        params[name] = load_loss(value) if name == "loss" else value
    cls = getattr(stream_nb, class_name, None)
    if cls is None:
        raise ConfigError(f"{_model_words(settings)}: stream_nb.{class_name} is not available in this installation")
    try:
        return cls.from_flat(params)
    except ConfigError as exc:
        text = str(exc)
        name = text.partition(":")[0]
        if name in params and describe_setting(settings, name) != BY_NAME[name].flag:
            text = describe_setting(settings, name) + text[len(name):]
        raise ConfigError(f"{_model_words(settings)}: {text}") from None


#: Engine config key -> the setting it comes from (:func:`engine_config`).
_ENGINE_KEYS = {
    "label_field": "label_field",
    "id_field": "id_field",
    "features": "features",
    "max_event_bytes": "max_event_bytes",
    "model_name": "model_name",
    "poll_max_records": "poll_max_records",
    "poll_timeout": "poll_timeout",
    "commit_every_records": "commit_every",
    "commit_interval_s": "commit_interval",
    "dead_letter_max_value_bytes": "dead_letter_max_value_bytes",
    "log_loss_floor": "log_loss_floor",
    "log_metrics_interval_s": "metrics_interval",
    "emit_imputed": "emit_imputed",
    "top_k": "top_k",
    "no_proba": "no_proba",
    "max_in_flight": "max_in_flight",
    "max_in_flight_wait_s": "max_in_flight_wait",
}


def engine_config(settings: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """The :class:`~stream_nb.engine.Engine` config for these settings."""
    config = {key: settings[name] for key, name in _ENGINE_KEYS.items()}
    config["id_field"] = config["id_field"] or None
    config["features"] = config["features"] or None
    config["model_name"] = config["model_name"] or settings["model"]
    return config


def check_engine_config(settings: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """:func:`~stream_nb.engine.check_config` of :func:`engine_config`, its errors naming the settings as given.

    >>> import argparse
    >>> from stream_nb.settings import add_arguments, resolve_settings
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> check_engine_config(resolve_settings(parser.parse_args(["--commit-every", "0"]), env={}))
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --commit-every must be a positive integer, got 0
    """
    try:
        return check_config(engine_config(settings))
    except ConfigError as exc:
        raise ConfigError(_name_settings(settings, str(exc), _ENGINE_KEYS)) from None


def make_operations(settings: dict[str, typing.Any], *, model_name: str, kafka: bool) -> Operations:
    """Check the operations settings of ``stream-nb run`` and build (and bind) :class:`~stream_nb.ops.Operations`.

    >>> make_operations({"metrics_port": 70000, "metrics_host": "127.0.0.1", "liveness_timeout": 1.0,
    ...                  "lag_interval": 1.0, "metrics_interval": 0.0}, model_name="nb", kafka=False)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --metrics-port must be between 0 and 65535, got 70000
    """
    port = settings["metrics_port"]
    if port is not None and not 0 <= port <= 65535:
        raise ConfigError(f"{describe_setting(settings, 'metrics_port')} must be between 0 and 65535, got {port}")
    if not settings["metrics_host"]:
        raise ConfigError(f"{describe_setting(settings, 'metrics_host')} must not be empty "
                          "(0.0.0.0: every interface)")
    for name in ("liveness_timeout", "lag_interval"):
        if not settings[name] > 0:
            raise ConfigError(f"{describe_setting(settings, name)} must be > 0, got {settings[name]}")
    return Operations(model_name=model_name, mode="kafka" if kafka else "jsonl", host=settings["metrics_host"],
                      port=port, liveness_timeout=settings["liveness_timeout"],
                      lag_interval=settings["lag_interval"], summary_interval=settings["metrics_interval"])


def _model_words(settings: typing.Mapping[str, typing.Any]) -> str:
    """``--model tan``, or ``model tan (from STREAM_NB_MODEL)`` when the model was not chosen by the flag."""
    words = describe_setting(settings, "model")
    choice = settings["model"]
    return f"--model {choice}" if words == "--model" else f"model {choice}{words[len('model'):]}"


def _name_settings(settings: typing.Mapping[str, typing.Any], text: str, names: typing.Mapping[str, str]) -> str:
    """``text`` (a component's error) with each key of ``names`` replaced by how the user gave that setting.

    ``names`` maps a component's key (``commit_every_records``) to the setting's name (``commit_every``).

    >>> import argparse
    >>> from stream_nb.settings import add_arguments, resolve_settings
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> s = resolve_settings(parser.parse_args([]), env={"STREAM_NB_COMMIT_EVERY": "0"})
    >>> _name_settings(s, "commit_every_records must be a positive integer, got 0", {"commit_every_records": "commit_every"})
    'commit_every (from STREAM_NB_COMMIT_EVERY) must be a positive integer, got 0'
    """
    if not names:
        return text
    pattern = re.compile(r"(?<![\w'\"-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?![\w'\"-])")
    return pattern.sub(lambda m: describe_setting(settings, names[m.group(1)]), text)
