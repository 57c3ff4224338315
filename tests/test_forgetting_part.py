"""The forgetting part alone (:class:`stream_nb.learners._forgetting.Forgetting`), on a bare count store, no model.

Each check drives the part as a learner does (``weight`` before an event is added, ``learned`` after,
``observe`` before it for a detector) and compares the store with something computed independently:

* window: the counts equal those of a fresh store that learned only the events the panes keep;
* decay: every count, divided by the inflation, equals the sum of ``2**-(age / half_life)`` over the events,
  written out here (in events, and in event time with the clock's running maximum), across renormalisations;
* drift: a scripted detector's switch leaves the counts of a fresh store fed the events since the warning,
  the pane in progress (window), or nothing (no warning held);
* unlearning an event from an old pane: once that pane expires the counts are still those of the window's
  events without it; a decayed event's weight is taken back by its stamp;
* a merge's preparation brings event-time decay to the later clock; the state round-trips.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from river import drift

from stream_nb.exceptions import InvalidEventError, UnlearnError
from stream_nb.learners._decay_runs import RENORMALISE_AT
from stream_nb.learners._detectors import watched_detector
from stream_nb.learners._forgetting import Forgetting, prepare_merge, split_time
from stream_nb.learners._unlearn import Receipt
from stream_nb.stats import Stats


def events(n, seed=0):
    """Labeled events: a categorical feature tied to the class, a noise one, a Gaussian one."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.choice(["p", "q"])
        x = {"a": ("u" if y == "p" else "v") if rng.random() < 0.8 else rng.choice("uv"),
             "b": rng.choice("rst"), "g": rng.gauss(1.0 if y == "p" else -1.0, 1.0)}
        out.append((x, y))
    return out


def store():
    return Stats(pairs=True, numeric="gaussian")


def learn(f, s, x, y, t=None):
    """One event as a learner learns it: its stored weight from the part, added, then the part told."""
    w = f.weight(s, 1.0, t)
    enc, c = s.encode_labeled(x, y)
    s.add(enc, c, w)
    f.learned(s, 1)
    return enc, c, w


def refit(data):
    """A fresh store that learned ``data`` with weight 1 each: the independent reference of a window."""
    s = store()
    for x, y in data:
        s.learn_one(x, y)
    return s


def assert_same_counts(s, ref, scale=1.0):
    """The counts of ``s`` divided by ``scale`` are those of ``ref`` (each class, value and pair; the Gaussians)."""
    got, want = s.counts(), ref.counts()
    for y in s.classes:
        assert got["class_count"][y] / scale == pytest.approx(want["class_count"].get(y, 0.0), abs=1e-9)
    for name, values in got["value_count"].items():
        for v, by_class in values.items():
            for y, n in by_class.items():
                assert n / scale == pytest.approx(want["value_count"].get(name, {}).get(v, {}).get(y, 0.0), abs=1e-9)
    for y, (n, mean, m2) in got["gaussian"].get("g", {}).items():
        n0, mean0, m20 = want["gaussian"].get("g", {}).get(y, (0.0, 0.0, 0.0))
        assert (n / scale, m2 / scale) == (pytest.approx(n0, abs=1e-9), pytest.approx(m20, abs=1e-9))
        if n0:
            assert mean == pytest.approx(mean0, abs=1e-9)
    assert _pairs(s) / scale == pytest.approx(_pairs(ref, s), abs=1e-9)


def _keys(s):
    """Each value column's (feature name, value) of store ``s`` (column 0: the unseen value)."""
    return [(v and s.features[s.value_feature[v]], k) for v, k in enumerate(s.value_keys)]


def _pairs(s, like=None):
    """The pair counts of ``s`` by names, as an array in the layout of store ``like`` (default ``s``)."""
    like = like or s
    out = np.zeros((len(like.classes), len(like.value_keys), len(like.value_keys)))
    keys = {k: i for i, k in enumerate(_keys(s))}
    for c, y in enumerate(like.classes):
        if y not in s.class_index:
            continue
        for i, ki in enumerate(_keys(like)):
            for j, kj in enumerate(_keys(like)):
                if ki in keys and kj in keys:
                    out[c, i, j] = s.pair_count[s.class_index[y], keys[ki], keys[kj]]
    return out


# ---------------------------------------------------------------------- windows


