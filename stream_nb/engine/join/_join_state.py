"""The join's part of a snapshot: the pending store, the early labels, the feedback positions and the counters.

A snapshot holds, with the model and the input positions, everything the join
holds at that moment, so a daemon restored from it continues exactly: no held
event and no early label is lost, and no label read after the snapshot was
learned before it (the feedback is read again from the positions it holds).
Arrays go in the snapshot's arrays under ``join.``; the rest in its daemon header
under ``"join"``.

The receipts of the provisional labels that were not learned by plain counting
(EM's expected counts, a forgetting model's stamp, SPODE's running scores) are
part of it too (the model's ``receipts_state``: their numeric arrays under
``join.receipt_int`` and ``join.receipt_float``, the rest under ``"receipts"``,
and the held event of each under ``"receipt_events"``), so a restarted daemon takes such a provisional
label back exactly, as the daemon that learned it would have. A snapshot of an
older version has no ``"receipts"``: its provisional labels learned with
expected counts cannot be taken back (the join logs it and keeps them). A
receipt that does not fit the model (indices out of its range, shapes that do
not match, a held event that is not there) is refused at load, naming it.
"""

from __future__ import annotations

import math

import numpy as np

from ._join_handover import early_label_entries
from ._pending import FREE, JOINED, LABEL, PENDING

__all__ = ["join_state", "join_summary", "load_join_state", "rewind_join"]

_ROW_ARRAYS = ("state", "time", "prediction", "partition", "offset", "provisional")


def join_state(joiner) -> tuple[dict, dict]:
    """``(arrays, meta)`` of the join: arrays named ``join.*``, meta JSON-able."""
    store = joiner.store
    live = np.flatnonzero((store.state != FREE) & (store.state != LABEL))  # early labels: under "waiting"
    ids = [store.id_of(r) for r in live.tolist()]
    arrays = {f"join.{k}": getattr(store, k)[live] for k in _ROW_ARRAYS}
    arrays["join.id_len"] = np.array([len(k) for k in ids], dtype=np.int64)
    arrays["join.ids"] = np.frombuffer(b"".join(ids), dtype=np.uint8).copy()
    arrays["join.cat"] = store.cat[live]
    arrays["join.num"] = store.num[live]
    where = {r: i for i, r in enumerate(live.tolist())}
    receipts = sorted(joiner.receipts.items())
    receipt_meta = []
    if receipts:
        receipt_arrays, receipt_meta = joiner.engine.model.receipts_state([r for _, r in receipts])
        arrays.update({f"join.receipt_{k}": v for k, v in receipt_arrays.items()})
    meta = {
        "cat_names": list(store.cat_names),
        "num_names": list(store.num_names),
        "values": list(store.values),
        "labels": list(store.labels),
        "partitions": list(store.partitions),
        "odd": [[where[r], name, v] for r, d in store.odd.items() for name, v in d.items()],
        "waiting": early_label_entries(store),
        "counts": dict(joiner.counts),
        "delay_histogram": list(joiner.delay_histogram),
        "delay_sum": joiner.delay_sum,
        "stream_time": joiner.stream_time if joiner.stream_time > -math.inf else None,
        "positions": dict(joiner.positions),
        "receipts": receipt_meta,
        "receipt_events": [where[row] for row, _ in receipts],
    }
    return arrays, meta


def join_summary(meta: dict | None, arrays: dict) -> dict | None:
    """What the join of a snapshot (:func:`join_state`) held, for ``snapshot inspect``: the events waiting for
    their label (and how many learned a provisional label), the ids joined (kept to spot duplicates), the
    early labels, the feedback positions and the counters; None for a snapshot without a join."""
    if not isinstance(meta, dict) or "join.state" not in arrays:
        return None
    state, provisional = arrays["join.state"], arrays.get("join.provisional")
    held = state == PENDING
    return {
        "pending_events": int(held.sum()),
        "provisional": int((provisional[held] != 0).sum()) if provisional is not None else 0,
        "joined_ids": int((state == JOINED).sum()),
        "early_labels": len(meta.get("waiting") or []),
        "feedback_positions": dict(meta.get("positions") or {}),
        "counts": dict(meta.get("counts") or {}),
    }


