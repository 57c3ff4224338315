"""Building the daemon's pieces from the settings: the model (with its loss file) and the engine's config."""

from __future__ import annotations

import typing

import orjson

import stream_nb

from ..exceptions import ConfigError
from ..settings import BY_NAME, MODEL_PARAMS, MODELS

__all__ = ["build_model", "engine_config", "load_loss"]


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
            raise ConfigError(
                f"{BY_NAME[name].flag} ({name}) does not apply to --model {choice}, which takes {flags}"
            )
        params[name] = load_loss(value) if name == "loss" else value
    cls = getattr(stream_nb, class_name, None)
    if cls is None:
        raise ConfigError(f"--model {choice}: stream_nb.{class_name} is not available in this installation")
    try:
        return cls(**params)
    except ConfigError as exc:
        raise ConfigError(f"--model {choice}: {exc}") from None


def engine_config(settings: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """The :class:`~stream_nb.engine.Engine` config for these settings."""
    return {
        "label_field": settings["label_field"],
        "id_field": settings["id_field"] or None,
        "features": settings["features"] or None,
        "max_event_bytes": settings["max_event_bytes"],
        "model_name": settings["model_name"] or settings["model"],
        "poll_max_records": settings["poll_max_records"],
        "poll_timeout": settings["poll_timeout"],
        "commit_every_records": settings["commit_every"],
        "commit_interval_s": settings["commit_interval"],
        "dead_letter_max_value_bytes": settings["dead_letter_max_value_bytes"],
        "log_loss_floor": settings["log_loss_floor"],
        "log_metrics_interval_s": settings["metrics_interval"],
        "emit_imputed": settings["emit_imputed"],
        "max_in_flight": settings["max_in_flight"],
    }

