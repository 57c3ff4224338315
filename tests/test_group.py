"""One model across a group, without a broker: the state records, their application, the merged view.

Compared against one model trained on every event in one process (counts by
name, and the structure after a rebuild), and against brute force: every
order, duplicate and replay of the published records gives the same view.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from recovery import features, make_events, named_counts
from stream_nb import AODE, EM, KDB, SPODE, TAN, Decay, NaiveBayes, Tree
from stream_nb.engine import GroupCheckpointer, StateLog, merge_states, state_records
from stream_nb.exceptions import ConfigError, SnapshotError
from stream_nb.snapshots import decode_state, encode_state


class Channel:
    """A model topic in memory: one ordered log; ``poll`` hands out what was not read yet."""

    topic = "model"

    def __init__(self, max_record_bytes: int = 900_000):
        self.max_record_bytes = max_record_bytes
        self.log: list = []
        self.read = 0

    def publish(self, key, value):
        self.log.append((key, value))

    def flush(self):
        pass

    def poll(self, timeout):
        out, self.read = self.log[self.read:], len(self.log)
        return out

    def catch_up(self, timeout):
        return self.poll(timeout)

    def close(self):
        pass


def partitions_of(events, n=4):
    """Labeled events split round-robin over ``n`` partitions: ``{name: [(x, y), ...]}``."""
    out = {f"in-{p}": [] for p in range(n)}
    for i, e in enumerate(events):
        if e["obj"] is not None and e["obj"].get("label") is not None:
            out[f"in-{i % n}"].append((features(e["obj"]), e["obj"]["label"]))
    return out


def trained(cls, pairs, **params):
    model = cls(**params)
    for x, y in pairs:
        model.learn_one(x, y)
    return model


def publish(channel, partition, model, offset, limit=900_000, version="v"):
    info = {"partition": partition, "offset": offset, "learned": int(model.n_learned)}
    for key, value in state_records(partition, encode_state(*model.state(), info=info), info, limit=limit,
                                    version=f"{version}{offset}"):
        channel.publish(key, value)


@pytest.mark.parametrize("cls", [NaiveBayes, TAN, KDB])
def test_merged_partition_states_equal_one_process(cls):
    events = make_events(1200, seed=3)
    parts = partitions_of(events)
    one = trained(cls, [pair for pairs in parts.values() for pair in pairs])
    states = [(name, trained(cls, pairs)) for name, pairs in parts.items()]
    view = merge_states(cls(), states)
    assert named_counts(view) == named_counts(one)
    again = merge_states(cls(), list(reversed(states)))  # members list their partitions in any order
    assert named_counts(again) == named_counts(view)
    if cls is not NaiveBayes:
        one.rebuild()
        assert again.state()[0].keys() == view.state()[0].keys()
        for name in (k for k in view.state()[0] if k.startswith("model.")):
            assert (again.state()[0][name] == view.state()[0][name]).all(), name  # the same structure, bit for bit
        if cls is TAN:
            assert [e[:2] for e in view.tree] == [e[:2] for e in one.tree]


def test_duplicates_replays_and_stale_records_never_count_twice():
    events = make_events(800, seed=5)
    parts = partitions_of(events, n=2)
    channel = Channel()
    one = trained(NaiveBayes, parts["in-0"] + parts["in-1"])
    group = GroupCheckpointer(channel, NaiveBayes())
    half = {name: trained(NaiveBayes, pairs[:len(pairs) // 2]) for name, pairs in parts.items()}
    full = {name: trained(NaiveBayes, pairs) for name, pairs in parts.items()}
    publish(channel, "in-0", half["in-0"], 200)
    publish(channel, "in-0", full["in-0"], 400)
    publish(channel, "in-1", full["in-1"], 400)
    records = list(channel.log)
    rng = random.Random(1)
    channel.log += records  # the whole log replayed
    channel.log += rng.sample(records, len(records))  # and again, shuffled
    channel.log.append(records[0])  # a stale state (offset 200) comes last, as from a late, fenced owner
    group._read(channel.poll(0))
    view = group.build_view()
    assert named_counts(view) == named_counts(one)
    assert group.group_learned() == one.n_learned
    assert {p: s.offset for p, s in group.known.items()} == {"in-0": 400, "in-1": 400}


def test_split_states_are_reassembled_and_old_pieces_deleted():
    events = make_events(600, seed=7)
    model = trained(KDB, partitions_of(events, n=1)["in-0"])
    channel = Channel(max_record_bytes=1024)
    publish(channel, "in-0", model, 10, limit=1024, version="a")
    pieces = [k for k, _ in channel.log if "#" in k]
    assert len(pieces) > 2 and channel.log[-1][0] == "in-0"
    group = GroupCheckpointer(channel, KDB())
    group._read(channel.poll(0))
    assert named_counts(group.build_view()) == named_counts(model)
    # a newer state: the publisher deletes the pieces of the old one (tombstones), readers forget them
    assert group.log.pieces_of("in-0", keep="b11") == sorted(pieces)
    group.log.feed(pieces[0], None)
    assert pieces[0] not in group.log.pieces_of("in-0")


def test_an_incomplete_or_damaged_state_is_skipped_not_applied():
    model = trained(NaiveBayes, partitions_of(make_events(300, seed=9), n=1)["in-0"])
    channel = Channel()
    publish(channel, "in-0", model, 10, limit=1024)
    lost = [r for r in channel.log if not r[0].endswith("#0")]  # a piece lost
    reader = StateLog()
    assert [done for k, v in lost for done in reader.feed(k, v)] == [] and reader.skipped == 1
    blob = encode_state(*model.state(), info={"offset": 1})
    with pytest.raises(SnapshotError, match="state of in-0: not a stream_nb model state"):
        decode_state(b"junk" + blob, "state of in-0")
    with pytest.raises(SnapshotError, match="inflates beyond"):
        decode_state(blob, max_bytes=64)


def test_a_model_without_merge_is_refused():
    class Plain:
        pass

    with pytest.raises(ConfigError, match="needs one of stream_nb's models"):
        GroupCheckpointer(Channel(), Plain())


def _stream(n: int, seed: int) -> tuple[list, list]:
    """Events as the daemon hands them over: valid ones (a numeric feature too), unlabeled ones, bad ones."""
    rng = random.Random(seed)
    xs, ys = [], []
    for e in make_events(n, seed=seed):
        obj = e["obj"]
        x = {**features(obj), "w": round(rng.gauss(0, 1), 3)}
        if rng.random() < 0.03:
            x["color"] = {"r": 1}  # refused: a nested value
        xs.append(x)
        ys.append(obj.get("label"))
    return xs, ys


@pytest.mark.parametrize("cls, params", [(NaiveBayes, {}), (NaiveBayes, {"missing": EM(unlabeled=True)}), (AODE, {}),
                                         (TAN, {"search": Tree(rebuild_every=40)}), (SPODE, {}), (KDB, {"k": 2}),
                                         (NaiveBayes, {"drift_detector": "ddm"}), (TAN, {"forgetting": Decay(half_life=150)})])
def test_partition_states_learn_as_the_prequential_loop_does(cls, params):
    """A partition state learns without scoring (``learn_events``) and ends with the very arrays the
    daemon's prequential loop leaves, in polls of any size."""
    xs, ys = _stream(600, seed=7)
    loop, shared = cls(**params), cls(**params)
    rng = random.Random(3)
    start = 0
    while start < len(xs):
        stop = start + rng.randint(1, 80)
        for _ in loop.prequential_iter(xs[start:stop], ys[start:stop]):
            pass
        shared.learn_events(xs[start:stop], ys[start:stop])
        start = stop
    (a, meta_a), (b, meta_b) = loop.state(), shared.state()
    assert meta_a == meta_b
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    assert shared.n_learned == loop.n_learned > 150  # (decayed with half_life)
