"""What a reader says about a snapshot or a model state of a version it does not read, and what to do.

Both encodings carry a version (:mod:`~stream_nb.snapshots._format`: a
snapshot file's format version; :mod:`~stream_nb.snapshots._wire`: a model
topic's state encoding), bumped by any change a reader of the old version
would misread. A reader refuses every other version with :func:`refusal`'s
reason: the version found, the version it reads, and what the user can do.
No release converts a file to another version yet, so the message says which
release reads it instead.

>>> print(refusal("snapshot format", 2, 1, "0.1.0", writer="0.4.0"))
unknown snapshot format version 2; this stream_nb (0.1.0) reads version 1 only. Version 2 is newer: read it
with stream_nb 0.4.0 (which wrote it) or a later release; no release converts it to an older version
>>> print(refusal("model state encoding", 0, 1, "0.1.0"))
unknown model state encoding version 0; this stream_nb (0.1.0) reads version 1 only. Version 0 is older, and
this release has no converter from it: read it with the stream_nb that wrote it
"""

from __future__ import annotations

import json

__all__ = ["refusal", "written_by"]


def refusal(what: str, found: int, reads: int, release: str, writer: str | None = None) -> str:
    """The reason a ``what`` of version ``found`` is refused by stream_nb ``release``, which reads version ``reads``.

    ``writer`` is the release the file names as its writer, when it can be read (see :func:`written_by`).
    """
    head = f"unknown {what} version {found}; this stream_nb ({release}) reads version {reads} only"
    by = f"stream_nb {writer} (which wrote it)" if writer and writer != release else "the stream_nb that wrote it"
    if found > reads:
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
