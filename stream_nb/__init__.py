"""stream_nb: streaming Bayesian classifiers that learn from every event."""

from __future__ import annotations

from . import exceptions

__all__ = ["exceptions"]
__version__ = "0.1.0"
