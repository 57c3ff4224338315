"""The ``--set MODEL:name=value`` flags of the wide benchmarks, read once for both scripts."""

from __future__ import annotations

import json


def model_settings(pairs: list, model: str) -> dict:
    """The flat settings ``MODEL:name=value`` (a JSON value, or a string) of ``model``."""
    out = {}
    for item in pairs:
        name, _, rest = item.partition(":")
        if name == model:
            key, _, value = rest.partition("=")
            out[key] = json.loads(value) if value[:1] in "[{0123456789-tfn" else value
    return out
