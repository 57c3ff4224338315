"""The run loop: poll, predict then learn one event at a time, send, checkpoint.

A model with ``prequential_iter(xs, ys)`` (stream_nb's learners) gets each
poll's valid events in one call, with the same results as per-event calls; any
other river classifier is called per event. Each valid event gets one output
record and each rejected one a dead letter, sent with the input record's key.
:meth:`Engine.checkpoint` flushes the sinks, then commits the positions after
the last processed record: every ``commit_every_records`` records or
``commit_interval_s`` seconds, when a poll comes back empty with work pending,
and when :meth:`Engine.run` ends. A ``checkpointer`` (``--snapshot-dir``) takes
over each checkpoint through the engine's public methods; :attr:`Engine.flow`
applies back-pressure and :attr:`Engine.observer` hears what happens.
"""

from __future__ import annotations

import bisect
import logging
import operator
import time
import typing

import orjson

from ..._checks import configure, is_integer
from ...exceptions import CommitError, ConfigError, InvalidEventError, LabelTypeError
from ...learners import prequential_step
from ...stats import json_type
from ..contract import EVENT_DEFAULTS
from ..contract import EventDecoder, oversize_error
from ._flow import FlowControl
from ._input_check import InputCheck
from ._metrics import DEFAULT_LOG_LOSS_FLOOR, PrequentialMetrics
from ._observer import Observer
from ..contract import Checkpointing, SharesLearning, Sink, Source
from ._poll import poll_outputs, send_all
from ..contract import OUTPUT_DEFAULTS, Record, RecordColumns, dead_letter_record, output_bytes, outputs_bytes, shown_proba

__all__ = ["DEFAULT_CONFIG", "Engine", "check_config"]

log = logging.getLogger("stream_nb.engine")

_KEY, _PARTITION, _NEXT_POSITION = (operator.itemgetter(i) for i in (1, 2, 4))  # of a Record

DEFAULT_CONFIG: dict[str, typing.Any] = {
    **EVENT_DEFAULTS,
    **OUTPUT_DEFAULTS,  # top_k, no_proba: the classes an output's "proba" shows
    # Name written in every output record's "model" field; None: the model's class name.
    "model_name": None,
    # Most records taken from the source per poll.
    "poll_max_records": 500,
    # Longest wait in seconds for a poll; also bounds how late stop() is noticed.
    "poll_timeout": 0.2,
    # Checkpoint (flush + commit) after this many records since the last one.
    "commit_every_records": 10_000,
    # Checkpoint at least this often, in seconds, while records flow.
    "commit_interval_s": 5.0,
    # Raw bytes of a rejected event copied into its dead-letter record.
    "dead_letter_max_value_bytes": 64 * 1024,
    # Probability floor of the prequential log loss (see stream_nb.engine.loop._metrics).
    "log_loss_floor": DEFAULT_LOG_LOSS_FLOOR,
    # Log the metrics at INFO every this many seconds; 0 disables.
    "log_metrics_interval_s": 60.0,
    # Add "imputed": {feature: most probable value} of the event's missing attributes
    # to each output (the model must have impute_one, as stream_nb's models do).
    "emit_imputed": False,
    # Back-pressure: hold the input while the sinks hold more than this many unacknowledged
    # outputs, until they are down to half; 0: never (see stream_nb.engine.loop._flow).
    "max_in_flight": 5000,
    # Back-pressure: seconds to wait for the acknowledgements before pausing the source
    # (a paused Kafka consumer drops the records it fetched ahead); 0: pause at once.
    "max_in_flight_wait_s": 1.0,
}


def _number(config: dict, name: str, kind: type, allow_zero: bool = False) -> None:
    value = config[name]
    ok = is_integer(value) or (kind is float and isinstance(value, float))
    if ok:
        ok = value >= 0 if allow_zero else value > 0
    if not ok:
        expected = "a non-negative" if allow_zero else "a positive"
        noun = "number" if kind is float else "integer"
        raise ConfigError(f"{name} must be {expected} {noun}, got {value!r}")


