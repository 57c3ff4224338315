"""The streaming engine: decode events, predict then learn, send, checkpoint.

Public names only; the modules behind them are private.
"""

from __future__ import annotations

from ..stats import validate_label  # the label rule lives with the count store
from ._config import configure
from ._engine import DEFAULT_CONFIG, Engine, check_config, label_key
from ._events import Event, EventDecoder
from ._flow import FlowControl
from ._io import Record, Sink, Source
from ._metrics import PrequentialMetrics
from ._observer import Observer

__all__ = [
    "DEFAULT_CONFIG",
    "Engine",
    "Event",
    "EventDecoder",
    "FlowControl",
    "Observer",
    "PrequentialMetrics",
    "Record",
    "Sink",
    "Source",
    "check_config",
    "configure",
    "label_key",
    "validate_label",
]
