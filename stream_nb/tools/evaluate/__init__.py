"""``stream-nb evaluate``: several models, prequentially, over the same events.

Every valid event is predicted by every model, then learned by every model
when it carries a label ("test then train"). Each model is scored
cumulatively and per window of labeled events. Inputs, models and the columns
are described in the docs' *Evaluate* page.

>>> events = [({"sky": "sun"}, "play"), ({"sky": "rain"}, "stay"), ({"sky": "sun"}, "play"), ({"sky": "rain"}, None)]
>>> result = evaluate(events, {"nb": make_model("nb")})
>>> result.n_events, result.n_labeled, result.n_unlabeled
(4, 3, 1)
>>> nb = result.models[0]
>>> nb.metrics.labeled, nb.rows[0]["scored"], nb.accuracy   # the first event: no prediction, not scored
(3, 2, 0.5)
"""

from __future__ import annotations

from ._drifting import DRIFT_STREAMS, DriftingStream
from ._format import format_cut_points, format_table, format_tree, why_no_tree
from ._kappas import KappaM, KappaT
from ._loop import DEFAULT_WINDOW, Evaluation, ModelResult, evaluate, rolling_accuracy, train
from ._readers import (
    DEFAULT_RIVER_EVENTS,
    RIVER_STREAMS,
    BadRow,
    EventSource,
    event_config,
    open_events,
    parse_cell,
)
from ._results import check_results_path, write_results
from ._scores import METRICS, RESULT_COLUMNS, Scorer
from ._specs import ModelSpec, is_peer, make_model, parse_model_specs, state_bytes
from ._steps import ModelError

__all__ = [
    "DEFAULT_RIVER_EVENTS",
    "DEFAULT_WINDOW",
    "KappaM",
    "KappaT",
    "METRICS",
    "ModelError",
    "RESULT_COLUMNS",
    "Scorer",
    "check_results_path",
    "is_peer",
    "write_results",
    "DRIFT_STREAMS",
    "DriftingStream",
    "RIVER_STREAMS",
    "BadRow",
    "EventSource",
    "Evaluation",
    "ModelResult",
    "ModelSpec",
    "evaluate",
    "event_config",
    "format_table",
    "format_cut_points",
    "format_tree",
    "make_model",
    "open_events",
    "parse_cell",
    "parse_model_specs",
    "rolling_accuracy",
    "state_bytes",
    "train",
    "why_no_tree",
]