def check_config(config: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """Validate engine settings against :data:`DEFAULT_CONFIG`; return them merged over it.

    >>> check_config({"poll_max_records": 100})["poll_max_records"]
    100
    >>> check_config({"poll_max_records": 0})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: poll_max_records must be a positive integer, got 0
    """
    config = configure(DEFAULT_CONFIG, config, "engine setting")
    _number(config, "poll_max_records", int)
    _number(config, "poll_timeout", float, allow_zero=True)
    _number(config, "commit_every_records", int)
    _number(config, "commit_interval_s", float, allow_zero=True)
    _number(config, "dead_letter_max_value_bytes", int, allow_zero=True)
    _number(config, "log_metrics_interval_s", float, allow_zero=True)
    _number(config, "max_in_flight", int, allow_zero=True)
    _number(config, "max_in_flight_wait_s", float, allow_zero=True)
    if not isinstance(config["emit_imputed"], bool):
        raise ConfigError(f"emit_imputed must be True or False, got {config['emit_imputed']!r}")
    name = config["model_name"]
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"model_name must be a string or None, got {name!r}")
    EventDecoder({k: config[k] for k in EVENT_DEFAULTS})
    PrequentialMetrics(config["log_loss_floor"])
    shown_proba(config)
    return config


class Engine:
    """Feed events from a source through a model into an output sink.

    Parameters
    ----------
    model
        A river classifier: ``predict_proba_one``, ``predict_one``, ``learn_one``.
        When it also has ``predict_and_proba_one(x) -> (prediction, proba)``
        (stream_nb's learners do), that one call replaces the first two; when
        it has ``prequential_iter(xs, ys)`` (they do), each poll goes to it
        whole (see :meth:`process_many`).
    source
        A :class:`~stream_nb.engine.Source`.
    sink
        Receives one output record per valid event.
    dead_letters
        Receives one dead-letter record per rejected record.
    config
        Keys of :data:`DEFAULT_CONFIG`; unknown keys raise ``ConfigError``.

    >>> from river.naive_bayes import MultinomialNB
    >>> class ListSource:
    ...     exhausted = False
    ...     def __init__(self, values):
    ...         self.records = [Record(v, None, "demo", {"line": i + 1}, i + 1) for i, v in enumerate(values)]
    ...     def poll(self, max_records, timeout):
    ...         batch, self.records = self.records[:max_records], self.records[max_records:]
    ...         self.exhausted = not batch
    ...         return batch
    ...     def commit(self, positions): self.committed = positions
    ...     def seek(self, positions): pass
    ...     def close(self): pass
    >>> class ListSink:
    ...     def __init__(self): self.values = []
    ...     def send(self, value, key=None): self.values.append(value)
    ...     def flush(self): pass
    ...     def close(self): pass
    >>> source = ListSource([b'{"id": 1, "w": 2, "label": "a"}', b'[1]', b'{"id": 2, "w": 1}'])
    >>> out, dlq = ListSink(), ListSink()
    >>> engine = Engine(MultinomialNB(), source, out, dlq, config={"model_name": "mnb"})
    >>> engine.run()
    >>> for v in out.values: print(v.decode())
    {"id":1,"prediction":null,"proba":{},"model":"mnb","learned":true,"n_learned":1,"source":{"line":1}}
    {"id":2,"prediction":"a","proba":{"a":1.0},"model":"mnb","learned":false,"n_learned":1,"source":{"line":3}}
    >>> print(dlq.values[0].decode())
    {"reason":"not_an_object","error":"event must be a JSON object, got an array","field":null,"source":{"line":2},"size":3,"value":"[1]"}
    >>> source.committed
    {'demo': 3}
    """

    def __init__(
        self,
        model: typing.Any,
        source: Source,
        sink: Sink,
        dead_letters: Sink,
        *,
        config: dict[str, typing.Any] | None = None,
        checkpointer: Checkpointing | None = None,
    ):
        self.config = check_config(config or {})
        for method in ("predict_proba_one", "predict_one", "learn_one"):
            if not callable(getattr(model, method, None)):
                raise ConfigError(f"model {type(model).__name__} has no {method}() method")
        name = self.config["model_name"]
        self.model_name = name if name is not None else type(model).__name__
        # semi-supervised models (learn_unlabeled=True) learn unlabeled events too, once they know a class
        self._learn_unlabeled = getattr(model, "learn_unlabeled", False) is True
        self._emit_imputed = self.config["emit_imputed"]
        self._shown = shown_proba(self.config)  # None: every class in "proba"
        if self._emit_imputed and not callable(getattr(model, "impute_one", None)):
            raise ConfigError(f"emit_imputed needs a model with impute_one(); {type(model).__name__} has none")
        self._watch_labels(model)
        self._many, self._blocks = self._prequential_many(model)

        self.model = model
        self.source = source
        self.sink = sink
        self.dead_letters = dead_letters
        self.decoder = EventDecoder({k: self.config[k] for k in EVENT_DEFAULTS})
        self.metrics = PrequentialMetrics(self.config["log_loss_floor"])
        #: Per partition, the ``next_position`` of the last processed record.
        self.positions: dict[str, int] = {}
        self._committed: dict[str, int] = {}  # what the source durably holds (see mark_committed)
        self._since_checkpoint = 0
        self._last_checkpoint = time.monotonic()
        self._last_metrics_log = self._last_checkpoint
        self._stop_requested = False
        #: Reporting hooks (see stream_nb.engine.loop._observer); the daemon replaces the default no-op one.
        self.observer = Observer()
        #: Warns once when the first records show the input or the settings are plainly wrong
        #: (see stream_nb.engine.loop._input_check); None turns it off.
        self.input_check: InputCheck | None = InputCheck(self.decoder)
        #: Labels that come later (see stream_nb.engine.join._join): a Joiner the daemon sets with --feedback.
        self.joiner = None
        #: Back-pressure between the sinks' unacknowledged outputs and the source.
        self.flow = FlowControl(source, (sink, dead_letters), self.config["max_in_flight"],
                                self.config["max_in_flight_wait_s"], lambda: self._stop_requested)
        if checkpointer is not None and not isinstance(checkpointer, Checkpointing):
            raise ConfigError(
                f"checkpointer must have attach(engine), checkpoint(final) and status(); "
                f"{type(checkpointer).__name__} has not"
            )
        #: Takes over :meth:`checkpoint` when set (see :class:`~stream_nb.engine.Checkpointing`).
        self.checkpointer = checkpointer
        # a checkpointer sharing the model with a group is told what was learned, per partition
        self._sharing = checkpointer if isinstance(checkpointer, SharesLearning) else None
        self._shared: list = []  # (partition, features, label) learned since the last hand-over
        if checkpointer is not None:
            checkpointer.attach(self)

    def restore(self, model: typing.Any, metrics: dict | None, positions: dict[str, int]) -> None:
        """Continue from a snapshot: its model, its :meth:`PrequentialMetrics.state` and its positions.

        The positions count as committed. ``metrics=None`` starts the counters afresh.
        """
        for method in ("predict_proba_one", "predict_one", "learn_one"):
            if not callable(getattr(model, method, None)):
                raise ConfigError(f"model {type(model).__name__} has no {method}() method")
        if self._emit_imputed and not callable(getattr(model, "impute_one", None)):
            raise ConfigError(f"emit_imputed needs a model with impute_one(); {type(model).__name__} has none")
        self.model = model
        self._learn_unlabeled = getattr(model, "learn_unlabeled", False) is True
        self._watch_labels(model)
        self._many, self._blocks = self._prequential_many(model)
        self.metrics = PrequentialMetrics(self.config["log_loss_floor"])
        if metrics is not None:
            self.metrics.load_state(metrics)
        self.positions = dict(positions)
        self._committed = dict(positions)
        self.observer.restored()

    def replace_model(self, model: typing.Any) -> None:
        """Predict and learn with ``model`` from now on; metrics and positions go on (a group's new view)."""
        self.model = model
        self._learn_unlabeled = getattr(model, "learn_unlabeled", False) is True
        self._watch_labels(model)
        self._many, self._blocks = self._prequential_many(model)

    # -- what a checkpointer uses -----------------------------------------------------

    @property
    def committed(self) -> dict[str, int]:
        """Per partition, the position the source last committed durably (a copy)."""
        return dict(self._committed)

    def mark_committed(self, positions: dict[str, int]) -> None:
        """Record that the source durably committed ``positions`` (a checkpointer committed them)."""
        self._committed.update(positions)

    def adopt_position(self, partition: str, position: int) -> None:
        """Take ``partition`` as processed and committed up to ``position`` (another consumer did it)."""
        self.positions[partition] = position
        self._committed[partition] = position

    def limit_checkpoint_cadence(self, every_records: int, interval_s: float) -> None:
        """Checkpoint at least every ``every_records`` records and ``interval_s`` seconds (0: no limit).

        A checkpointer that snapshots at checkpoints asks for its own cadence
        when it is shorter than the configured one; polls are capped at
        ``every_records`` too, so a checkpoint is never more than one poll late.
        """
        cfg = self.config
        cfg["commit_every_records"] = min(cfg["commit_every_records"], every_records)
        cfg["poll_max_records"] = min(cfg["poll_max_records"], every_records)
        if 0 < interval_s < cfg["commit_interval_s"]:
            cfg["commit_interval_s"] = interval_s

    def flush(self) -> None:
        """Flush the outputs, then the dead letters; report the outcome to the observer."""
        start = time.perf_counter()
        try:
            self.sink.flush()
            self.dead_letters.flush()
        except BaseException as exc:
            self.observer.flush_done(time.perf_counter() - start, exc)
            raise
        self.observer.flush_done(time.perf_counter() - start, None)

    # -- label types ----------------------------------------------------------------

    def _watch_labels(self, model: typing.Any) -> None:
        """Check label types here for a model that does not (stream_nb's keep ``label_type`` themselves)."""
        self._label_type = self._first_label = None
        self._check_labels = not hasattr(model, "label_type")
        classes = getattr(model, "classes", None) if self._check_labels else None
        if isinstance(classes, (list, tuple, set)) and classes:
            self._first_label = next(iter(classes))
            self._label_type = json_type(self._first_label)

    def _check_label_type(self, label: typing.Any) -> None:
        """Raise LabelTypeError for a label of another JSON type than the first one learned."""
        t = json_type(label)
        if self._label_type is not None and t != self._label_type:
            raise LabelTypeError(label, t, self._label_type, self._first_label, field=self.config["label_field"])

    # -- control ----------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to return after the current event. Safe in a signal handler.

        It only sets a flag: the loop notices it between events (or within
        ``poll_timeout`` while waiting), then flushes, commits and returns.
        With a model that takes a poll at once (``prequential_iter``), "the
        current event" is the current poll's last one: at most
        ``poll_max_records`` events, a few milliseconds of work. Records
        already polled but not yet processed are not committed; a source that
        is consumed again replays them.
        """
        self._stop_requested = True

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` has been called."""
        return self._stop_requested

    def run(self) -> None:
        """Process records until :meth:`stop` is called or a finite source is exhausted.

        Always ends with a :meth:`checkpoint`. If an error escapes (a failing
        sink, a model bug), the checkpoint is still attempted -- committing
        only what was processed and flushed -- and the error is re-raised.
        """
        cfg = self.config
        max_records, timeout = cfg["poll_max_records"], cfg["poll_timeout"]
        every, interval = cfg["commit_every_records"], cfg["commit_interval_s"]
        observer, flow_check, clock = self.observer, self.flow.check, time.perf_counter
        input_check = self.input_check
        if input_check is not None:
            input_check.start(self)
        try:
            sync = self._sharing.sync if self._sharing is not None else None
            while not self._stop_requested:
                observer.loop()
                if sync is not None:
                    sync()
                held = flow_check()  # back-pressure: paused input, and no checkpoint blocking in flush
                records = self.source.poll(max_records, timeout)
                if self.joiner is not None:  # the feedback that is there, and expiry
                    self.joiner.tick(bool(records))
                if not records:
                    if self.source.exhausted and (self.joiner is None or self.joiner.exhausted):
                        break
                    if self._pending() and not held:
                        self.checkpoint()
                    self._maybe_log_metrics()
                    continue
                polled, event_done = clock(), observer.event_done
                try:
                    if self._many is not None:
                        self.process_many(records, polled)
                    else:
                        for record in records:
                            if self._stop_requested:
                                break
                            self.process(record)
                            event_done(polled)
                finally:
                    if self._shared:  # before any checkpoint: the positions sent cover what was learned
                        shared, self._shared = self._shared, []
                        self._sharing.learned(shared)
                if input_check is not None and input_check.active:  # the first polls only
                    input_check.see(records)
                if (
                    self._since_checkpoint >= every
                    or time.monotonic() - self._last_checkpoint >= interval
                ):
                    self.checkpoint()
                self._maybe_log_metrics()
        except BaseException:
            try:
                self.checkpoint(final=True)
            except Exception as exc:  # keep the original error, report this one
                log.error("final checkpoint failed, positions not committed: %s", exc)
            raise
        self.checkpoint(final=True)
        if input_check is not None:
            input_check.finish()

    def checkpoint(self, final: bool = False) -> None:
        """Flush both sinks, then commit the positions of every processed record.

        This is the one commit point of the engine. With a :attr:`checkpointer`
        it does the work instead (``final`` is True for the last checkpoint of
        :meth:`run`): flush, write the model, :attr:`metrics` and
        :attr:`positions` to a snapshot, then commit the positions of the last
        good snapshot, so a snapshot never claims outputs that were not
        delivered and the source never skips events the snapshot has not learned.

        A :class:`~stream_nb.exceptions.CommitError` from the source is logged
        and the positions stay pending for the next checkpoint; any other error
        propagates.
        """
        if self.checkpointer is not None:
            self.checkpointer.checkpoint(final=final)
        else:
            self.flush()
            if self.positions != self._committed:
                positions = dict(self.positions)
                try:
                    self.source.commit(positions)
                except CommitError as exc:
                    log.warning("commit failed, will retry at the next checkpoint: %s", exc)
                else:
                    self._committed = positions
        self._since_checkpoint = 0
        self._last_checkpoint = time.monotonic()

    def status(self) -> dict[str, typing.Any]:
        """:meth:`PrequentialMetrics.as_dict`, plus the checkpointer's health when there is one."""
        summary = self.metrics.as_dict()
        if self.joiner is not None:
            summary["join"] = self.joiner.status()
        if self.checkpointer is not None:
            summary.update(self.checkpointer.status())
        return summary

    # -- one record ---------------------------------------------------------------

    def process(self, record: Record) -> None:
        """Predict, learn (when labeled) and send one record, or dead-letter it."""
        try:
            event = self.decoder.decode(record.value)
            if self.joiner is not None:
                event = self.joiner.prepare(event)
            if self._check_labels and event.label is not None:
                self._check_label_type(event.label)
            # the one prequential step (stream_nb.learners.prequential_step): predict, impute, learn
            step = prequential_step(self.model, event.features, event.label, impute=self._emit_imputed)
            if step.learned and self._check_labels and self._label_type is None and event.label is not None:
                self._first_label, self._label_type = event.label, json_type(event.label)
        except InvalidEventError as exc:
            self._reject(record, exc)
        else:
            self._send(record, event, step.prediction, step.proba, step.learned, step.imputed)
            if self.joiner is not None:
                self.joiner.flush_holds()

    def process_many(self, records: list[Record], polled: float) -> None:
        """:meth:`process` for every record of a poll: the model predicts then learns each event in order,
        as one at a time would (the model's kernel over the poll's runs); outputs and dead letters go in input order.

        A stream_nb model's poll goes through whole-poll steps (``decode_columns``, with no joiner into one
        list per field, the model's ``prequential_blocks``, ``poll_outputs``, ``outputs_bytes``, the sink's
        ``send_many``; a joiner's
        ``prepare_columns`` and ``hold_sent``): the same outputs, dead letters, metrics, positions and held
        events; the observer hears of the poll at once. If the model fails part-way, what it learned is sent and
        covered by the positions before the error propagates."""
        joiner = self.joiner
        if self._blocks is None or self._sharing is not None:
            return self._process_each(records, polled)
        # features as columns where the model alone reads them (the joiner holds dicts)
        # the records' fields, each for the whole poll: value, key, partition, position, next position (a source's
        # RecordColumns hands them as they are, else one pass over the records)
        fields = records.columns if type(records) is RecordColumns else list(zip(*records)) or [()] * 5
        ids, xs, ys, bad = self.decoder.decode_columns(list(fields[0]), columns=joiner is None)
        ys = ys if joiner is None else joiner.prepare_columns(ids, xs, ys)  # early labels in; times out
        if ys is None:  # an event time the join refuses: event by event, where that event gets its own error
            return self._process_each(records, polled)
        at = [i for i in range(len(records)) if i not in bad] if bad else None  # each valid event's record
        valid = records if at is None else [records[i] for i in at]
        items: list = []
        try:
            items.extend(self._blocks(xs, ys))  # keeps the results yielded before an error
        finally:
            outputs, sent, refused = poll_outputs(items, ids, ys, valid, self.metrics, self.model_name,
                                                  self._learn_unlabeled, self._shown, as_bytes=joiner is None,
                                                  positions=fields[3] if at is None else None)
            done = len(sent) + len(refused)  # valid events the model went through
            end = len(records) if done == len(valid) else done if at is None else at[done]
            rejected = {i: exc for i, exc in bad.items() if i < end}
            rejected.update((j if at is None else at[j], exc) for j, exc in refused.items())
            # the outputs come as bytes but where the joiner reads their predictions
            keys = list(fields[1]) if len(sent) == len(records) else list(map(_KEY, sent))  # (all sent: in order)
            values, k = outputs if joiner is None else outputs_bytes(outputs), 0
            self._since_checkpoint += len(sent)
            if rejected:  # outputs and dead letters interleaved in input order, as one at a time
                where = [i for i in (at or range(end))[:done] if i not in rejected]  # each output's record
                for i in sorted(rejected):
                    n = bisect.bisect_left(where, i)
                    send_all(self.sink, values[k:n], keys[k:n])
                    self._reject(records[i], rejected[i])
                    k = n
            send_all(self.sink, values[k:], keys[k:])
            if end == len(records):
                self.positions.update(zip(fields[2], fields[4]))
            else:
                processed = records[:end]
                self.positions.update(zip(map(_PARTITION, processed), map(_NEXT_POSITION, processed)))
            self.observer.events_done(polled, end)
            if joiner is not None:  # the unlabeled events sent, held at once (before any checkpoint)
                joiner.hold_sent(outputs, sent, xs, ys, refused)
                joiner.flush_holds()

    def _process_each(self, records: list[Record], polled: float) -> None:
        """:meth:`process_many` event by event around ``prequential_iter``: with a group, a model without
        ``prequential_blocks``, or a poll with an event time the joiner refuses."""
        events = self.decoder.decode_many([record.value for record in records])
        if self.joiner is not None:
            prepare = self.joiner.prepare
            for i, event in enumerate(events):
                if not isinstance(event, InvalidEventError):
                    try:
                        events[i] = prepare(event)
                    except InvalidEventError as exc:
                        events[i] = exc
        valid = [e for e in events if not isinstance(e, InvalidEventError)]
        results = iter(self._many([e.features for e in valid], [e.label for e in valid]))
        learn_unlabeled, event_done = self._learn_unlabeled, self.observer.event_done
        send = self._send
        try:
            for record, event in zip(records, events):
                if not isinstance(event, InvalidEventError):
                    result = next(results)
                    if isinstance(result, InvalidEventError):
                        event = result
                    else:
                        prediction, proba = result
                        # an unlabeled event is learned when the model knew a class, i.e. predicted one
                        learned = event.label is not None or (learn_unlabeled and bool(proba))
                        send(record, event, prediction, proba, learned, None)
                        event_done(polled)
                        continue
                self._reject(record, event)
                event_done(polled)
        finally:
            if self.joiner is not None:  # the poll's unlabeled events, held at once (before any checkpoint)
                self.joiner.flush_holds()

    def _send(self, record: Record, event, prediction, proba: dict, learned: bool, imputed) -> None:
        self.metrics.update_prediction(event.label, prediction, proba, learned)
        self.sink.send(output_bytes(event.id, prediction, proba, self.model_name, learned, self.metrics.learned,
                                    record.position, imputed, self._shown), record.key)
        self.positions[record.partition] = record.next_position
        self._since_checkpoint += 1
        if self.joiner is not None and event.label is None and event.id is not None:
            self.joiner.hold(event, prediction, record)
        if learned and self._sharing is not None:
            self._shared.append((record.partition, event.features, event.label))

    def _reject(self, record: Record, exc: InvalidEventError) -> None:
        if record.size is not None and exc.reason == "oversize":  # the source kept only a prefix: say the real size
            exc = oversize_error(record.size, self.config["max_event_bytes"])
        if isinstance(exc, LabelTypeError) and exc.field is None:  # the model's error: name the event's field
            exc = exc.for_field(self.config["label_field"])
        self.metrics.update_dead_letter(exc.reason)
        letter = dead_letter_record(record, exc, self.config["dead_letter_max_value_bytes"])
        self.dead_letters.send(orjson.dumps(letter), record.key)
        self.positions[record.partition] = record.next_position
        self._since_checkpoint += 1

    def _prequential_many(self, model):
        """The model's ``prequential_iter`` and ``prequential_blocks`` if it takes whole polls (else None each)."""
        many = getattr(model, "prequential_iter", None)
        if not callable(many) or self._emit_imputed:  # imputations are taken between predicting and learning
            return None, None
        if self._check_labels:  # the engine checks this model's label types, one event at a time
            return None, None
        blocks = getattr(model, "prequential_blocks", None)
        return many, blocks if callable(blocks) else None

    # -- helpers ------------------------------------------------------------------

    def _pending(self) -> bool:
        """Work to checkpoint while idle: new records, a failed commit due, or a join's labels (when due)."""
        if self._since_checkpoint > 0:
            return True
        overdue = time.monotonic() - self._last_checkpoint >= self.config["commit_interval_s"]
        return overdue and (self.positions != self._committed or self.joiner is not None)

    def _maybe_log_metrics(self) -> None:
        interval = self.config["log_metrics_interval_s"]
        if interval and time.monotonic() - self._last_metrics_log >= interval:
            self._last_metrics_log = time.monotonic()
            summary = self.status()
            log.info("%s; metrics %s", self.metrics.headline(), orjson.dumps(summary).decode(),
                     extra={"event": "metrics", "metrics": summary})
