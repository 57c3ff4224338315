"""One place for the checks every layer makes on settings and parameters.

The bottom layer: it imports nothing of ours but :mod:`stream_nb.exceptions`, so learners,
the engine, connectors and the command line all use the same rules and the same wording:

- :func:`is_integer`: an ``int`` that is not a ``bool`` (``True`` is an ``int`` in Python);
- :func:`check_integer`, :func:`check_number`, :func:`check_choice`: raise
  :class:`~stream_nb.exceptions.ConfigError` naming the setting, what was expected and
  what was received;
- :func:`configure`: a component's ``DEFAULT_CONFIG`` with the given keys merged over it,
  unknown keys rejected (kafka-python's rule);
- :func:`parse_bool`, :func:`parse_int`: a value written as text (a flag, an environment
  variable, ``KEY=VALUE``) read as a boolean or an integer, by one rule everywhere.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import typing

from .exceptions import ConfigError

__all__ = ["check_choice", "check_integer", "check_number", "configure", "is_integer", "parse_bool", "parse_int"]


def is_integer(value: typing.Any) -> bool:
    """True for an ``int`` (numpy's included) that is not a ``bool``.

    >>> is_integer(3), is_integer(True), is_integer(3.0)
    (True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _bounds(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f" in [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def check_integer(name: str, value: typing.Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` if it is an integer within the bounds, else raise ``ConfigError``.

    >>> check_integer("bins", 5, minimum=1)
    5
    >>> check_integer("bins", 0, minimum=1)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: bins: expected an integer >= 1, got 0
    >>> check_integer("bins", True)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: bins: expected an integer, got True
    """
    if (
        not is_integer(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise ConfigError(f"{name}: expected an integer{_bounds(minimum, maximum)}, got {value!r}")
    return int(value)


def check_number(
    name: str,
    value: typing.Any,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    strict_minimum: bool = False,
) -> float:
    """Return ``value`` as a float if it is a finite real number within the bounds.

    ``strict_minimum`` makes the lower bound exclusive (``> minimum``).

    >>> check_number("alpha", 0.5, minimum=0, strict_minimum=True)
    0.5
    >>> check_number("alpha", 0, minimum=0, strict_minimum=True)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: alpha: expected a finite number > 0, got 0
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if strict_minimum else value >= minimum
    if ok and maximum is not None:
        ok = value <= maximum
    if not ok:
        low = "" if minimum is None else f" {'>' if strict_minimum else '>='} {minimum}"
        high = "" if maximum is None else f"{' and' if low else ''} <= {maximum}"
        raise ConfigError(f"{name}: expected a finite number{low}{high}, got {value!r}")
    return float(value)


def check_choice(name: str, value: typing.Any, choices: typing.Iterable) -> typing.Any:
    """Return ``value`` if it is one of ``choices``, else raise ``ConfigError`` listing them.

    >>> check_choice("missing", "em", ("em", "ignore"))
    'em'
    >>> check_choice("missing", "drop", ("em", "ignore"))
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: missing: expected one of 'em', 'ignore', got 'drop'
    """
    choices = tuple(choices)
    if isinstance(value, bool) or value not in choices:
        raise ConfigError(f"{name}: expected one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def configure(
    defaults: dict[str, typing.Any],
    given: dict[str, typing.Any],
    what: str,
    *,
    passthrough: typing.Collection[str] = (),
    listing: str = "expected one of",
) -> dict[str, typing.Any]:
    """Merge ``given`` over ``defaults``, rejecting unknown keys (kafka-python style).

    ``what`` names the kind of setting in the error message. ``passthrough``
    names keys accepted besides those of ``defaults`` and passed on as given
    (a client library's own settings, e.g. kafka-python's); ``listing`` is the
    phrase that introduces the accepted keys in the error message.

    >>> configure({"a": 1, "b": 2}, {"b": 3}, "demo setting")
    {'a': 1, 'b': 3}
    >>> configure({"a": 1, "b": 2}, {"c": 3, "d": 4}, "demo setting")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: unknown demo settings 'c', 'd'; expected one of: a, b
    >>> configure({"a": 1}, {"linger_ms": 5}, "client key", passthrough={"linger_ms", "acks"})
    {'a': 1, 'linger_ms': 5}
    >>> configure({"a": 1}, {"lingr_ms": 5}, "client key", passthrough={"linger_ms"}, listing="accepted keys")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: unknown client key 'lingr_ms'; accepted keys: a, linger_ms
    """
    if not isinstance(given, dict):
        raise ConfigError(f"{what}s must be given as a dict, got {type(given).__name__}")
    unknown = sorted((k for k in given if k not in defaults and k not in passthrough), key=str)
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        plural = "s" if len(unknown) > 1 else ""
        accepted = sorted(set(defaults) | set(passthrough))
        raise ConfigError(
            f"unknown {what}{plural} {names}; {listing}: {', '.join(accepted)}"
        )
    return {**defaults, **given}


#: Words read as ``True`` / ``False`` (any case, spaces around ignored) by :func:`parse_bool`.
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def parse_bool(value: typing.Any) -> bool:
    """A boolean, or text reading as one (:data:`TRUE_WORDS`, :data:`FALSE_WORDS`); ``ValueError`` otherwise.

    >>> parse_bool(" Yes"), parse_bool("off"), parse_bool(True)
    (True, False, True)
    >>> parse_bool("maybe")
    Traceback (most recent call last):
    ...
    ValueError: expected true or false (1, true, yes, on / 0, false, no, off), got 'maybe'
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    raise ValueError(
        f"expected true or false ({', '.join(TRUE_WORDS)} / {', '.join(FALSE_WORDS)}), got {value!r}"
    )


def parse_int(value: typing.Any) -> int:
    """An integer (:func:`is_integer`), or text reading as one; ``ValueError`` otherwise.

    >>> parse_int(" 12 "), parse_int(-3)
    (12, -3)
    >>> parse_int("1.5")
    Traceback (most recent call last):
    ...
    ValueError: expected an integer, got '1.5'
    >>> parse_int(True)
    Traceback (most recent call last):
    ...
    ValueError: expected an integer, got True
    """
    if is_integer(value):
        return int(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # not an integer's text: refused below
            return int(value.strip())
    raise ValueError(f"expected an integer, got {value!r}")
