"""``/metrics`` of the join of labels that come later (``--feedback``): read off the engine's Joiner at scrape time."""

from __future__ import annotations

import typing

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

__all__ = ["JOIN_METRICS", "join_families"]

#: (exposed name, type, labels, meaning), as in stream_nb.ops._prometheus.METRICS: present with --feedback only.
JOIN_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("stream_nb_pending_events", "gauge", "", "events held for their label (--feedback)"),
    ("stream_nb_pending_labels", "gauge", "", "labels that came before their event, waiting for it"),
    ("stream_nb_labels_total", "counter", "outcome",
     "labels and held events by outcome: joined, expired, unmatched, duplicate, evicted, rejected (a feedback "
     "record dead-lettered for another reason than unmatched)"),
    ("stream_nb_provisional_retractions_total", "counter", "", "provisional labels taken back for the true one"),
    ("stream_nb_provisional_kept_total", "counter", "kept",
     "provisional labels the model could not take back: kept instead of the true label (provisional) or beside "
     "it (both), each logged"),
    ("stream_nb_label_delay_seconds", "histogram", "", "from an event's time to its label's, per joined label"),
    ("stream_nb_delayed_accuracy", "gauge", "model",
     "the prediction made on arrival against the label that came later (absent before the first)"),
)


def join_families(joiner, model: str) -> typing.Iterator:
    """Every family of :data:`JOIN_METRICS` for ``joiner`` (a :class:`~stream_nb.engine.Joiner`)."""
    doc = {name: text for name, _, _, text in JOIN_METRICS}
    status = joiner.status()
    yield GaugeMetricFamily("stream_nb_pending_events", doc["stream_nb_pending_events"], value=status["pending_events"])
    yield GaugeMetricFamily("stream_nb_pending_labels", doc["stream_nb_pending_labels"], value=status["pending_labels"])
    labels = CounterMetricFamily("stream_nb_labels", doc["stream_nb_labels_total"], labels=["outcome"])
    for outcome in ("joined", "expired", "unmatched", "duplicate", "evicted", "rejected"):
        labels.add_metric([outcome], joiner.counts[outcome])
    yield labels
    yield CounterMetricFamily("stream_nb_provisional_retractions", doc["stream_nb_provisional_retractions_total"],
                              value=joiner.counts["retractions"])
    kept = CounterMetricFamily("stream_nb_provisional_kept", doc["stream_nb_provisional_kept_total"], labels=["kept"])
    for which in ("provisional", "both"):
        kept.add_metric([which], joiner.counts[f"kept_{which}"])
    yield kept
    buckets, total = [], 0
    for bound, n in status["label_delay_buckets"].items():
        total += n
        buckets.append(("+Inf" if bound == "inf" else bound, total))
    yield HistogramMetricFamily("stream_nb_label_delay_seconds", doc["stream_nb_label_delay_seconds"],
                                buckets=buckets, sum_value=status["label_delay_sum"])
    accuracy = GaugeMetricFamily("stream_nb_delayed_accuracy", doc["stream_nb_delayed_accuracy"], labels=["model"])
    if status["delayed_accuracy"] is not None:
        accuracy.add_metric([model], status["delayed_accuracy"])
    yield accuracy
