"""The wiring of ``stream-nb run``: from the settings to a running engine.

* ``_main`` -- :func:`run`, the daemon's main: settings, logging, the pieces
  below, signals, the engine's run, the shutdown line; and the ``run``
  sub-command's parser (:func:`add_subcommand`);
* ``_build`` -- :func:`build_model` (the ``--model`` class with the model
  settings that were set, :func:`load_loss` for ``--loss``) and
  :func:`engine_config`;
* ``_connectors`` -- :func:`connector_plan` (JSON-lines or Kafka mode and the
  connector configs) and :func:`start_connectors` (creating them, retrying while
  the broker is unreachable): the only place in :mod:`stream_nb` that loads
  :mod:`connectors`, by name;
* ``_checkpointing`` -- the snapshot settings and the engine's checkpointer
  (:func:`make_checkpointer`), the transactional id of ``--exactly-once``.

The settings themselves (schema, conversion, environment and TOML layers) are
:mod:`stream_nb.settings`.
"""

from __future__ import annotations

from ._build import build_model, check_engine_config, engine_config, load_loss, make_operations
from ._checkpointing import check_settings, make_checkpointer, transactional_id
from ._connectors import ConnectorPlan, close_all, connector_plan, start_connectors
from ._main import add_subcommand, load_kernels, one_blas_thread, prepare_process, run

__all__ = [
    "ConnectorPlan",
    "add_subcommand",
    "build_model",
    "check_engine_config",
    "check_settings",
    "close_all",
    "connector_plan",
    "engine_config",
    "load_kernels",
    "load_loss",
    "make_checkpointer",
    "make_operations",
    "one_blas_thread",
    "prepare_process",
    "run",
    "start_connectors",
    "transactional_id",
]
