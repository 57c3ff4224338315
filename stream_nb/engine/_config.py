"""One rule for every component's settings: defaults in a dict, unknown keys rejected.

The rule lives in :mod:`stream_nb._checks` (the bottom layer, shared with the learners and
the command line); the engine re-exports it for its connectors.
"""

from __future__ import annotations

from .._checks import configure

__all__ = ["configure"]
