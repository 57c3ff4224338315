"""One rule for every component's settings: defaults in a dict, unknown keys rejected."""

from __future__ import annotations

import typing

from ..exceptions import ConfigError

__all__ = ["configure"]


def configure(defaults: dict[str, typing.Any], given: dict[str, typing.Any], what: str) -> dict[str, typing.Any]:
    """Merge ``given`` over ``defaults``, rejecting unknown keys (kafka-python style).

    ``what`` names the kind of setting in the error message.

    >>> configure({"a": 1, "b": 2}, {"b": 3}, "demo setting")
    {'a': 1, 'b': 3}
    >>> configure({"a": 1, "b": 2}, {"c": 3, "d": 4}, "demo setting")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: unknown demo settings 'c', 'd'; expected one of: a, b
    """
    if not isinstance(given, dict):
        raise ConfigError(f"{what}s must be given as a dict, got {type(given).__name__}")
    unknown = sorted((k for k in given if k not in defaults), key=str)
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        plural = "s" if len(unknown) > 1 else ""
        raise ConfigError(
            f"unknown {what}{plural} {names}; expected one of: {', '.join(sorted(defaults))}"
        )
    return {**defaults, **given}
