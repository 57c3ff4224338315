"""The engine loop: poll, decode, predict then learn, send, commit.

* ``_engine`` -- :class:`Engine`, the run loop, and its settings (:data:`DEFAULT_CONFIG`);
* ``_poll`` -- a poll's outputs and metrics built a run at a time;
  ``_run_bytes`` -- a run's output records written to JSON column by column;
* ``_flow`` -- back-pressure;
* ``_input_check`` -- one early warning when the input is plainly not what the settings expect;
* ``_metrics`` -- the prequential metrics; ``_recent`` -- their window of recent hits;
* ``_observer`` -- the reporting hooks.
"""

from __future__ import annotations

from ._engine import DEFAULT_CONFIG, Engine, check_config
from ._flow import FlowControl
from ._metrics import PrequentialMetrics
from ._observer import Observer

__all__ = ["DEFAULT_CONFIG", "Engine", "FlowControl", "Observer", "PrequentialMetrics", "check_config"]