@pytest.mark.parametrize("window,panes", [(40, 4), (30, 3), (12, 1), (10, 4)])
def test_a_window_keeps_the_counts_of_the_events_of_its_panes(window, panes):
    data = events(170, seed=1)
    f, s = Forgetting(window, panes, None, None, timed=False), store()
    size = math.ceil(window / panes)
    for n, (x, y) in enumerate(data, 1):
        assert f.limit() == size - (n - 1) % size  # the events left in the pane in progress
        learn(f, s, x, y)
        kept = min(n // size, panes - 1) * size + n % size  # the complete panes kept, and the one in progress
        if n % 9 == 0 or n == len(data):
            assert_same_counts(s, refit(data[n - kept:n]))
        assert f.pane_no == n // size and f.inflation == 1.0
    assert f.nbytes > 0


# ---------------------------------------------------------------------- decay


def decayed(data, ages, half_life):
    """By hand: each class's, each value's and the Gaussian's weight sum, every event weighing 2**-(age/half_life)."""
    cls, val, g = {}, {}, {}
    for (x, y), age in zip(data, ages):
        w = 2.0 ** -(age / half_life)
        cls[y] = cls.get(y, 0.0) + w
        for name in ("a", "b"):
            val[name, x[name], y] = val.get((name, x[name], y), 0.0) + w
        g[y] = g.get(y, 0.0) + w
    return cls, val, g


def assert_decayed(s, f, want):
    cls, val, g = want
    got = s.counts()
    for y, w in cls.items():
        assert got["class_count"][y] / f.inflation == pytest.approx(w, rel=1e-12)
        assert got["gaussian"]["g"][y][0] / f.inflation == pytest.approx(g[y], rel=1e-12)
    for (name, v, y), w in val.items():
        assert got["value_count"][name][v][y] / f.inflation == pytest.approx(w, rel=1e-12)


@pytest.mark.parametrize("half_life", [0.5, 3.0, 40.0])
def test_decay_in_events_weighs_each_event_by_its_age(half_life):
    data = events(120, seed=2)
    f, s = Forgetting(None, 4, half_life, None, timed=False), store()
    renormalised = 0  # the times the store was renormalised (the inflation reached RENORMALISE_AT = 2**16)
    for n, (x, y) in enumerate(data, 1):
        before = f.inflation
        learn(f, s, x, y)
        renormalised += f.inflation < before
        assert f.inflation < RENORMALISE_AT
        assert f.halvings == pytest.approx(n / half_life)
        if n % 10 == 0:
            assert_decayed(s, f, decayed(data[:n], [n - 1 - i for i in range(n)], half_life))
    assert renormalised == {0.5: 15, 3.0: 2, 40.0: 0}[half_life]  # every 16 half-lives
    f.settle(s)
    assert f.inflation == 1.0
    assert_decayed(s, f, decayed(data, [len(data) - 1 - i for i in range(len(data))], half_life))


def test_decay_in_event_time_weighs_each_event_by_the_clock_it_was_learned_at():
    data = events(80, seed=3)
    rng = random.Random(4)
    times, t = [], 0.0
    for i in range(len(data)):
        t += rng.choice([0.0, 0.5, 2.0, -3.0]) + (40.0 if i == 50 else 0.0)  # late events, and a jump of 20 half-lives
        times.append(t)
    half_life = 2.0
    f, s = Forgetting(None, 4, half_life, None, timed=True), store()
    for n, ((x, y), t) in enumerate(zip(data, times), 1):
        learn(f, s, x, y, t)
        # an event counts at the latest time learned by then (a late one at the clock); decayed to the clock now
        at = np.maximum.accumulate(times[:n])
        assert f.clock == at[-1]
        assert_decayed(s, f, decayed(data[:n], (at[-1] - at).tolist(), half_life))
    # an event without a time is learned at the clock, with the weight of the latest one
    learn(f, s, {"a": "u", "b": "r", "g": 0.0}, "p", None)
    at = np.append(np.maximum.accumulate(times), f.clock)
    assert_decayed(s, f, decayed(data + [({"a": "u", "b": "r", "g": 0.0}, "p")], (at[-1] - at).tolist(), half_life))


def test_a_run_is_weighed_as_the_events_one_by_one():
    f, g = (Forgetting(None, 4, 1.5, None, timed=True) for _ in range(2))
    s = store()
    yc, times = np.array([0, 1, -1, 0, 1]), [1.0, 0.5, None, 4.0, 4.0]
    run = f.run_decay(yc, times)
    assert (f.inflation, f.halvings, f.clock) == (1.0, 0.0, None)  # nothing changed
    weights = [g.weight(s, 1.0, t) if c >= 0 else 0.0 for c, t in zip(yc.tolist(), times)]
    assert run.stop == 5 and run.weight.tolist() == weights
    f.ran(5, run.after[-1])
    assert (f.inflation, f.halvings, f.clock) == (g.inflation, g.halvings, g.clock)
    assert Forgetting(40, 4, None, None, timed=False).run_decay(yc, None) is None


def test_the_time_field_is_taken_out_and_checked():
    assert split_time({"a": 1, "ts": np.int64(7)}, "ts") == ({"a": 1}, 7.0)
    assert split_time({"a": 1}, "ts") == ({"a": 1}, None)
    for bad in (True, "7", float("nan"), float("inf")):
        with pytest.raises(InvalidEventError) as info:
            split_time({"ts": bad}, "ts")
        assert info.value.reason == "bad_time"


# ---------------------------------------------------------------------- drift


class Scripted:
    """A detector that warns over the updates in ``warn`` and drifts at those in ``drift`` (counted from 1)."""

    def __init__(self, warn=(), drift=()):
        self.n, self.warn, self.drift, self.errors = 0, set(warn), set(drift), []

    def update(self, error):
        self.n += 1
        self.errors.append(error)

    @property
    def drift_detected(self):
        return self.n in self.drift

    @property
    def warning_detected(self):
        return self.n in self.warn


def drive(f, s, data, prediction="p"):
    """Each event's error to the part before it is learned; the counts at each switch (by event index)."""
    at = {}
    for i, (x, y) in enumerate(data):
        if f.observe(s, prediction, y):
            at[i] = s.counts()
        learn(f, s, x, y)
    return at


@pytest.mark.parametrize("warn,drift,since", [
    (range(20, 31), {30}, 19),  # a warning held up to the drift: the counts since it began (event 19 on)
    (range(10, 15), {30}, 29),  # a warning that ended: empty counts
    ((), {30}, 29),  # no warning: empty counts
])
def test_a_drift_switches_to_the_counts_since_the_warning(warn, drift, since):
    data = events(60, seed=5)
    det = Scripted(warn, drift)
    f, s = Forgetting(None, 4, None, det, timed=False), store()
    at = drive(f, s, data)
    assert list(at) == [29] and f.drifts == [30] and f.seen == 60
    assert det.errors == [0 if y == "p" else 1 for _, y in data]
    got, want = at[29], refit(data[since:29]).counts()
    assert got["class_count"] == {y: want["class_count"].get(y, 0.0) for y in got["class_count"]}
    assert not f.warning and f.warn_base is None


def test_a_drift_under_a_window_keeps_the_pane_in_progress():
    data = events(80, seed=6)
    f, s = Forgetting(40, 4, None, Scripted(range(40, 58), {57}), timed=False), store()
    for i, (x, y) in enumerate(data):
        if f.observe(s, "p", y):
            assert i == 56
            assert_same_counts(s, refit(data[50:56]))  # the pane of events 50.. in progress
        learn(f, s, x, y)
    assert_same_counts(s, refit(data[50:]))  # the window fills again from the pane kept


def test_paused_the_detector_is_fed_nothing():
    det = Scripted()
    f = Forgetting(None, 4, None, det, timed=False)
    with f.pause():
        assert not f.watching and f.kernel_detector()[0] is False and f.kernel_watches()
    assert f.watching
    f.ran(3, None)
    assert f.seen == 3 and det.n == 0  # a kernel's count of the events it fed


# ---------------------------------------------------------------------- unlearning


def test_an_event_taken_back_from_an_old_pane_stays_out_when_the_pane_expires():
    data = events(100, seed=7)
    f, s = Forgetting(40, 4, None, None, timed=False), store()
    stamps = []
    for x, y in data[:35]:
        pane = f.pane_no
        stamps.append((pane, learn(f, s, x, y)))
    gone = 12  # in pane 1, complete and kept

    def take_back(w, receipt):
        enc, c, _ = stamps[gone][1]
        s.remove((("count", enc, c, w), ("gauss", c, w, enc.gslots, enc.gx)))

    f.unlearn(s, 1.0, Receipt(data[gone][1], (), stamp=(stamps[gone][0], 0.0)), take_back)
    assert_same_counts(s, refit(data[:gone] + data[gone + 1:35]))
    for n, (x, y) in enumerate(data[35:], 36):
        learn(f, s, x, y)
        kept = data[n - (30 + n % 10):n]
        if n - (30 + n % 10) <= gone:
            kept = [e for e in kept if e is not data[gone]]
        assert_same_counts(s, refit(kept))
    before = s.counts()
    f.unlearn(s, 1.0, Receipt(data[gone][1], (), stamp=(stamps[gone][0], 0.0)), take_back)  # its pane expired
    assert f.expired_unlearns == 1 and s.counts() == before
    with pytest.raises(UnlearnError, match="pane in progress"):
        f.unlearn(s, 1.0, Receipt("p", (), stamp=(f.pane_no + 1, 0.0)), take_back)


def test_a_decayed_event_is_taken_back_with_its_weight_now():
    data = events(30, seed=8)
    f, s = Forgetting(None, 4, 4.0, None, timed=False), store()
    learned = []
    for x, y in data:
        learned.append((learn(f, s, x, y), f.halvings))
    (enc, c, _), halvings = learned[10]
    taken = []
    f.unlearn(s, 1.0, Receipt(data[10][1], (("count", enc, c, 1.0),), stamp=(0, halvings)),
              lambda w, receipt: taken.append((w, receipt)))
    # its weight today is 2**-(age / half_life), stored times the inflation
    assert taken == [(pytest.approx(2.0 ** -((len(data) - 1 - 10) / 4.0) * f.inflation, rel=1e-12), None)]
    with pytest.raises(UnlearnError) as info:
        f.unlearn(s, 1.0, None, lambda w, receipt: None)
    assert info.value.reason == "needs_receipt"
    with pytest.raises(UnlearnError) as info:
        Forgetting(None, 4, None, Scripted(), timed=False).unlearn(s, 1.0, None, lambda w, receipt: None)
    assert info.value.reason == "forgets"


# ---------------------------------------------------------------------- merging and state


def test_a_merge_brings_decay_in_event_time_to_the_later_clock():
    data = events(40, seed=9)
    half_life = 5.0
    a, b = (Forgetting(None, 4, half_life, None, timed=True) for _ in range(2))
    sa, sb = store(), store()
    for i, (x, y) in enumerate(data[:20]):
        learn(a, sa, x, y, float(i) / 2)  # clock 9.5
    for i, (x, y) in enumerate(data[20:]):
        learn(b, sb, x, y, 10.0 + i)  # clock 29
    prepare_merge(a, sa, b, sb)
    assert a.clock == b.clock == 29.0 and a.inflation == b.inflation == 1.0
    assert_decayed(sa, a, decayed(data[:20], [29.0 - i / 2 for i in range(20)], half_life))
    assert_decayed(sb, b, decayed(data[20:], [29.0 - (10.0 + i) for i in range(20)], half_life))


@pytest.mark.parametrize("window,half_life,detector", [(40, None, None), (None, 3.0, None), (None, None, "ddm"),
                                                      (None, None, "river")])
def test_the_state_round_trips(window, half_life, detector):
    data = events(70, seed=10)
    make = {None: lambda: None, "ddm": lambda: watched_detector("ddm"), "river": lambda: drift.binary.DDM()}[detector]
    det = make()
    f, s = Forgetting(window, 4, half_life, det, timed=False), store()
    for x, y in data:
        if det is not None:
            f.observe(s, "p", y)
        learn(f, s, x, y)
    arrays, meta = f.state(rebuild_origin=3)
    back = Forgetting(window, 4, half_life, make(), timed=False)
    assert back.load(arrays, meta) == 3
    arrays2, meta2 = back.state(rebuild_origin=3)
    assert meta2 == meta and arrays2.keys() == arrays.keys()
    for k, v in arrays.items():
        np.testing.assert_array_equal(arrays2[k], v)
    assert (back.inflation, back.halvings, back.pane_no, back.warning) == (f.inflation, f.halvings, f.pane_no, f.warning)
    with pytest.raises(ValueError, match="forget"):
        Forgetting(10, 4, None, None, timed=False).load(arrays, {**meta, "pane_n": 99})
