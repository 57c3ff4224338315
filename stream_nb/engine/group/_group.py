"""One model across a consumer group: members share per-partition counts over a model topic.

With ``--model-topic`` the owner of each input partition publishes that
partition's counts, with the input offset they cover, on the model topic; every
member keeps the state of highest offset of each partition (so a replay never
counts twice) and predicts with the merge of all of them. The engine calls
:meth:`GroupCheckpointer.learned` with the events it learned and
:meth:`GroupCheckpointer.sync` on every turn of its loop. The docs' *Groups*
page gives the checkpoints, ownership and delayed labels in a group.
"""

from __future__ import annotations

import itertools
import logging
import operator
import time
import typing
import uuid

from ...exceptions import CommitError, ConfigError, SnapshotError, UnlearnError
from ...snapshots import SnapshotStore, decode_state, encode_state, installed_fault_hooks
from ..checkpoint import abort_while_unreachable
from ..loop import Engine
from ._group_records import StateLog, merge_states, partition_order, state_order, state_records
from ..contract import HandlesRevocation, ModelChannel, Rebalancing, Repositionable, ResumesByPolicy, Transactional

__all__ = ["GROUP_METADATA_PREFIX", "GroupCheckpointer", "PartitionState"]

log = logging.getLogger("stream_nb.group")

#: Kafka commit metadata of the offsets a member committed with its published states.
GROUP_METADATA_PREFIX = "stream-nb group "


