"""Snapshots: the file format of a model's state, and the daemon's snapshot directory.

* :mod:`~stream_nb.snapshots._format` -- the container: one checksummed file
  holding a model's arrays and metadata (and, for the daemon, its positions and
  metrics). :func:`save` and :func:`load` are ``stream_nb.save`` and
  ``stream_nb.load``; :func:`read` and :func:`write` work on the file itself.
* :mod:`~stream_nb.snapshots._store` -- :class:`SnapshotStore`, the numbered
  snapshot files of one directory: locking, listing, writing, pruning.
* :mod:`~stream_nb.snapshots._wire` -- a model's state as compressed bytes
  (:func:`encode_state`, :func:`decode_state`): the payload of a model topic.
* :mod:`~stream_nb.snapshots._versions` -- the refusal of a file or a state of a
  version this code does not read: the versions, and which release reads it.
* :mod:`~stream_nb.snapshots._faults` -- :class:`FaultHooks`, the points where
  the crash tests step in (no-ops in production).

When to write a snapshot and which input positions it covers is the engine's
checkpointer's business (:mod:`stream_nb.engine.checkpoint._checkpoint`); this package
does the file work and never imports the engine.
"""

from __future__ import annotations

from ._faults import FaultHooks, install_fault_hooks, installed_fault_hooks
from ._format import (
    FORMAT_VERSION,
    MAGIC,
    MODEL_CLASSES,
    SnapshotFile,
    decode_meta,
    encode_meta,
    load,
    model_from_state,
    read,
    save,
    write,
)
from ._store import SnapshotStore
from ._wire import decode_state, encode_state

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MODEL_CLASSES",
    "FaultHooks",
    "SnapshotFile",
    "SnapshotStore",
    "decode_meta",
    "decode_state",
    "encode_meta",
    "encode_state",
    "install_fault_hooks",
    "installed_fault_hooks",
    "load",
    "model_from_state",
    "read",
    "save",
    "write",
]
