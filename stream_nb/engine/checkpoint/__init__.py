"""Checkpoints: the daemon's snapshot checkpointers, at least once and exactly once.

* ``_checkpoint`` -- :class:`Checkpointer`: snapshot, then commit the input positions;
* ``_exactly_once`` -- :class:`ExactlyOnceCheckpointer`: outputs and positions in one Kafka transaction;
* ``_abort`` -- aborting a transaction while the broker is away.

They drive the engine through its public methods and leave the files to
:mod:`stream_nb.snapshots`.
"""

from __future__ import annotations

from ._abort import abort_while_unreachable
from ._checkpoint import COMMIT_METADATA_PREFIX, Checkpointer
from ._exactly_once import ExactlyOnceCheckpointer

__all__ = ["COMMIT_METADATA_PREFIX", "Checkpointer", "ExactlyOnceCheckpointer", "abort_while_unreachable"]