def _is_offset(value: typing.Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _runs_by_partition(events: list[tuple[str, typing.Any, typing.Any]]) -> typing.Iterator[tuple[str, list, list]]:
    """``(partition, features, labels)`` of each run of consecutive ``(partition, x, y)`` events of one partition."""
    for partition, run in itertools.groupby(events, key=operator.itemgetter(0)):
        run = list(run)
        yield partition, [e[1] for e in run], [e[2] for e in run]


class PartitionState(typing.NamedTuple):
    """One input partition's published state: the offset it covers, its encoded bytes, its info."""

    offset: int
    payload: bytes
    info: dict


class GroupCheckpointer:
    """The engine's checkpointer with ``--model-topic``: see the module docstring.

    Parameters
    ----------
    channel
        The model topic (a :class:`~stream_nb.engine.ModelChannel`).
    template
        An empty model with the daemon's settings: the view is a ``clone()`` of it.
    member
        This member's name (``--instance-id``), written into its states.
    sync_interval, sync_every
        Publish and apply at least every this many seconds / events.
    transaction
        With ``--exactly-once``: the :class:`~stream_nb.engine.Transactional`
        the states are published in, with the outputs and the input offsets.
    store
        An opened :class:`~stream_nb.snapshots.SnapshotStore` (``--snapshot-dir``):
        a local cache of the group's model, written every ``snapshot_interval``
        seconds. The model topic stays the source of truth.
    """

    def __init__(
        self,
        channel: ModelChannel,
        template: typing.Any,
        *,
        member: str = "stream-nb",
        sync_interval: float = 1.0,
        sync_every: int = 10_000,
        transaction: Transactional | None = None,
        store: SnapshotStore | None = None,
        snapshot_interval: float = 60.0,
        source_info: dict | None = None,
        catch_up_timeout: float = 60.0,
    ):
        if not isinstance(channel, ModelChannel):
            raise ConfigError(f"a model topic needs a channel with publish, flush, poll and catch_up; got "
                              f"{type(channel).__name__}")
        for method in ("clone", "merge", "state"):
            if not callable(getattr(template, method, None)):
                raise ConfigError(f"--model-topic needs one of stream_nb's models (merge, state); "
                                  f"{type(template).__name__} has no {method}()")
        if transaction is not None and not isinstance(transaction, Transactional):
            raise ConfigError(f"exactly-once publication needs a transaction, got {type(transaction).__name__}")
        self.channel = channel
        self.template = template
        self.member = member
        self.sync_interval = float(sync_interval)
        self.sync_every = int(sync_every)
        self.transaction = transaction
        self.exactly_once = transaction is not None
        self.store = store
        self.snapshot_interval = float(snapshot_interval)
        self.source_info = dict(source_info or {})
        self.catch_up_timeout = catch_up_timeout
        self.engine: Engine = None  # type: ignore[assignment]  # set by attach()
        self.log = StateLog()
        #: Per partition, the newest state seen on the topic or published (highest ``state_order``).
        self.known: dict[str, PartitionState] = {}
        #: The states learned live from the partitions this member owns.
        self.live: dict[str, typing.Any] = {}
        self._versions: dict[str, str] = {}  # partition -> version of the last state this member sent
        self._decoded: dict[str, tuple[int, typing.Any]] = {}  # partition -> (offset, model) of known states
        self._in_view: dict[str, int] = {}  # partition -> learned events of the state merged into the view
        self._pending_since: float | None = None  # when the first state newer than the view arrived
        self._pending_events = 0
        self._touched: set[str] = set()  # partitions whose join changed their state since it was last published
        self._gone: set[str] = set()  # partitions lost (maybe on the client's thread): the join's parts to forget
        # input partition -> the state it and its feedback partition resume from, chosen by the first of the two
        # positioned in an assignment (the topic may bring newer states between the two)
        self._pairing: dict[str, PartitionState | None] = {}
        self._last_view = time.monotonic()
        self._last_cache = time.monotonic()
        self._store_id = uuid.uuid4().hex
        self._cache_seq = 0
        # figures (status(), /metrics)
        self.published_records = self.published_bytes = 0
        self.applied_records = self.applied_bytes = 0
        self.views_built = 0
        self.view_seconds = 0.0
        self.aborts = 0
        self.last_error: str | None = None
        self.faults = installed_fault_hooks()  # the fault tests step in before a transaction's commit
        self._transactions = 0

    # -- wiring -------------------------------------------------------------

    def attach(self, engine: Engine) -> None:
        """Called by the engine: checkpoint (publish) at least every ``sync_every`` events / ``sync_interval`` s."""
        source = engine.source
        if not (isinstance(source, ResumesByPolicy) and isinstance(source, HandlesRevocation)
                and isinstance(source, Rebalancing)):
            raise ConfigError(f"--model-topic needs a consumer-group source (Kafka), got {type(source).__name__}")
        if self.exactly_once and not isinstance(source, Repositionable):
            raise ConfigError(f"exactly-once publication needs a source that repositions its partitions, got "
                              f"{type(source).__name__}")
        self.engine = engine
        engine.limit_checkpoint_cadence(self.sync_every, self.sync_interval)

    def recover(self) -> None:
        """Read the model topic to its end, predict with the group's model, and hook into the source."""
        source = self.engine.source
        self._read(self.channel.catch_up(self.catch_up_timeout))
        source.set_resume_policy(self.resume_position)
        source.set_revocation_handler(self.on_revoke)
        source.add_rebalance_callback(self._on_rebalance)
        self.build_view()
        log.info("model topic %s: %d partition state(s), %s events learned by the group", self.channel.topic,
                 len(self.known), self.group_learned())

    # -- the engine's hooks -------------------------------------------------

    def learned(self, events: list[tuple[str, typing.Any, typing.Any]]) -> None:
        """The engine learned ``(partition, features, label)`` events (the view did): each partition's state learns them."""
        for partition, xs, ys in _runs_by_partition(events):
            if partition in self._gone:  # lost: its next owner learns them from the partition's state
                continue
            model = self.live.get(partition)
            if model is None:  # assigned without the resume policy (no state was due): start it empty
                model = self.live[partition] = self._empty_state()
            model.learn_events(xs, ys)
            self._touched.add(partition)

    def unlearned(self, events: list[tuple[str, typing.Any, typing.Any]]) -> None:
        """The join took back ``(partition, features, label)`` events (a provisional label) from the view: each
        owned partition's state takes them back too."""
        for partition, xs, ys in _runs_by_partition(events):
            model = self.live.get(partition)
            if model is not None:
                try:
                    model.unlearn_events(xs, ys)
                except UnlearnError as exc:  # a state learning with expected counts or forgetting: one at a time
                    try:
                        for x, y in zip(xs, ys):
                            model.unlearn_one(x, y)
                    except UnlearnError:
                        log.warning("partition %s: a provisional label stays in its state: %s", partition, exc)
                self._touched.add(partition)

    def sync(self) -> None:
        """Apply what other members published; rebuild the view when due (called every turn of the loop)."""
        if self._gone:  # on the engine's thread: the join's parts of the partitions lost
            self._let_go(list(self._gone))
        self._read(self.channel.poll(0.0))
        if self._pending_since is None:
            return
        if (time.monotonic() - self._last_view >= self.sync_interval
                or self._pending_events >= self.sync_every):
            self.build_view()

    # -- reading the model topic -------------------------------------------

    def _read(self, records: list[tuple[str, bytes | None]]) -> None:
        for key, value in records:
            self.applied_records += 1
            self.applied_bytes += len(value) if value is not None else 0
            for partition, payload, info in self.log.feed(key, value):
                offset = info.get("offset")
                if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                    log.error("model topic: the state of %s has no usable offset (%r), skipped", partition, offset)
                    continue
                current = self.known.get(partition)
                if current is not None and state_order(info) <= state_order(current.info):
                    continue  # a duplicate, a replay, or older than what is known: changes nothing
                self.known[partition] = PartitionState(offset, payload, info)
                if partition not in self.live:
                    if self._pending_since is None:
                        self._pending_since = time.monotonic()
                    learned = info.get("learned", 0)
                    self._pending_events += max(0, int(learned) - self._in_view.get(partition, 0)) \
                        if isinstance(learned, (int, float)) else 0

    def _decode(self, partition: str) -> typing.Any:
        state = self.known[partition]
        cached = self._decoded.get(partition)
        if cached is not None and cached[0] == state_order(state.info):
            return cached[1]
        model, _ = decode_state(state.payload, f"model topic {self.channel.topic}, state of {partition}")
        self._decoded[partition] = (state_order(state.info), model)
        return model

    def _empty_state(self) -> typing.Any:
        """An empty partition state, with the template's settings: it keeps a structure of its own on the
        model's schedule, which only its vectorised learning uses (the view's is rebuilt from the merged counts)."""
        return self.template.clone()

    def _fresh(self, partition: str, state: PartitionState | None = None) -> tuple[typing.Any, dict]:
        """A model of its own for partition ``partition``'s ``state``, else its known one (the cached one is shared
        with the view), and the state's payload info (``"join"``: the join's part, see :meth:`_take`)."""
        model, info = decode_state((state or self.known[partition]).payload, f"state of {partition}")
        return model, info or {}

    def _paired(self, partition: str) -> PartitionState | None:
        """The state input ``partition`` resumes from in this assignment: with a feedback topic, the one found
        when the first of it and its feedback partition was positioned, so that both resume from one state."""
        if partition in self._pairing:
            return self._pairing.pop(partition)
        state = self.known.get(partition)
        if self._partner(partition) is not None:
            self._pairing[partition] = state
        return state

    # -- the join (--feedback-topic) ----------------------------------------

    def _joiner(self) -> typing.Any:
        """The engine's join when its feedback is a topic read by the input's consumer (partitions paired by
        number), else None."""
        joiner = getattr(self.engine, "joiner", None)
        feedback = getattr(joiner, "feedback", None)
        paired = callable(getattr(feedback, "partner", None)) and callable(getattr(feedback, "input_of", None))
        return joiner if paired else None

    def _partner(self, partition: str) -> str | None:
        """The feedback partition of input ``partition`` (None without a feedback topic)."""
        joiner = self._joiner()
        return joiner.feedback.partner(partition) if joiner is not None else None

    def _offsets(self, partition: str, state: PartitionState) -> dict[str, int]:
        """The offsets ``state`` covers: input ``partition``'s and, with a feedback topic, its feedback partition's."""
        out = {partition: state.offset}
        feedback, offset = state.info.get("feedback"), state.info.get("feedback_offset")
        if isinstance(feedback, str) and _is_offset(offset):
            out[feedback] = offset
        return out

    def _take(self, partition: str, state: PartitionState | None, part: dict | None) -> None:
        """Input ``partition`` resumes from ``state`` (None: from nothing): its feedback partition resumes at
        the offset the state read, and the join holds the state's ``part`` in place of what it held for them."""
        joiner = self._joiner()
        feedback = self._partner(partition)
        if joiner is None or feedback is None:
            return
        offsets = self._offsets(partition, state) if state is not None else {}
        if feedback in offsets:
            self.engine.adopt_position(feedback, offsets[feedback])
        else:
            self.engine.positions.pop(feedback, None)
        dropped = joiner.drop(partition, feedback)
        if part:
            joiner.adopt(partition, part, counted=True)
        if dropped or part:
            part = part or {}
            log.info("partition %s: the join holds %d event(s) and id(s), %d early label(s) of its state (%d held "
                     "here before)", partition, len(part.get("events", ())), len(part.get("labels", ())), dropped,
                     extra={"event": "join_state", "partition": partition})

    def _let_go(self, partitions: typing.Iterable[str]) -> None:
        """``partitions`` went (revoked, or lost): their states and the join's parts of them are forgotten here
        (on the engine's thread, or while it waits in the source's poll)."""
        joiner = self._joiner()
        for p in partitions:
            self.live.pop(p, None)
            self._gone.discard(p)
            self._touched.discard(p)
            self._pairing.pop(p, None)
            feedback = self._partner(p) if joiner is not None else None
            if feedback is not None:
                joiner.drop(p, feedback)
        self._view_due()

    def _view_due(self) -> None:
        """Rebuild the view at the next due sync: the partitions owned here changed (what this member learned
        of a partition it gave up, or held for one it takes over, must leave the view)."""
        if self._pending_since is None:
            self._pending_since = time.monotonic()

    # -- the view -----------------------------------------------------------

    def build_view(self) -> typing.Any:
        """Merge every partition's state, in partition order, into a new view; the engine predicts with it."""
        start = time.perf_counter()
        parts = []
        for partition in set(self.known) | set(self.live):
            try:
                part = self.live.get(partition)
                if part is None:
                    part = self._decode(partition)
            except SnapshotError as exc:
                log.error("%s; the partition is left out of the view", exc)
                continue
            parts.append((partition, part))
        view = merge_states(self.template, parts)
        self._in_view = {p: int(m.n_learned) for p, m in parts}
        self._pending_since, self._pending_events = None, 0
        self._last_view = time.monotonic()
        self.views_built += 1
        self.view_seconds += time.perf_counter() - start
        if self.engine is not None:
            self.engine.replace_model(view)
        return view

    def group_learned(self) -> int:
        """Events the group has learned, by the newest state of each partition known here."""
        total = 0
        known, live = dict(self.known), dict(self.live)  # copies: /metrics reads this from its own thread
        for partition in set(known) | set(live):
            if partition in live:
                total += int(live[partition].n_learned)
            else:
                learned = known[partition].info.get("learned", 0)
                total += int(learned) if isinstance(learned, (int, float)) else 0
        return total

    # -- publishing ----------------------------------------------------------

    def _owned(self) -> list[str]:
        assigned = self.engine.source.assignment
        return sorted((p for p in self.live if p in assigned), key=partition_order)

    def _due(self, partitions: typing.Iterable[str]) -> dict[str, int]:
        """The owned partitions whose live state moved past their published state: ``{partition: offset}``."""
        positions = self.engine.positions
        out = {}
        for p in partitions:
            offset = positions.get(p)
            known = self.known.get(p)
            if offset is None or p not in self.live:
                continue
            feedback = self._partner(p)
            if (known is None or offset != known.offset or p in self._touched
                    or (feedback is not None and positions.get(feedback) != known.info.get("feedback_offset"))):
                out[p] = offset
        return out

    def _publish(self, due: dict[str, int]) -> dict[str, PartitionState]:
        """Send the states of ``due``; return them (they count once the send is acknowledged or committed)."""
        sent = {}
        limit = self.channel.max_record_bytes
        for p, offset in due.items():
            model = self.live[p]
            info = {"partition": p, "offset": int(offset), "learned": int(model.n_learned), "member": self.member,
                    "time": time.time(), "rebuild_every": getattr(self.template, "rebuild_every", None)}
            inner = info
            feedback = self._partner(p)
            if feedback is not None:  # the feedback offset read and the join's part go with the counts
                known = self.known.get(p)
                read = self.engine.positions.get(feedback, known.info.get("feedback_offset") if known else None)
                seq = known.info.get("seq") if known is not None else None
                info.update(feedback=feedback, feedback_offset=read, seq=seq + 1 if isinstance(seq, int) else 1)
                inner = {**info, "join": self._joiner().part(p, feedback)}
            payload = encode_state(*model.state(), info=inner)
            version = self._versions[p] = f"{offset}.{uuid.uuid4().hex[:8]}"
            for key, value in state_records(p, payload, info, limit=limit, version=version):
                self.channel.publish(key, value)
                self.published_records += 1
                self.published_bytes += len(value)
            sent[p] = PartitionState(int(offset), payload, info)
        return sent

    def _published(self, sent: dict[str, PartitionState]) -> None:
        """``sent`` is durable: it is what the group knows of those partitions now; drop superseded pieces."""
        for p, state in sent.items():
            self.known[p] = state
            self._touched.discard(p)
            old = self.log.pieces_of(p, keep=self._versions.get(p))
            if old:
                for key in old:
                    self.channel.publish(key, None)
                self.log.forget(old)

    def _commit_target(self, partitions: typing.Iterable[str]) -> dict[str, int]:
        committed = self.engine.committed
        out = {}
        for p in partitions:
            state = self.known.get(p)
            if state is not None:
                out.update((k, v) for k, v in self._offsets(p, state).items() if committed.get(k) != v)
        return out

    def _metadata(self) -> str:
        return f"{GROUP_METADATA_PREFIX}{self.member}"

    def checkpoint(self, final: bool = False) -> None:
        """Flush the outputs, publish the moved partition states, commit the offsets they cover."""
        engine = self.engine
        owned = self._owned()
        due = self._due(owned)
        if self.exactly_once:
            if due:
                self._commit_transaction(owned, due)
        else:
            engine.flush()
            if due:
                sent = self._publish(due)
                self.channel.flush()  # raises when a state was not acknowledged: nothing is committed
                self._published(sent)
            target = self._commit_target(owned)
            if target:
                try:
                    engine.source.commit(target, metadata=self._metadata())
                except CommitError as exc:
                    log.warning("commit failed, will retry at the next checkpoint: %s", exc)
                else:
                    engine.mark_committed(target)
        self._write_cache(final)

    def _commit_transaction(self, owned: list[str], due: dict[str, int], reposition: bool = True) -> bool:
        engine = self.engine
        try:
            engine.flush()
            sent = self._publish(due)
            positions = {}
            for p in owned:
                state = sent.get(p, self.known.get(p))
                if state is not None:
                    positions.update(self._offsets(p, state))
            self._transactions += 1
            self.faults.before_transaction_commit(self._transactions)
            self.transaction.commit(positions, self._metadata())
        except Exception as exc:  # noqa: BLE001 - any failure aborts (a fenced producer re-raises from abort)
            self._abort_and_rewind(f"{type(exc).__name__}: {exc}", reposition)
            return False
        self._published(sent)
        engine.mark_committed(positions)
        self.last_error = None
        return True

    def _abort_and_rewind(self, why: str, reposition: bool = True) -> None:
        self.aborts += 1
        self.last_error = why
        log.error("transaction aborted (%s); every owned partition rewinds to its last committed state", why)
        abort_while_unreachable(self.transaction, lambda: self.engine.stopping)
        self._pairing.clear()  # each pair is positioned again
        for p in list(self.live):
            model, info = self._fresh(p) if p in self.known else (self._empty_state(), {})
            self.live[p] = model
            if p in self.known:
                self.engine.adopt_position(p, self.known[p].offset)
            else:
                self.engine.positions.pop(p, None)
            self._take(p, self.known.get(p), info.get("join"))
        self._touched.clear()
        self.build_view()
        if reposition:  # (not when every owned partition is being revoked: its next assignment positions it)
            self.engine.source.reposition()

    def _write_cache(self, final: bool) -> None:
        """With ``--snapshot-dir``: the group's model as this member sees it, every ``snapshot_interval`` s."""
        if self.store is None or not (final or time.monotonic() - self._last_cache >= self.snapshot_interval):
            return
        self._last_cache = time.monotonic()
        engine = self.engine
        positions = {p: s.offset for p, s in self.known.items()}
        positions.update({p: o for p, o in engine.positions.items() if p in self.live})
        daemon = {"store_id": self._store_id, "positions": positions, "metrics": engine.metrics.state(),
                  "source": {**self.source_info, "model_topic": self.channel.topic}, "exactly_once": self.exactly_once,
                  "model_name": engine.model_name}
        try:
            self._cache_seq, _, _ = self.store.write(*engine.model.state(), daemon)
            self.store.prune(protect=self._cache_seq)
        except SnapshotError as exc:
            log.warning("the local cache of the group's model could not be written: %s", exc)

    # -- Kafka hooks --------------------------------------------------------

    def resume_position(self, partition: str, committed: int | None, metadata: str | None) -> int | None:
        """Partition ``partition`` was assigned: take its latest published state, resume after it."""
        self._read(self.channel.catch_up(self.catch_up_timeout))
        joiner = self._joiner()
        source = joiner.feedback.input_of(partition) if joiner is not None else None
        if source is not None:  # a feedback partition: it resumes where its input partition's state read it
            state = self._paired(source)
            offset = self._offsets(source, state).get(partition) if state is not None else None
            if offset is None:
                self.engine.positions.pop(partition, None)
                return None
            self.engine.adopt_position(partition, offset)
            return offset
        state = self._paired(partition)
        self._touched.discard(partition)
        self._gone.discard(partition)  # lost, and assigned again: what it holds now is the state's
        if state is None:
            self.live[partition] = self._empty_state()
            if committed:
                log.warning("partition %s: no state on model topic %s but offset %d committed: the events before it "
                            "are not in the group's model", partition, self.channel.topic, committed)
            self.engine.positions.pop(partition, None)
            self._take(partition, None, None)
            self._view_due()
            return None
        self.live[partition], info = self._fresh(partition, state)
        self.engine.adopt_position(partition, state.offset)
        self._take(partition, state, info.get("join"))
        self._view_due()
        log.info("partition %s: resuming at offset %d from its state on %s (%s events learned)", partition,
                 state.offset, self.channel.topic, state.info.get("learned"))
        return state.offset

    def on_revoke(self, keys: list[str]) -> typing.Any:
        """Before Kafka takes ``keys`` away: publish their states and hand back the offsets to commit.

        Runs on the Kafka client's thread while the engine waits inside ``poll()``.
        """
        engine = self.engine
        mine = [k for k in keys if k in self.live]
        for k in keys:  # a pair positioned by halves (one by a pending seek) never leaves a choice behind
            self._pairing.pop(k, None)
        if self.exactly_once:
            owned = self._owned()
            due = self._due(owned)
            if due:
                # an abort here must not pause partitions on their way out: they would stay paused when they
                # come back, so the source repositions only when some owned partitions stay
                self._commit_transaction(owned, due, reposition=not set(owned) <= set(mine))
            self._let_go(mine)
            return None
        try:
            engine.flush()
            due = self._due(mine)
            if due:
                sent = self._publish(due)
                self.channel.flush()
                self._published(sent)
        except Exception as exc:  # noqa: BLE001 - nothing is committed; the new owner resumes at the last state
            log.error("partitions revoked: publishing their states failed, nothing committed: %s", exc)
            self._let_go(mine)
            return None
        self._let_go(mine)
        target = self._commit_target(mine)
        if not target:
            return None
        return target, self._metadata(), lambda ok: ok and engine.mark_committed(target)

    def _on_rebalance(self, event: str, partitions: list[str]) -> None:
        if event == "lost":  # taken away without a revocation: what was not published is the new owner's to redo
            self._gone.update(partitions)  # the join's parts go at the next sync(), on the engine's thread
            for p in partitions:
                self.live.pop(p, None)
            self._view_due()

    # -- figures ------------------------------------------------------------

    def staleness(self) -> tuple[float, int]:
        """``(seconds, events)`` this member's view is behind the states it has read."""
        if self._pending_since is None:
            return 0.0, 0
        return time.monotonic() - self._pending_since, self._pending_events

    def status(self) -> dict[str, typing.Any]:
        seconds, events = self.staleness()
        return {
            "healthy": self.last_error is None,
            "model_topic": self.channel.topic,
            "group_partitions_known": len(set(dict(self.known)) | set(dict(self.live))),
            "group_partitions_owned": len(self.live),
            "group_events_learned": self.group_learned(),
            "model_staleness_seconds": round(seconds, 3),
            "model_staleness_events": events,
            "model_records_published": self.published_records,
            "model_bytes_published": self.published_bytes,
            "model_records_applied": self.applied_records,
            "model_bytes_applied": self.applied_bytes,
            "model_views_built": self.views_built,
            "model_view_seconds": round(self.view_seconds, 6),
            "transactions_aborted": self.aborts,
            "last_abort": self.last_error,
        }