def load_join_state(joiner, arrays: dict, meta: dict) -> None:
    """Put the join of a snapshot (:func:`join_state`) into a fresh ``joiner``."""
    store = joiner.store
    n, n_labels = len(arrays["join.state"]), len(meta["waiting"])
    if n + n_labels > store.capacity:
        raise ValueError(f"the snapshot holds {n:,} waiting events and {n_labels:,} early labels, more than "
                         f"--pending-max {store.capacity:,}")
    store.load_vocabulary(meta["cat_names"], meta["num_names"], meta["values"], meta["labels"], meta["partitions"])
    ids = arrays["join.ids"].tobytes()
    ends = np.cumsum(arrays["join.id_len"]).tolist()
    rows = []
    for i, end in enumerate(ends):
        start = ends[i - 1] if i else 0
        rows.append(store.add(ids[start:end], {}, t=0.0))
    rows = np.array(rows, dtype=np.int64)
    for k in _ROW_ARRAYS:
        getattr(store, k)[rows] = arrays[f"join.{k}"]
    store.times_changed()
    store.cat[rows] = arrays["join.cat"]
    store.num[rows] = arrays["join.num"]
    for i, name, v in meta["odd"]:
        store.odd.setdefault(int(rows[i]), {})[name] = v
    _, both = joiner.hold_early_entries(meta["waiting"])  # with its event held too (an older version): joined below
    joiner.receipts = _receipts(joiner, arrays, meta.get("receipts", []), meta.get("receipt_events", []), rows)
    joiner.counts.update(meta["counts"])
    joiner.delay_histogram = list(meta["delay_histogram"])
    joiner.delay_sum = meta["delay_sum"]
    joiner.stream_time = -math.inf if meta["stream_time"] is None else meta["stream_time"]
    joiner.positions = dict(meta["positions"])
    joiner.feedback.seek(joiner.positions)
    for item in both:
        joiner.join_label(*item)
    joiner._learn_joined()


def _receipts(joiner, arrays: dict, meta, at, rows: np.ndarray) -> dict:
    """The receipts of the held events ``rows`` read back (:func:`join_state`); ValueError naming
    ``join.receipts`` (or ``join.receipt_events``) and what was expected when one does not fit."""
    if not isinstance(meta, list) or not isinstance(at, list) or len(at) != len(meta):
        raise ValueError("join.receipts, join.receipt_events: expected two lists, the receipts and their held events")
    if not meta:
        return {}
    store = joiner.store
    for i, k in enumerate(at):
        if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < len(rows)):
            raise ValueError(f"join.receipt_events[{i}]: expected the index of a held event, in [0, {len(rows)})")
        if store.state[rows[k]] != PENDING or not store.provisional[rows[k]]:
            raise ValueError(f"join.receipt_events[{i}]: held event {k} has no provisional label to take back")
    if len(set(at)) != len(at):
        raise ValueError("join.receipts: expected one receipt per held event at most")
    model = joiner.engine.model
    if not hasattr(model, "receipts_from_state"):
        raise ValueError(f"join.receipts: the model ({type(model).__name__}) keeps no receipts")
    pools = {k: arrays[f"join.receipt_{k}"] for k in ("int", "float") if f"join.receipt_{k}" in arrays}
    receipts = model.receipts_from_state(pools, meta, "join.receipts")
    return {int(rows[k]): r for k, r in zip(at, receipts)}


def rewind_join(joiner, arrays: dict | None, meta: dict | None) -> None:
    """Return ``joiner`` to a snapshot's join (``meta`` None: to a fresh start), as an exactly-once rewind
    returns the model: what the join did after that snapshot is undone with the transaction that aborted."""
    joiner.reset()
    if meta is not None:
        load_join_state(joiner, arrays, meta)
