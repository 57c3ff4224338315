"""``stream-nb evaluate``: several models, prequentially, over the same events.

Every valid event is first predicted by every model as it stands, then, when
it carries a label, learned by every model (prequential, "test then train"),
in the same order for all; the time spent in each model's calls is counted for
that model alone. Each model is scored cumulatively and per tumbling window of
``window`` labeled events (:mod:`~stream_nb.tools.evaluate._scores`): river's
accuracy, Cohen's kappa, macro F1 and log loss, and :class:`KappaT` and
:class:`KappaM` (:mod:`~stream_nb.tools.evaluate._kappas`). An event with no
prediction (a model that knows no class yet) is not scored, as river's
``progressive_val_score`` skips it. :meth:`Evaluation.results` gives one row per
window per model as a DataFrame, :func:`write_results` writes it as CSV or
Parquet; each model's drifts are in :attr:`ModelResult.drifts` and the rows.

Inputs (:func:`open_events`)
----------------------------
- a JSON-lines file: one event per line, decoded exactly as ``stream-nb run``
  does (:class:`~stream_nb.engine.EventDecoder`: label field, id field,
  ``null`` missing, nested values rejected);
- a CSV file with a header row. Each cell, stripped of surrounding spaces, is
  parsed by :func:`parse_cell`: empty is missing, an integer literal
  (``-12``, ``0``; no leading zeros) an ``int`` (categorical), a decimal
  literal with a point or an exponent (``0.5``, ``1e3``, ``07.5``) a ``float``
  (numeric), anything else the string itself (``"007"``, ``"nan"``,
  ``"true"`` included). The label cell goes through the same rule and then
  through the daemon's label check (``"1.0"`` is the class ``1``, ``"0.5"`` a
  bad row);
- ``-``: standard input, JSON lines when its first non-blank byte is ``{``,
  CSV otherwise (``--format`` says it outright);
- ``river:NAME``: a river classification stream (single-label: binary or
  multi-class). A synthetic one gives its first ``--events`` events (default
  10,000), with every seed parameter set to ``--seed`` (default 1). LED,
  STAGGER, Agrawal and RandomTree take the settings of ``bench/learners.py``
  (see :data:`RIVER_STREAMS`); any other class of :mod:`river.datasets.synth`
  for classification is built with its defaults. A real data set that river
  ships in its wheel, so no download (``Phishing``, ``Bananas``,
  ``ImageSegments``, ``Shuttle`` in river 0.26), gives all its events or its
  first ``--events``. Feature names become strings (LED's ``0`` is ``"0"``),
  so an event written in JSON can name them; the label is river's ``y``.

A row that cannot be used (a CSV row with the wrong number of cells, a line
that is not a JSON object, a bad label, a label of another type than the
first one, a value of a type the models reject: see the daemon's event
contract) is a *bad row*: it is reported on stderr (the first ten individually,
by ``stream-nb evaluate``) and skipped, and counted by reason. Blank lines are skipped and
counted apart. An event with no label (absent, ``null`` or an empty cell) is
predicted only, and counted as unlabeled; as in the daemon, a model built with
``learn_unlabeled=True`` learns it too (semi-supervised EM) once it knows a class.

Models (:func:`parse_model_specs`)
----------------------------------
``--models`` is a comma-separated list of ``NAME[:PARAM=VALUE[:PARAM=VALUE]...]``
with NAME one of the daemon's ``--model`` choices (``nb``, ``aode``, ``tan``, ...), e.g. ``nb,aode:m=5,tan:rebuild_every=500:bins=10``. The same model
may appear twice with different parameters. A global flag (``--alpha``,
``--bins``, ...) applies to every listed model that takes it; a per-model
parameter overrides it for that model. A NAME with a dot is a peer, any river
classifier named by its import path (``river.tree.HoeffdingTreeClassifier:grace_period=100``:
see :mod:`~stream_nb.tools.evaluate._specs`).

Memory
------
The "state bytes" column is the size of the model's plain-data state: the sum
of ``nbytes`` of the arrays of ``model.state()[0]`` plus the length of the
compact JSON encoding (orjson) of its metadata ``model.state()[1]``: what a snapshot holds
(none for a peer).

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
