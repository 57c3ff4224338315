"""The one version policy of a model's state, in a snapshot file and on the model topic.

Both encodings carry a version (:mod:`~stream_nb.snapshots._format`: a
snapshot file's format version; :mod:`~stream_nb.snapshots._wire`: a model
topic's state encoding). They share one number, :data:`VERSION`, bumped by any
change a reader of the old version would misread, in either. A release writes
:data:`VERSION` and reads every version of :data:`READS`, converting an older
one's model metadata with :func:`upgrade_model_meta` as it reads it; it
refuses any other version with :func:`refusal`'s reason: the version found,
the versions it reads, and what the user can do. So in a rolling upgrade a
member of this release reads what an older member published, and an older
member refuses this one's states naming both versions.

Versions:

1. the model's parameters flat (``{"window": 1000, "bins": 5, "missing": "em", ...}``);
2. the parameters as constructor keywords, each option object as plain data
   (``{"forgetting": {"option": "Window", "size": 1000, "panes": 4}, ...}``).

>>> print(refusal("snapshot format", 3, (1, 2), "0.1.0", writer="0.4.0"))
unknown snapshot format version 3; this stream_nb (0.1.0) reads versions 1 and 2. Version 3 is newer: read it
with stream_nb 0.4.0 (which wrote it) or a later release; no release converts it to an older version
>>> print(refusal("model state encoding", 0, 1, "0.1.0"))
unknown model state encoding version 0; this stream_nb (0.1.0) reads version 1 only. Version 0 is older, and
this release has no converter from it: read it with the stream_nb that wrote it
"""

from __future__ import annotations

import json

from ..learners import MODELS
from ..options import encode_params

__all__ = ["READS", "VERSION", "refusal", "upgrade_model_meta", "written_by"]

#: The version this release writes, in snapshot files and model-topic states.
VERSION = 2
#: The versions it reads (an older one converted by :func:`upgrade_model_meta`).
READS = (1, 2)


def upgrade_model_meta(meta: dict, version: int) -> dict:
    """A model's metadata (``state()[1]``) of ``version`` as this release writes it: version 1's flat
    parameters become the constructor's keywords, as they map (:meth:`BayesClassifier.params_from_state`).

    ValueError (or the model's ConfigError) when the parameters do not convert; metadata this code cannot
    read (an unknown model) is returned as it is, for the reader to refuse.

    >>> meta = {"model": "NaiveBayes", "params": {"alpha": 1.0, "window": 50, "panes": 5, "missing": "ignore"}}
    >>> upgrade_model_meta(meta, 1)["params"]["forgetting"]
    {'option': 'Window', 'size': 50, 'panes': 5}
    """
    cls = MODELS.get(meta.get("model")) if isinstance(meta, dict) else None
    if version == VERSION or cls is None or not isinstance(meta.get("params"), dict):
        return meta
    given = cls.params_from_state(meta["params"])
    defaults = cls.from_flat({}).state()[1]["params"]
    params = {**defaults, **encode_params(given)}
    if "drift_detector" in meta["params"]:
        params["drift_detector"] = meta["params"]["drift_detector"]  # its spec, as the state wrote it
    return {**meta, "params": params}


def refusal(what: str, found: int, reads: int | tuple, release: str, writer: str | None = None) -> str:
    """The reason a ``what`` of version ``found`` is refused by stream_nb ``release``, which reads version(s) ``reads``.

    ``writer`` is the release the file names as its writer, when it can be read (see :func:`written_by`).
    """
    reads = (reads,) if isinstance(reads, int) else tuple(reads)
    which = f"version {reads[0]} only" if len(reads) == 1 else \
        f"versions {', '.join(map(str, reads[:-1]))} and {reads[-1]}"
    head = f"unknown {what} version {found}; this stream_nb ({release}) reads {which}"
    by = f"stream_nb {writer} (which wrote it)" if writer and writer != release else "the stream_nb that wrote it"
    if found > max(reads):
        return f"{head}. Version {found} is newer: read it with {by} or a later release; no release converts it " \
               f"to an older version"
    return f"{head}. Version {found} is older, and this release has no converter from it: read it with {by}"


def written_by(header: bytes) -> str | None:
    """The ``"stream_nb"`` release a snapshot header names, or None when the bytes are no such header.

    The header of a version this code does not read is read on a best-effort basis, for the message only.
    """
    try:
        release = json.loads(header.decode("utf-8")).get("stream_nb")
    except (UnicodeDecodeError, ValueError, RecursionError, AttributeError):
        return None
    return release if isinstance(release, str) and 0 < len(release) <= 40 and release.isprintable() else None
