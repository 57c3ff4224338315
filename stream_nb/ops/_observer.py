"""The daemon's :class:`~stream_nb.engine.Observer`: plain counters the HTTP thread reads.

Per event it only adds the event's latency to a fixed-bucket histogram (and,
for a model that rebuilds its structure, compares one integer); a poll the
engine takes whole is counted at once, each of its events with the poll's
latency. Per loop
iteration it compares two clocks. Every ``lag_interval`` seconds it asks the
source for its lag (Kafka: one ListOffsets request, on the engine's thread
because a kafka-python consumer must not be shared between threads), and
every ``summary_interval`` seconds it logs what happened since the last
summary: dead letters by reason, structure rebuilds, back-pressure pauses.

Everything the HTTP thread reads is a plain number, a frozen set or a dict
replaced whole, so a scrape needs no lock and never slows the engine.
"""

from __future__ import annotations

import bisect
import logging
import time
import typing

from ..engine import NamedInput, Observer, Rebalancing, ReportsLag

__all__ = ["DaemonObserver", "LATENCY_BUCKETS", "REBUILD_BUCKETS"]

log = logging.getLogger("stream_nb.ops")

#: Upper bounds (seconds) of the processing-latency histogram (poll returned -> output sent).
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)
#: Upper bounds (seconds) of the structure-rebuild histogram.
REBUILD_BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: Longest a lag request may block the engine's loop, in seconds.
LAG_TIMEOUT_S = 2.0

_clock = time.perf_counter
_bisect = bisect.bisect_left


