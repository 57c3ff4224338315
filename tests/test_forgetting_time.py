"""Decay in event time (``half_life`` with ``time_field``; the daemon's ``--half-life`` with ``--time-field``)."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import types

import numpy as np
import pytest

import stream_nb
from stream_nb import Decay, EqualFrequency, NaiveBayes
from stream_nb.exceptions import ConfigError, InvalidEventError
from test_forgetting import MODELS, brute_force_decay, stream


def timed(n, seed=0, late=0.1, gaps=(0.0, 0.5, 3.0, 40.0)):
    """``stream`` with a time ``ts`` per event: mostly increasing by a gap, some events late (out of order)."""
    rng = random.Random(seed)
    out, clock = [], 100.0
    for x, y in stream(n, seed=seed, flip_at=n // 2, numeric=True):
        clock += rng.choice(gaps)
        ts = clock - rng.uniform(0.0, 20.0) if rng.random() < late else clock
        out.append(({**x, "ts": ts}, y))
    return out


def decay_cells(model, d):
    """``brute_force_decay`` of the store and, under a two-layer discretiser, of its fine layer (the coarse
    counts are sums of its cells), cell by cell."""
    brute_force_decay(model, d)
    fine = model._stats.count_layer()
    if fine is not model._stats:
        brute_force_decay(types.SimpleNamespace(_stats=fine), d)


def brute_force(make, data, H):
    """A model without forgetting whose every count is multiplied by ``2**(-dt/H)`` before each event, ``dt`` the
    time since the latest time learned (none for a late event), learned without the time field."""
    ref, latest = make(), None
    for x, y in data:
        t = x["ts"]
        if latest is not None and t > latest:
            decay_cells(ref, 2.0 ** (-(t - latest) / H))
        latest = t if latest is None else max(latest, t)
        ref.learn_one({k: v for k, v in x.items() if k != "ts"}, y)
    return ref


def close(p, q):
    return p.keys() == q.keys() and all(math.isclose(p[k], q[k], rel_tol=1e-8, abs_tol=1e-12) for k in p)


@pytest.mark.parametrize("name", ["nb", "tan", "aode"])
def test_decay_in_event_time_equals_multiplying_every_count_by_the_elapsed_half_lives(name):
    H = 6.0  # 40-second gaps pass the renormalisation point at once: both ways of decaying are exercised
    data = timed(220, seed=3)
    # equal-frequency bins: MDL's criterion depends on the absolute counts, which decay keeps inflated (open question)
    make = MODELS[name] if name == "nb" else lambda **kw: MODELS[name](numeric=EqualFrequency(bins=3, warmup=20), **kw)
    model = make(forgetting=Decay(half_life=H, time_field="ts"))
    for i, (x, y) in enumerate(data):
        model.learn_one(x, y)
        if i % 37 == 36:
            ref = brute_force(make, data[: i + 1], H)
            probe = {k: v for k, v in data[i][0].items()}
            assert close(model.predict_proba_one(probe), ref.predict_proba_one(probe))
            assert model.n_learned == pytest.approx(ref.n_learned, rel=1e-9)
    assert "ts" not in model._stats.features  # the time is no feature
    # the event-counting decay is another model: the reference does tell time from events
    other = brute_force(make, [({**x, "ts": float(i)}, y) for i, (x, y) in enumerate(data)], H)
    assert not math.isclose(model.n_learned, other.n_learned, rel_tol=1e-3)


def test_a_late_event_is_learned_at_the_clock_and_inflates_nothing():
    model = NaiveBayes(forgetting=Decay(half_life=10.0, time_field="ts"))
    model.learn_one({"a": "x", "ts": 0.0}, "p")
    model.learn_one({"a": "y", "ts": 20.0}, "q")
    model.learn_one({"a": "x", "ts": 5.0}, "p")  # late: full weight at the clock (20), older counts unchanged
    model.learn_one({"a": "x"}, "p")  # no time: at the clock too
    s = model._stats
    got = dict(zip(s.classes, (s.class_count[: len(s.classes)] / model._inflation).tolist()))
    assert got == pytest.approx({"p": 0.25 + 1 + 1, "q": 1.0})
    model.learn_one({"a": "y", "ts": 30.0}, "q")
    got = dict(zip(s.classes, (s.class_count[: len(s.classes)] / model._inflation).tolist()))
    assert got == pytest.approx({"p": 2.25 / 2, "q": 1 / 2 + 1})  # one half-life later


@pytest.mark.parametrize("bad", ["noon", None, True, float("nan"), float("inf"), [1]])
def test_a_bad_time_is_refused_naming_the_field_and_changes_nothing(bad):
    model = NaiveBayes(forgetting=Decay(half_life=10.0, time_field="ts"))
    for x, y in timed(20, seed=1):
        model.learn_one(x, y)
    before = model.state()
    with pytest.raises(InvalidEventError, match="'ts' \\(time_field\\)") as info:
        model.learn_one({"a": "u", "ts": bad}, "p")
    assert (info.value.reason, info.value.field) == ("bad_time", "ts")
    with pytest.raises(InvalidEventError, match="'ts'"):
        model.prequential_one({"a": "u", "ts": bad}, "p")
    after = model.state()
    assert before[1] == after[1] and all(np.array_equal(before[0][k], after[0][k]) for k in before[0])
    with pytest.raises(ConfigError, match="time_field"):
        NaiveBayes(half_life=1.0, time_field="")


def test_prequential_many_and_learn_many_equal_the_one_event_path():
    import pandas as pd

    data = timed(150, seed=2)
    one, many, frame = (NaiveBayes(forgetting=Decay(half_life=5.0, time_field="ts")) for _ in range(3))
    expected = [tuple(one.prequential_one(x, y)[:2]) for x, y in data]
    got = many.prequential_many([x for x, _ in data], [y for _, y in data])  # in runs, each row weighed
    assert [p for p, _ in got] == [p for p, _ in expected]
    for (_, a), (_, b) in zip(got, expected):  # within rounding: a run sums what one at a time adds up
        assert a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-9) for k in b)
    assert (many._forget.inflation, many._forget.clock) == (one._forget.inflation, one._forget.clock)
    frame.learn_many(pd.DataFrame([x for x, _ in data]), pd.Series([y for _, y in data]))
    a, b = one.state(), frame.state()
    assert all(np.allclose(a[0][k], b[0][k], rtol=1e-12) for k in a[0])


def test_merge_decays_the_earlier_counts_to_the_later_clock():
    H = 8.0
    da, db = timed(90, seed=4), [({**x, "ts": x["ts"] + 500.0}, y) for x, y in timed(90, seed=5)]
    a, b = NaiveBayes(forgetting=Decay(half_life=H, time_field="ts")), NaiveBayes(forgetting=Decay(half_life=H, time_field="ts"))
    for x, y in da:
        a.learn_one(x, y)
    for x, y in db:
        b.learn_one(x, y)
    end_a, end_b = max(x["ts"] for x, _ in da), max(x["ts"] for x, _ in db)
    ra, rb = brute_force(NaiveBayes, da, H), brute_force(NaiveBayes, db, H)
    brute_force_decay(ra, 2.0 ** (-(end_b - end_a) / H))
    a.merge(b)
    ra.merge(rb)
    assert a.n_learned == pytest.approx(ra.n_learned, rel=1e-9)
    probe = {"a": "u", "b": "s", "t": 0.2}
    assert close(a.predict_proba_one(probe), ra.predict_proba_one(probe))


@pytest.mark.parametrize("name", ["nb", "kdb"])
def test_snapshot_restores_the_clock_bit_for_bit(tmp_path, name):
    data = timed(300, seed=6)
    model = MODELS[name](forgetting=Decay(half_life=7.0, time_field="ts"), drift_detector="ddm")
    for x, y in data[:170]:
        model.prequential_one(x, y)
    stream_nb.save(model, tmp_path / "m.snb")
    restored = stream_nb.load(tmp_path / "m.snb")
    assert restored._forget.clock == model._forget.clock is not None
    for x, y in data[170:]:
        assert model.prequential_one(x, y) == restored.prequential_one(x, y)
    (a, ma), (b, mb) = model.state(), restored.state()
    assert ma == mb and a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_the_daemon_decays_in_event_time_and_dead_letters_bad_times(tmp_path):
    data = timed(400, seed=7)
    lines = [json.dumps({**x, "label": y}) for x, y in data]
    lines[50] = json.dumps({**data[50][0], "ts": "yesterday", "label": data[50][1]})
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    run = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--model", "nb", "--half-life", "6",
                          "--time-field", "ts", "--input", str(tmp_path / "in.jsonl"),
                          "--output", str(tmp_path / "out.jsonl"), "--dead-letter", str(tmp_path / "dead.jsonl"),
                          "--snapshot-dir", str(tmp_path / "snap")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    dead = [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert len(dead) == 1 and "'ts'" in json.dumps(dead[0]) and "bad_time" in json.dumps(dead[0]), dead
    from stream_nb.snapshots import SnapshotStore

    store = SnapshotStore(str(tmp_path / "snap"))
    restored = stream_nb.load(store.path(max(store.sequences())))
    ref = NaiveBayes(forgetting=Decay(half_life=6.0, time_field="ts"))
    ref2 = brute_force(NaiveBayes, data[:50] + data[51:], 6.0)
    for x, y in data[:50] + data[51:]:
        ref.learn_one(x, y)
    probe = {"a": "v", "b": "r", "t": -0.3}
    assert close(restored.predict_proba_one(probe), ref.predict_proba_one(probe))
    assert close(restored.predict_proba_one(probe), ref2.predict_proba_one(probe))


@pytest.mark.parametrize("flags, message", [
    (["--time-field", "ts"], "--time-field needs --feedback (the labels that come later) or --half-life"),
    (["--time-field", "ts", "--half-life", "5", "--feedback", "LABELS"], "decay in event time is not available"),
])
def test_time_field_settings_are_checked(tmp_path, flags, message):
    (tmp_path / "e.jsonl").write_text('{"id": 1, "a": "x", "ts": 1}\n')
    (tmp_path / "l.jsonl").write_text('{"id": 1, "label": 1}\n')
    flags = [str(tmp_path / "l.jsonl") if f == "LABELS" else f for f in flags]
    run = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--input", str(tmp_path / "e.jsonl"),
                          "--output", str(tmp_path / "o.jsonl"), *flags], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr
