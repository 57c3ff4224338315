"""Receipts (:class:`~stream_nb.learners._unlearn.Receipt`) as plain data, and back, checked against the model.

A daemon keeps the receipts of the provisional labels it cannot take back by plain counting in every
snapshot (:mod:`stream_nb.engine.join._join_state`). The journal's arrays are written by
:class:`~stream_nb.stats.forgetting._journal.JournalWriter`; the rest is JSON:
``{"label": y, "entries": [...], "extra": null or [array references], "stamp": null or [pane, halvings]}``.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import is_integer
from ..stats import JournalReader, JournalWriter
__all__ = ["receipt_parts", "receipts_state"]


def receipts_state(store, receipts: list) -> tuple[dict, list]:
    """``(arrays, meta)`` of ``receipts`` (of ``store``): the arrays ``"int"`` and ``"float"`` (the pools),
    one JSON-able object per receipt."""
    writer = JournalWriter(store)
    meta = []
    for r in receipts:
        extra = None if r.extra is None else [writer.array(np.asarray(a, dtype=float)) for a in r.extra]
        stamp = None if r.stamp is None else [int(r.stamp[0]), float(r.stamp[1])]
        meta.append({"label": r.label, "entries": writer.entries(r.entries), "extra": extra, "stamp": stamp})
    ints, floats = writer.pools()
    return {"int": ints, "float": floats}, meta


def receipt_parts(store, arrays: dict, meta, where: str, check_extra) -> list:
    """The receipts :func:`receipts_state` wrote, as ``(label, entries, extra, stamp)``, checked against
    ``store`` (the model's, restored) and by ``check_extra(extra, where)``: ValueError naming ``where`` and
    what was expected when one does not fit."""
    if not isinstance(meta, list):
        raise ValueError(f"{where}: expected a list of receipts, got {type(meta).__name__}")
    if not meta:
        return []
    for k in ("int", "float"):
        if k not in arrays:
            raise ValueError(f"{where}: expected the array {k!r} the receipts refer to")
    reader = JournalReader(arrays["int"], arrays["float"])
    out = []
    for i, r in enumerate(meta):
        at = f"{where}[{i}]"
        if not isinstance(r, dict) or set(r) != {"label", "entries", "extra", "stamp"}:
            raise ValueError(f"{at}: expected an object with label, entries, extra and stamp")
        entries = reader.entries(r["entries"], store, at + ".entries")
        extra = r["extra"]
        if extra is not None:
            if not isinstance(extra, list):
                raise ValueError(f"{at}.extra: expected null or a list of array references")
            extra = tuple(reader.array(a, f"{at}.extra[{j}]", "f", 1) for j, a in enumerate(extra))
        check_extra(extra, at + ".extra")
        stamp = r["stamp"]
        if stamp is not None:
            if not (isinstance(stamp, list) and len(stamp) == 2 and is_integer(stamp[0])
                    and isinstance(stamp[1], (int, float)) and not isinstance(stamp[1], bool)
                    and math.isfinite(stamp[1])):
                raise ValueError(f"{at}.stamp: expected null or [pane, halvings], an integer and a number")
            stamp = (int(stamp[0]), float(stamp[1]))
        out.append((r["label"], entries, extra, stamp))
    return out