class Histogram:
    """Fixed buckets, plain integers: ``counts[i]`` events in ``(bounds[i-1], bounds[i]]``, the last one +Inf.

    >>> h = Histogram((0.1, 1.0))
    >>> for v in (0.05, 0.1, 0.5, 3.0): h.observe(v)
    >>> h.cumulative(), h.count, round(h.sum, 2)
    ([('0.1', 2), ('1.0', 3), ('+Inf', 4)], 4, 3.65)
    """

    def __init__(self, bounds: typing.Sequence[float]):
        self.bounds = tuple(float(b) for b in bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """``[(le, events <= le), ..., ("+Inf", all)]`` as Prometheus wants it."""
        out, total = [], 0
        counts = list(self.counts)  # one consistent copy
        for bound, n in zip(self.bounds, counts):
            total += n
            out.append((repr(bound), total))
        out.append(("+Inf", total + counts[-1]))
        return out


class DaemonObserver(Observer):
    """Counters, gauges and health state of one daemon process.

    Parameters
    ----------
    model_name
        The ``model`` label of the prequential gauges.
    mode
        ``"kafka"`` or ``"jsonl"``.
    liveness_timeout
        ``/healthz`` fails once the run loop has not come round for this long (seconds).
    lag_interval
        Seconds between two lag requests.
    summary_interval
        Seconds between two summary log lines (0: only when the daemon stops).
    """

    def __init__(
        self,
        *,
        model_name: str,
        mode: str,
        liveness_timeout: float = 120.0,
        lag_interval: float = 10.0,
        summary_interval: float = 60.0,
    ):
        self.model_name = model_name
        self.mode = mode
        self.liveness_timeout = liveness_timeout
        self.lag_interval = lag_interval
        self.summary_interval = summary_interval
        #: "starting", "running", "stopping" or "stopped".
        self.state = "starting"
        self.started_at = time.time()
        self.engine: typing.Any = None
        self.last_loop: float | None = None  # monotonic
        self.latency = Histogram(LATENCY_BUCKETS)
        # structure rebuilds (TAN tree, any model with an integer n_rebuilds)
        self._model: typing.Any = None
        self._rebuilds_seen = 0
        self._prev_end = 0.0
        self.rebuild_seconds = Histogram(REBUILD_BUCKETS)
        self.rebuild_last_seconds: float | None = None
        # checkpoint flushes
        self.flushes_ok = 0
        self.flushes_failed = 0
        self.flush_seconds = 0.0
        self.flush_error: str | None = None  # set by a failed flush, cleared by the next good one
        # snapshots (fed by the snapshot code through snapshot_done)
        self.snapshots_ok = 0
        self.snapshots_failed = 0
        self.snapshot_last_seconds: float | None = None
        self.snapshot_last_ok_at: float | None = None  # wall clock
        self.snapshot_error = False  # the last attempt failed
        self.snapshots_on = False
        # input
        self.kafka = mode == "kafka"
        self.assigned: frozenset[str] = frozenset()
        self.lag: dict[str, int] | None = None
        self.lag_unit: str | None = None
        self.lag_error: str | None = None
        self.lag_updated_at: float | None = None  # wall clock
        self._next_lag = 0.0
        # summaries
        self._next_summary = time.monotonic() + summary_interval if summary_interval else float("inf")
        self._summary_at = time.monotonic()
        self._dead_seen: dict[str, int] = {}  # the counts of the last summary (or of the restored snapshot)
        self._dead_metrics: typing.Any = None  # the counters _dead_seen refers to
        self._dead_pending: dict[str, int] = {}  # counted by counters a rewind replaced, not yet reported
        self._feedback_dead_seen: dict[str, int] = {}  # the join's feedback dead letters at the last summary
        self._window_rebuilds: list[float] = []
        self._pauses_seen = 0
        self._paused_seen = 0.0
        self._source_pauses_seen = 0

    # -- wiring ---------------------------------------------------------------

    def attach(self, engine: typing.Any) -> None:
        """Become ``engine``'s observer (before :meth:`~stream_nb.engine.Engine.run`)."""
        self.engine = engine
        source = engine.source
        self.lag_unit = source.lag_unit if isinstance(source, ReportsLag) else None
        n = getattr(engine.model, "n_rebuilds", None)
        if isinstance(n, int) and not isinstance(n, bool):
            self._model = engine.model
            self._rebuilds_seen = n
            self.event_done = self._event_done_and_rebuilds  # type: ignore[method-assign]
        #: True when the engine writes snapshots (a checkpointer), or once one was reported.
        self.snapshots_on = getattr(engine, "checkpointer", None) is not None
        if isinstance(source, Rebalancing):
            self.assigned = frozenset(source.assignment or ())
            source.add_rebalance_callback(self._on_rebalance)
        self.last_loop = time.monotonic()
        self.state = "running"
        engine.observer = self
        self._dead_metrics = engine.metrics
        self._dead_seen = dict(engine.metrics.dead_letters_by_reason)  # a restored snapshot's are not new
        self._feedback_dead_seen = _feedback_dead_letters(engine)

    def detach(self) -> None:
        """The engine has returned: log the last summaries, report "stopping"."""
        if self.state == "running":
            self.state = "stopping"
            self._summaries(time.monotonic())

    # -- engine hooks -----------------------------------------------------------

    def loop(self) -> None:
        now = time.monotonic()
        self.last_loop = now
        if now >= self._next_lag:
            self._refresh_lag(now)
        if now >= self._next_summary:
            self._summaries(now)

    def event_done(self, polled: float) -> None:
        latency = _clock() - polled
        histogram = self.latency  # Histogram.observe, inlined: this runs once per event
        histogram.counts[_bisect(histogram.bounds, latency)] += 1
        histogram.sum += latency

    def events_done(self, polled: float, n: int) -> None:
        """A poll's ``n`` records, all sent: each counted with the poll's latency (poll returned -> its
        last output sent), ``n`` additions in one."""
        now = _clock()
        latency = now - polled
        histogram = self.latency
        histogram.counts[_bisect(histogram.bounds, latency)] += n
        histogram.sum += latency * n
        if self._model is not None:
            self._watch_rebuilds(polled, now)

    def _event_done_and_rebuilds(self, polled: float) -> None:
        now = _clock()
        latency = now - polled
        histogram = self.latency
        histogram.counts[_bisect(histogram.bounds, latency)] += 1
        histogram.sum += latency
        self._watch_rebuilds(polled, now)

    def _watch_rebuilds(self, polled: float, now: float) -> None:
        model = self.engine.model
        if model is not self._model:  # a snapshot was restored into the engine: count from its model
            self._model, self._rebuilds_seen = model, model.n_rebuilds
        n = model.n_rebuilds
        if n != self._rebuilds_seen:
            # the rebuild ran while this event (or poll) was learned: time it (the rebuild dominates it);
            # a poll that rebuilt k times counts k rebuilds, each a k-th of its time
            start = self._prev_end if self._prev_end > polled else polled
            k = max(1, n - self._rebuilds_seen)
            for i in range(n - k + 1, n + 1):
                self._rebuilt(i, (now - start) / k)
        self._prev_end = now

    def restored(self) -> None:
        """A rewind to a snapshot: what the old counters gained since the last summary is still to be
        reported; from now on the new counters (the snapshot's figures) are the base."""
        engine = self.engine
        old = self._dead_metrics
        if old is not None:
            for reason, n in old.dead_letters_by_reason.items():
                gained = n - self._dead_seen.get(reason, 0)
                if gained:
                    self._dead_pending[reason] = self._dead_pending.get(reason, 0) + gained
        self._dead_metrics = engine.metrics
        self._dead_seen = dict(engine.metrics.dead_letters_by_reason)

    def flush_done(self, seconds: float, error: BaseException | None) -> None:
        self.flush_seconds += seconds
        if error is None:
            self.flushes_ok += 1
            self.flush_error = None
        else:
            self.flushes_failed += 1
            self.flush_error = f"{type(error).__name__}: {error}"

    def snapshot_done(self, seconds: float, ok: bool) -> None:
        """One line per snapshot written; a failure is logged by the snapshot code, with its reason."""
        self.snapshots_on = True
        self.snapshot_last_seconds = seconds
        if ok:
            self.snapshots_ok += 1
            self.snapshot_last_ok_at = time.time()
            self.snapshot_error = False
            log.info("snapshot written in %.3f s", seconds,
                     extra={"event": "snapshot", "ok": True, "seconds": round(seconds, 6)})
        else:
            self.snapshots_failed += 1
            self.snapshot_error = True

    # -- health -------------------------------------------------------------------

    def loop_age(self) -> float | None:
        """Seconds since the run loop last came round (None before it started)."""
        return None if self.last_loop is None else max(0.0, time.monotonic() - self.last_loop)

    def health(self) -> tuple[bool, dict[str, typing.Any]]:
        """``/healthz``: alive unless the running loop has stalled for ``liveness_timeout``."""
        age = self.loop_age()
        ok = self.state != "running" or (age is not None and age <= self.liveness_timeout)
        body = {"status": "ok" if ok else "stalled", "state": self.state,
                "loop_age_seconds": None if age is None else round(age, 3),
                "liveness_timeout_seconds": self.liveness_timeout}
        return ok, body

    def readiness(self) -> tuple[bool, dict[str, typing.Any]]:
        """``/readyz``: running, input attached, broker answering, outputs flushing, snapshots succeeding."""
        checks: dict[str, dict[str, typing.Any]] = {}

        def check(name: str, ok: bool, detail: typing.Any) -> None:
            checks[name] = {"ok": bool(ok), "detail": detail}

        engine = self.engine
        stopping = engine is not None and engine.stopping
        state = "stopping" if stopping and self.state == "running" else self.state
        check("running", state == "running", state)
        alive, body = self.health()
        check("loop", alive and self.last_loop is not None, f"last came round {body['loop_age_seconds']} s ago")
        if self.kafka:
            assigned = sorted(self.assigned)
            check("partitions", bool(assigned), assigned or "no partition assigned")
            check("broker", self.lag_error is None, self.lag_error or "answering")
        else:
            source = getattr(engine, "source", None)
            check("input", engine is not None, source.partition if isinstance(source, NamedInput) else None)
        check("output", self.flush_error is None, self.flush_error or "flushing")
        if self.snapshots_on:
            failed = self.snapshot_error or getattr(getattr(engine, "checkpointer", None), "last_ok", True) is False
            detail = "the last snapshot failed" if failed else (
                "the last snapshot succeeded" if self.snapshots_ok else "no snapshot written yet")
            check("snapshot", not failed, detail)
        ok = all(c["ok"] for c in checks.values())
        return ok, {"status": "ready" if ok else "not ready", "checks": checks}

    # -- internals ------------------------------------------------------------------

    def _on_rebalance(self, event: str, partitions: list[str]) -> None:
        # kafka-python's thread: replace the frozen set whole
        if event == "assigned":
            self.assigned = self.assigned | frozenset(partitions)
        else:
            self.assigned = self.assigned - frozenset(partitions)
            lag = self.lag
            if lag:
                self.lag = {p: n for p, n in lag.items() if p not in partitions}

    def _refresh_lag(self, now: float) -> None:
        self._next_lag = now + self.lag_interval
        source = getattr(self.engine, "source", None)
        if not isinstance(source, ReportsLag):
            return
        try:
            lag = source.lag(min(LAG_TIMEOUT_S, self.lag_interval))
        except Exception as exc:  # noqa: BLE001 - the broker is unreachable, or the source is closed
            error = f"{type(exc).__name__}: {exc}"
            if self.lag_error is None:
                log.warning("cannot read the input's lag: %s", error, extra={"event": "lag", "ok": False})
            self.lag_error = error
            return
        if self.lag_error is not None:
            log.info("the input's lag can be read again", extra={"event": "lag", "ok": True})
        self.lag_error = None
        if lag is not None:
            self.lag = dict(lag)
            self.lag_updated_at = time.time()

    def _rebuilt(self, n: int, seconds: float) -> None:
        first = self._rebuilds_seen == 0
        self._rebuilds_seen = n
        self.rebuild_seconds.observe(seconds)
        self.rebuild_last_seconds = seconds
        self._window_rebuilds.append(seconds)
        root = getattr(self._model, "root", None)
        log.log(logging.INFO if first else logging.DEBUG, "model structure rebuilt (rebuild %d) in %.4f s",
                n, seconds, extra={"event": "rebuild", "n_rebuilds": n, "seconds": round(seconds, 6),
                                   "root": root})

    def _feedback_summary(self, engine: typing.Any, window: float) -> None:
        """The feedback records dead-lettered since the last summary, by the join's count (they are not
        events: the line above counts events only); after a rewind to fewer, from the rewound counts."""
        counts = _feedback_dead_letters(engine)
        new = {k: n - self._feedback_dead_seen.get(k, 0) for k, n in counts.items()}
        new = {k: n for k, n in new.items() if n > 0}
        self._feedback_dead_seen = counts
        if new:
            log.info("feedback records dead-lettered in the last %.0f s: %s", window,
                     ", ".join(f"{k} {n}" for k, n in new.items()),
                     extra={"event": "feedback_dead_letters", "window_seconds": round(window, 3), "by_outcome": new})

    def _summaries(self, now: float) -> None:
        """One line per kind of activity since the last summary, only for kinds that happened."""
        window = now - self._summary_at
        self._summary_at = now
        if self.summary_interval:
            self._next_summary = now + self.summary_interval
        engine = self.engine
        if engine is None:
            return
        self._dead_metrics = engine.metrics
        dead = dict(engine.metrics.dead_letters_by_reason)
        new = dict(self._dead_pending)
        self._dead_pending = {}
        for r, n in dead.items():
            if n != self._dead_seen.get(r, 0):
                new[r] = new.get(r, 0) + n - self._dead_seen.get(r, 0)
        new = {r: n for r, n in sorted(new.items()) if n}
        self._dead_seen = dead
        if new:
            log.info("dead letters in the last %.0f s: %s", window,
                     ", ".join(f"{r} {n}" for r, n in new.items()),
                     extra={"event": "dead_letters", "window_seconds": round(window, 3), "by_reason": new,
                            "total": sum(dead.values())})
        self._feedback_summary(engine, window)
        rebuilds, self._window_rebuilds = self._window_rebuilds, []
        if rebuilds:
            log.info("model structure rebuilt %d times in the last %.0f s (mean %.4f s, max %.4f s)",
                     len(rebuilds), window, sum(rebuilds) / len(rebuilds), max(rebuilds),
                     extra={"event": "rebuilds", "window_seconds": round(window, 3), "count": len(rebuilds),
                            "mean_seconds": sum(rebuilds) / len(rebuilds), "max_seconds": max(rebuilds),
                            "n_rebuilds": self._rebuilds_seen, "root": getattr(self._model, "root", None)})
        flow = engine.flow
        pauses, paused, source_pauses = flow.pauses, flow.paused_seconds, flow.source_pauses
        if pauses != self._pauses_seen:
            log.info("back-pressure held the input %d times for %.1f s in the last %.0f s (%d paused the source)",
                     pauses - self._pauses_seen, paused - self._paused_seen, window,
                     source_pauses - self._source_pauses_seen,
                     extra={"event": "backpressure", "window_seconds": round(window, 3),
                            "pauses": pauses - self._pauses_seen,
                            "paused_seconds": round(paused - self._paused_seen, 3),
                            "source_pauses": source_pauses - self._source_pauses_seen, "limit": flow.limit})
        self._pauses_seen, self._paused_seen, self._source_pauses_seen = pauses, paused, source_pauses


def _feedback_dead_letters(engine: typing.Any) -> dict[str, int]:
    """The feedback records the engine's join dead-lettered, by outcome (none without ``--feedback``)."""
    joiner = getattr(engine, "joiner", None)
    if joiner is None:
        return {}
    return {"rejected": joiner.counts.get("rejected", 0), "unmatched": joiner.counts.get("unmatched", 0)}
