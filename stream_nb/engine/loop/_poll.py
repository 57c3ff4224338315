"""A poll's outputs from the model's results, built a run at a time rather than an event at a time.

:meth:`Engine.process_many <stream_nb.engine.Engine.process_many>` hands a
poll's valid events to the model's ``prequential_blocks`` (stream_nb's
learners: :meth:`VectorisedRuns.prequential_blocks
<stream_nb.learners._runs.VectorisedRuns.prequential_blocks>`), which gives
each run through its kernel as one :class:`~stream_nb.learners.RunBlock` of arrays and
any other event's result alone. :func:`poll_outputs` turns them into the
output records of :func:`~stream_nb.engine.contract._records.output_record` and the
prequential metrics: per run, the predictions, probabilities and counters come
from the run's arrays in a few calls over the run (the labels' probabilities,
right predictions and learned events counted with numpy, the log loss added in
event order), and each output is one dict literal, or, where only the sink needs
the outputs, the run's JSON written column by column
(:func:`~stream_nb.engine.loop._run_bytes.run_bytes`). The records, the metrics and,
through :func:`~stream_nb.engine.contract._records.outputs_bytes`, the bytes are those
of the one-event path (``tests/test_poll_paths.py`` compares them).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import repeat

import numpy as np

from ...exceptions import InvalidEventError
from ...learners import RunBlock
from ._metrics import PrequentialMetrics
from ..contract import Sink
from ..contract import OutputRecord, Record, ShownProba, label_key, output_bytes, output_record, outputs_bytes
from ._run_bytes import run_bytes

__all__ = ["poll_outputs", "send_all"]

_POSITION = operator.attrgetter("position")


def poll_outputs(
    items: list,
    ids: list,
    labels: list,
    valid: list[Record],
    metrics: PrequentialMetrics,
    model_name: str,
    learn_unlabeled: bool,
    shown: ShownProba | None = None,
    as_bytes: bool = False,
    positions: Sequence | None = None,
) -> tuple[list, list[Record], dict[int, InvalidEventError]]:
    """The outputs of ``items``, the model's results for the first valid events of a poll, in order.

    ``items`` holds :class:`~stream_nb.learners.RunBlock`\\ s, ``(prediction,
    proba)`` pairs and ``InvalidEventError``\\ s (``prequential_blocks``'
    results); ``ids``, ``labels`` and ``valid`` are the valid events' ids,
    labels and records. Updates ``metrics`` as
    :meth:`~stream_nb.engine.loop._metrics.PrequentialMetrics.update_prediction` of
    each event in turn would. Returns ``(outputs, their records, refused)``,
    ``refused`` mapping the index in ``valid`` of each event the model refused
    to its error. ``shown`` (``--top-k``, ``--no-proba``) cuts each ``proba``. With ``as_bytes`` the
    outputs are their JSON bytes, :func:`~stream_nb.engine.contract._records.outputs_bytes` of the records (a run's
    written column by column, :func:`~stream_nb.engine.loop._run_bytes.run_bytes`, with no dict per event).
    ``positions``, when the caller has them at hand, holds the ``position`` of each record of ``valid``.
    """
    outputs: list[OutputRecord] = []
    refused: dict[int, InvalidEventError] = {}
    j = 0  # the next valid event
    for item in items:
        if type(item) is RunBlock:
            j = _run_outputs(item, ids, valid, metrics, model_name, learn_unlabeled, outputs, shown, as_bytes,
                             positions)
        elif isinstance(item, InvalidEventError):
            refused[j] = item
            j += 1
        else:
            prediction, proba = item
            label = labels[j]
            # an unlabeled event is learned when the model knew a class, i.e. predicted one
            learned = label is not None or (learn_unlabeled and bool(proba))
            metrics.update_prediction(label, prediction, proba, learned)
            record = valid[j]
            write = output_bytes if as_bytes else output_record
            outputs.append(write(ids[j], prediction, proba, model_name, learned, metrics.learned, record.position,
                                 None, shown))
            j += 1
    if refused:
        return outputs, [valid[i] for i in range(j) if i not in refused], refused
    return outputs, valid if j == len(valid) else valid[:j], refused  # (a poll's RecordColumns left as columns)


def _run_outputs(block: RunBlock, ids: list, valid: list[Record], metrics: PrequentialMetrics, model_name: str,
                 learn_unlabeled: bool, outputs: list, shown: ShownProba | None = None, as_bytes: bool = False,
                 positions: Sequence | None = None) -> int:
    """Append the outputs of a run's events (their bytes with ``as_bytes``); count them in ``metrics``;
    return where the run stopped."""
    a, b = block.start, block.stop
    classes, yc, proba = block.classes, block.yc, block.proba
    labeled = yc >= 0
    rows = np.flatnonzero(labeled)
    # a run's events know a class (they were predicted one): an unlabeled one is learned with learn_unlabeled
    learned = np.ones(b - a, dtype=bool) if learn_unlabeled else labeled
    n_learned = (metrics.learned + np.cumsum(learned)).tolist()
    hits = block.decided[rows] == yc[rows]
    metrics.update_many(b - a, int(np.count_nonzero(learned)), int(np.count_nonzero(hits)), proba[rows, yc[rows]],
                        hits)
    if as_bytes and shown is None:
        written = run_bytes(ids[a:b], classes, block.decided, proba, model_name, learned.tolist(), n_learned,
                            list(map(_POSITION, valid[a:b])) if positions is None else positions[a:b])
        if written is not None:
            outputs.extend(written)
            return b
    keys = [label_key(c) for c in classes]
    predictions = list(map(classes.__getitem__, block.decided.tolist()))
    run: list[OutputRecord] = [] if as_bytes else outputs
    if shown is not None:
        run.extend(_shown_outputs(block, keys, predictions, shown.k, ids[a:b], model_name, learned.tolist(),
                                  n_learned, valid[a:b]))
    else:
        run.extend([
            {"id": event_id, "prediction": prediction, "proba": dict(zip(keys, p)), "model": name, "learned": l,
             "n_learned": n, "source": record.position}
            for event_id, prediction, p, name, l, n, record in zip(
                ids[a:b], predictions, proba.tolist(), repeat(model_name), learned.tolist(), n_learned, valid[a:b])
        ])
    if as_bytes:
        outputs.extend(outputs_bytes(run))
    return b


def _shown_outputs(block: RunBlock, keys: list, predictions: list, k: int | None, ids: list, model_name: str,
                   learned: list, n_learned: list, records: list) -> list[OutputRecord]:
    """A run's outputs with no ``proba`` (``k`` None), or with its ``k`` most probable classes and the
    prediction's, in decreasing probability, as :class:`~stream_nb.engine.contract._records.ShownProba` gives them."""
    if k is None:
        return [{"id": event_id, "prediction": prediction, "model": model_name, "learned": l, "n_learned": n,
                 "source": record.position}
                for event_id, prediction, l, n, record in zip(ids, predictions, learned, n_learned, records)]
    proba = block.proba
    k = min(k, proba.shape[1])
    order = np.argsort(-proba, axis=1, kind="stable")[:, :k]  # ties in class order, as heapq.nlargest keeps them
    rows = proba.tolist()
    outputs: list[OutputRecord] = []
    for event_id, prediction, decided, top, p, l, n, record in zip(
            ids, predictions, block.decided.tolist(), order.tolist(), rows, learned, n_learned, records):
        if decided not in top:
            top.append(decided)
        outputs.append({"id": event_id, "prediction": prediction, "proba": {keys[c]: p[c] for c in top},
                        "model": model_name, "learned": l, "n_learned": n, "source": record.position})
    return outputs


def send_all(sink: Sink, values: list[bytes], keys: list) -> None:
    """Send each value with its key, in order: with one call to a :class:`~stream_nb.engine.SendsMany` sink."""
    if not values:
        return
    send_many = getattr(sink, "send_many", None)  # (a runtime protocol check costs more than the poll's sends)
    if send_many is not None:
        send_many(values, keys)
    else:
        send = sink.send
        for value, key in zip(values, keys):
            send(value, key)
