"""``/metrics``: a Prometheus collector that reads the engine's counters at scrape time.

Nothing is counted twice: the event counters are the engine's own
:class:`~stream_nb.engine.PrequentialMetrics`, read when Prometheus scrapes,
so the per-event path pays nothing for them. The registry is per process
(never prometheus_client's global one), so tests and embedders can run
several daemons in one interpreter.

:data:`METRICS` lists every family: its name (as exposed), type, labels and meaning.
"""

from __future__ import annotations

import time
import typing

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    SummaryMetricFamily,
)
from prometheus_client.process_collector import ProcessCollector

from .. import __version__
from ._join_metrics import JOIN_METRICS, join_families
from ._observer import DaemonObserver

__all__ = ["METRICS", "make_registry"]

#: (exposed name, type, labels, meaning): the metric table of docs/operations.md is this list.
METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("stream_nb_info", "gauge", "model, version, mode", "always 1; the labels say what runs"),
    ("stream_nb_events_consumed_total", "counter", "",
     "records taken from the input (valid events + dead letters); feedback records are counted by the join"),
    ("stream_nb_predictions_total", "counter", "", "output records emitted, one per valid event"),
    ("stream_nb_events_labeled_total", "counter", "", "events that carried a label as they arrived (scored then)"),
    ("stream_nb_predictions_correct_total", "counter", "", "labeled events predicted right"),
    ("stream_nb_events_learned_total", "counter", "", "events the model learned, each once (see the event contract)"),
    ("stream_nb_dead_letters_total", "counter", "reason", "rejected records, by reason code"),
    ("stream_nb_prequential_accuracy", "gauge", "model",
     "correct / labeled since start (absent before the first label)"),
    ("stream_nb_recent_accuracy", "gauge", "model, window",
     "correct / labeled over the last window (1000) labeled events this process scored (absent before the first)"),
    ("stream_nb_prequential_log_loss", "gauge", "model",
     "mean prequential log loss in nats since start (absent before the first label)"),
    ("stream_nb_processing_latency_seconds", "histogram", "",
     "per event, from the poll that returned it to its output handed to the sink"),
    ("stream_nb_consumer_lag_records", "gauge", "partition",
     "Kafka: end offset - consumer position, refreshed every --lag-interval"),
    ("stream_nb_input_remaining_bytes", "gauge", "partition",
     "JSON lines from a regular file: bytes not read yet, refreshed every --lag-interval"),
    ("stream_nb_lag_updated_timestamp_seconds", "gauge", "", "when the lag was last read (Unix time)"),
    ("stream_nb_partitions_assigned", "gauge", "", "Kafka: input partitions assigned to this process"),
    ("stream_nb_output_in_flight", "gauge", "", "outputs + dead letters sent and not yet acknowledged"),
    ("stream_nb_input_paused", "gauge", "", "1 while back-pressure holds the input"),
    ("stream_nb_backpressure_pauses_total", "counter", "", "times back-pressure held the input"),
    ("stream_nb_backpressure_paused_seconds_total", "counter", "", "time the input was held by back-pressure"),
    ("stream_nb_backpressure_source_pauses_total", "counter", "",
     "holds that outlasted --max-in-flight's wait and paused the source"),
    ("stream_nb_output_flushes_total", "counter", "result", "checkpoint flushes of both sinks, ok or failed"),
    ("stream_nb_output_flush_seconds", "summary", "", "time spent in checkpoint flushes (_sum, _count)"),
    ("stream_nb_snapshots_total", "counter", "result", "snapshots written (ok) or failed"),
    ("stream_nb_snapshot_duration_seconds", "gauge", "", "duration of the last snapshot attempt"),
    ("stream_nb_snapshot_age_seconds", "gauge", "", "seconds since the last successful snapshot"),
    ("stream_nb_model_rebuilds_total", "counter", "model",
     "structure rebuilds of the model (TAN tree), over the model's life (restored from a snapshot)"),
    ("stream_nb_model_rebuild_seconds", "histogram", "model", "duration of each rebuild seen by this process"),
    ("stream_nb_model_drifts_total", "counter", "model",
     "drifts the model's drift detector found (each a switch to fresh counts), over the model's life"),
    ("stream_nb_model_count_cells", "gauge", "model",
     "cells the model's counts hold (dense arrays whole; sparse tables, the cells that occur)"),
    ("stream_nb_model_count_bytes", "gauge", "model", "bytes the model's counts take"),
    ("stream_nb_model_memory_budget_bytes", "gauge", "model",
     "the model's memory_budget: dense tables beyond it are kept sparse (absent: none)"),
    ("stream_nb_model_staleness_seconds", "gauge", "",
     "--model-topic: how long this member's view has been behind a state it read (0: current)"),
    ("stream_nb_model_staleness_events", "gauge", "",
     "--model-topic: events learned by other members, read but not yet in this member's view"),
    ("stream_nb_model_records_published_total", "counter", "", "--model-topic: records this member published"),
    ("stream_nb_model_bytes_published_total", "counter", "", "--model-topic: bytes of those records"),
    ("stream_nb_model_records_applied_total", "counter", "", "--model-topic: records this member read and applied"),
    ("stream_nb_model_bytes_applied_total", "counter", "", "--model-topic: bytes of those records"),
    ("stream_nb_group_events_learned", "gauge", "",
     "--model-topic: events the whole group learned, by the newest state of each partition"),
    ("stream_nb_loop_age_seconds", "gauge", "", "seconds since the run loop last came round (liveness)"),
    ("stream_nb_ready", "gauge", "", "1 when /readyz answers 200"),
    ("stream_nb_start_time_seconds", "gauge", "", "process start (Unix time)"),
    ("process_*", "various", "", "prometheus_client's process collector: CPU, resident memory, open fds"),
) + JOIN_METRICS

