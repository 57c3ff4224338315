"""The tools around the learners: ``stream-nb evaluate``, ``explain`` and ``snapshot inspect``.

* :mod:`~stream_nb.tools.evaluate` -- several models prequentially over the same
  events: the readers (CSV, JSON lines, river streams), the ``--models`` specs,
  the evaluation loop, the table;
* :mod:`~stream_nb.tools.explain` -- Shapley values of one prediction's log-odds;
* :mod:`~stream_nb.tools.report` -- the pictures and the Markdown report
  (matplotlib, loaded only when something is drawn);
* :mod:`~stream_nb.tools.inspect_snapshot` -- ``stream-nb snapshot inspect``;
* :mod:`~stream_nb.tools.model_export` -- ``stream-nb model export``: a group's
  shared model (``run --model-topic``) as a snapshot file;
* ``_inputs``, ``_evaluate_command``, ``_explain_command`` -- the sub-commands'
  parsers and runs.

:func:`add_subcommands` registers the three sub-commands on ``stream-nb``'s parser.
"""

from __future__ import annotations

import argparse

from . import _evaluate_command, _explain_command, inspect_snapshot, model_export

__all__ = ["add_subcommands"]


def add_subcommands(commands: argparse._SubParsersAction) -> None:
    """Register ``evaluate``, ``explain`` and ``snapshot inspect`` on the ``stream-nb`` sub-command parser."""
    _evaluate_command.add_subcommand(commands)
    _explain_command.add_subcommand(commands)
    inspect_snapshot.add_subcommand(commands)
    model_export.add_subcommand(commands)