_DOC = {name: doc for name, _, _, doc in METRICS}


def _doc(name: str) -> str:
    return _DOC.get(name) or _DOC[name + "_total"]


class _Collector:
    """Builds every ``stream_nb_*`` family from a :class:`DaemonObserver` at scrape time."""

    def __init__(self, observer: DaemonObserver):
        self.observer = observer

    def describe(self) -> list:
        return []  # families depend on the mode and model; no name clashes to check

    def collect(self) -> typing.Iterator:
        o = self.observer
        engine = o.engine
        model = o.model_name
        info = InfoMetricFamily("stream_nb", _doc("stream_nb_info"))
        info.add_metric([], {"model": model, "version": __version__, "mode": o.mode})
        yield info

        m = engine.metrics if engine is not None else None
        for name, attr in (
            ("stream_nb_events_consumed", "events"),
            ("stream_nb_predictions", "predicted"),
            ("stream_nb_events_labeled", "labeled"),
            ("stream_nb_predictions_correct", "correct"),
            ("stream_nb_events_learned", "learned"),
        ):
            yield CounterMetricFamily(name, _doc(name), value=getattr(m, attr) if m is not None else 0)
        dead = CounterMetricFamily("stream_nb_dead_letters", _doc("stream_nb_dead_letters"), labels=["reason"])
        for reason, n in sorted(dict(m.dead_letters_by_reason if m is not None else {}).items()):
            dead.add_metric([reason], n)
        yield dead
        accuracy = GaugeMetricFamily("stream_nb_prequential_accuracy", _doc("stream_nb_prequential_accuracy"),
                                     labels=["model"])
        log_loss = GaugeMetricFamily("stream_nb_prequential_log_loss", _doc("stream_nb_prequential_log_loss"),
                                     labels=["model"])
        recent = GaugeMetricFamily("stream_nb_recent_accuracy", _doc("stream_nb_recent_accuracy"),
                                   labels=["model", "window"])
        if m is not None and m.labeled:
            labeled, correct, loss = m.labeled, m.correct, m.log_loss_sum
            accuracy.add_metric([model], correct / labeled)
            log_loss.add_metric([model], loss / labeled)
        if m is not None and m.recent.count:
            recent.add_metric([model, str(m.recent.window)], m.recent.accuracy)
        yield accuracy
        yield recent
        yield log_loss

        latency = o.latency
        buckets = latency.cumulative()
        yield HistogramMetricFamily("stream_nb_processing_latency_seconds",
                                    _doc("stream_nb_processing_latency_seconds"),
                                    buckets=buckets, sum_value=latency.sum)

        lag = o.lag
        if o.lag_unit == "bytes":
            family = GaugeMetricFamily("stream_nb_input_remaining_bytes", _doc("stream_nb_input_remaining_bytes"),
                                       labels=["partition"])
        else:
            family = GaugeMetricFamily("stream_nb_consumer_lag_records", _doc("stream_nb_consumer_lag_records"),
                                       labels=["partition"])
        for partition, n in sorted((lag or {}).items()):
            family.add_metric([partition], n)
        yield family
        if o.lag_updated_at is not None:
            yield GaugeMetricFamily("stream_nb_lag_updated_timestamp_seconds",
                                    _doc("stream_nb_lag_updated_timestamp_seconds"), value=o.lag_updated_at)
        if o.kafka:
            yield GaugeMetricFamily("stream_nb_partitions_assigned", _doc("stream_nb_partitions_assigned"),
                                    value=len(o.assigned))

        flow = engine.flow if engine is not None else None
        yield GaugeMetricFamily("stream_nb_output_in_flight", _doc("stream_nb_output_in_flight"),
                                value=flow.in_flight() if flow is not None else 0)
        yield GaugeMetricFamily("stream_nb_input_paused", _doc("stream_nb_input_paused"),
                                value=1 if flow is not None and flow.paused else 0)
        yield CounterMetricFamily("stream_nb_backpressure_pauses", _doc("stream_nb_backpressure_pauses"),
                                  value=flow.pauses if flow is not None else 0)
        yield CounterMetricFamily("stream_nb_backpressure_paused_seconds",
                                  _doc("stream_nb_backpressure_paused_seconds"),
                                  value=flow.paused_seconds if flow is not None else 0.0)
        yield CounterMetricFamily("stream_nb_backpressure_source_pauses",
                                  _doc("stream_nb_backpressure_source_pauses"),
                                  value=flow.source_pauses if flow is not None else 0)

        flushes = CounterMetricFamily("stream_nb_output_flushes", _doc("stream_nb_output_flushes"),
                                      labels=["result"])
        flushes.add_metric(["ok"], o.flushes_ok)
        flushes.add_metric(["failed"], o.flushes_failed)
        yield flushes
        yield SummaryMetricFamily("stream_nb_output_flush_seconds", _doc("stream_nb_output_flush_seconds"),
                                  count_value=o.flushes_ok + o.flushes_failed, sum_value=o.flush_seconds)

        snapshots = CounterMetricFamily("stream_nb_snapshots", _doc("stream_nb_snapshots"), labels=["result"])
        snapshots.add_metric(["ok"], o.snapshots_ok)
        snapshots.add_metric(["failed"], o.snapshots_failed)
        yield snapshots
        if o.snapshot_last_seconds is not None:
            yield GaugeMetricFamily("stream_nb_snapshot_duration_seconds",
                                    _doc("stream_nb_snapshot_duration_seconds"), value=o.snapshot_last_seconds)
        if o.snapshot_last_ok_at is not None:
            yield GaugeMetricFamily("stream_nb_snapshot_age_seconds", _doc("stream_nb_snapshot_age_seconds"),
                                    value=max(0.0, time.time() - o.snapshot_last_ok_at))

        if o._model is not None:
            rebuilds = CounterMetricFamily("stream_nb_model_rebuilds", _doc("stream_nb_model_rebuilds"),
                                           labels=["model"])
            rebuilds.add_metric([model], getattr(engine.model, "n_rebuilds", o._model.n_rebuilds))
            yield rebuilds
            seconds = HistogramMetricFamily("stream_nb_model_rebuild_seconds",
                                            _doc("stream_nb_model_rebuild_seconds"), labels=["model"])
            seconds.add_metric([model], o.rebuild_seconds.cumulative(), o.rebuild_seconds.sum)
            yield seconds

        if getattr(engine, "joiner", None) is not None:
            yield from join_families(engine.joiner, model)
        if engine is not None and getattr(engine.model, "drifts", None) is not None:
            drifts = CounterMetricFamily("stream_nb_model_drifts", _doc("stream_nb_model_drifts"), labels=["model"])
            drifts.add_metric([model], len(engine.model.drifts))
            yield drifts
        memory_used = getattr(engine.model, "memory_used", None) if engine is not None else None
        if memory_used is not None:
            used = memory_used()
            for name, value in (("stream_nb_model_count_cells", used["cells"]),
                                ("stream_nb_model_count_bytes", used["bytes"]),
                                ("stream_nb_model_memory_budget_bytes", used["budget"])):
                if value is not None:
                    family = GaugeMetricFamily(name, _doc(name), labels=["model"])
                    family.add_metric([model], value)
                    yield family
        yield from self._group(engine)

        age = o.loop_age()
        if age is not None:
            yield GaugeMetricFamily("stream_nb_loop_age_seconds", _doc("stream_nb_loop_age_seconds"), value=age)
        ready, _ = o.readiness()
        yield GaugeMetricFamily("stream_nb_ready", _doc("stream_nb_ready"), value=1 if ready else 0)
        yield GaugeMetricFamily("stream_nb_start_time_seconds", _doc("stream_nb_start_time_seconds"),
                                value=o.started_at)


    @staticmethod
    def _group(engine: typing.Any) -> typing.Iterator:
        """The families of a member sharing one model (``--model-topic``), from its checkpointer's figures."""
        checkpointer = getattr(engine, "checkpointer", None) if engine is not None else None
        if checkpointer is None:
            return
        status = checkpointer.status()
        if "model_topic" not in status:
            return
        for name in ("model_staleness_seconds", "model_staleness_events", "group_events_learned"):
            yield GaugeMetricFamily(f"stream_nb_{name}", _doc(f"stream_nb_{name}"), value=status[name])
        for name in ("model_records_published", "model_bytes_published", "model_records_applied",
                     "model_bytes_applied"):
            yield CounterMetricFamily(f"stream_nb_{name}", _doc(f"stream_nb_{name}"), value=status[name])


def make_registry(observer: DaemonObserver) -> CollectorRegistry:
    """A fresh registry with the daemon's collector and prometheus_client's process collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(observer))
    ProcessCollector(registry=registry)
    return registry
