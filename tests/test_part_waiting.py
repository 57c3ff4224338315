"""The waiting events alone (:class:`~stream_nb.stats.discretiser.Waiting`, no two-layer store): a fine layer
(a plain :class:`~stream_nb.stats.Stats`) learns events as a two-layer store's does, and the part keeps those
with values it cannot count yet. Checked against a store that saw the same events with the edges known from
the start (so no event ever waited), through a promotion, a receipt taken back, decay and a state."""

import copy
import json

import numpy as np
import pytest

from stream_nb.stats import BINNED, Stats
from stream_nb.stats.discretiser import Waiting

WARMUP = 12


def learn(fine, waiting, x, y, w=1.0, keyed=False):
    """Event ``x`` of class ``y`` into ``fine`` as a two-layer store learns it there (encode, follow a
    promotion, count what can be counted, keep what waits, count what the edges now allow)."""
    ints = set(fine.from_int)
    enc = fine.encode_learn(x, y)
    if ints - fine.from_int:
        waiting.follow_promotion(fine)
    young = bool(fine.from_int) and waiting.young(fine, enc)
    c = fine.class_of(y)
    fine.add(enc, c, w)
    seen = set(enc.feats.tolist())
    unready = [(f, float(v)) for f, v in ((fine.feature_index[k], v) for k, v in x.items())
               if fine.kinds[f] == BINNED and f not in seen]
    e = waiting.wait(enc, unready, young, c, w, keyed=keyed)
    waiting.count_ready(fine)
    return enc, c, e


def cells(s) -> dict:
    """Every non-zero count of store ``s`` keyed by names (classes, features, values), not by columns."""
    V, F = len(s.value_keys), len(s.features)

    def value(col):
        f = int(s.value_feature[col])
        return ("detached", col) if f < 0 else (s.features[f], s.value_keys[col])

    out = {}
    for c, y in enumerate(s.classes):
        out[("class", y)] = s.class_count[c]
        for col in range(1, V):
            out[("value", y, value(col))] = s.value_count[c, col]
        for f in range(F):
            out[("feat", y, s.features[f])] = s.feat_count[c, f]
        if s.pairs:
            for a, b in zip(*np.nonzero(s.pair_count[c, :V, :V])):
                out[("pair", y, value(a), value(b))] = s.pair_count[c, a, b]
            for a, g in zip(*np.nonzero(s.pair_feat[c, :V, :F])):
                out[("pair_feat", y, value(a), s.features[g])] = s.pair_feat[c, a, g]
    return {k: float(v) for k, v in out.items() if v != 0}


def fine_layer(**kw):
    fine = Stats(pairs=True, numeric="bins", bins=4, warmup=WARMUP, **kw)
    fine.bin_floats_at_once()  # floats binned from their first value, as the fine layer of a store that forgets
    return fine


def with_edges(fine, *names, **kw):
    """A store whose features ``names`` have ``fine``'s edges from the start: its events never wait."""
    return fine_layer(bin_edges={name: fine.disc[fine.feature_index[name]].edges.tolist() for name in names}, **kw)


def stream(n, seed=0):
    """Events of a numeric ``t``, a categorical ``c`` and, every other event, a numeric ``u`` (whose edges
    come later than ``t``'s), weights of 1, 1.5 or 2."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        t = float(np.round(rng.normal(), 2))
        y = "hi" if t + 0.5 * rng.normal() > 0 else "lo"
        x = {"t": t, "c": f"c{rng.integers(0, 3)}"}
        if i % 2 == 0:
            x["u"] = float(np.round(rng.normal(), 2))
        out.append((x, y, 1.0 + 0.5 * int(rng.integers(0, 3))))
    return out


def test_events_that_waited_for_the_edges_are_counted_as_if_the_edges_had_existed():
    events = stream(80)
    fine, waiting = fine_layer(), Waiting(WARMUP)
    for i, (x, y, w) in enumerate(events):
        learn(fine, waiting, x, y, w)
        if i == WARMUP - 3:  # the warm-up: events wait, counted without their value of t
            t, u = fine.feature_index["t"], fine.feature_index["u"]
            assert [e[2] for e in waiting.backlog] == [sorted([(t, x["t"])] + ([(u, x["u"])] if "u" in x else []))
                                                       for x, _, _ in events[: i + 1]]
            assert ("feat", y, "t") not in cells(fine)
    assert waiting.backlog == [] and waiting.candidates == [] and waiting.counted == {}
    ref = with_edges(fine, "t", "u")
    for x, y, w in events:
        ref.add(ref.encode_learn(x, y), ref.class_of(y), w)
    assert cells(fine) == cells(ref)


def test_the_backlog_keeps_at_most_ten_warm_ups_of_events():
    fine, waiting = fine_layer(), Waiting(2)
    enc = fine.encode_learn({"c": "a"}, "y")
    for i in range(25):
        waiting.wait(enc, [(0, float(i))], False, 0, 1.0)
    assert len(waiting.backlog) == 20 and [e[2] for e in waiting.backlog] == [[(0, float(i))] for i in range(20)]


def int_then_float(n, seed=1):
    """A feature of integers (``n``) that a fraction turns numeric after a few events."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        v = int(rng.integers(0, 9))
        x = {"n": v + 0.5 if i in (7, 30) else v, "c": f"c{rng.integers(0, 3)}"}
        out.append((x, "hi" if v + rng.normal() > 4 else "lo", 1.0))
    return out


def test_a_promotion_makes_the_young_features_events_wait_as_if_numeric_from_the_start():
    events = int_then_float(90)
    fine, waiting = fine_layer(), Waiting(WARMUP)
    n = None
    for i, (x, y, w) in enumerate(events):
        learn(fine, waiting, x, y, w)
        n = fine.feature_index["n"]
        if i == 6:  # n is a young feature of integers: each event holding it is logged, counted as a category
            assert fine.from_int == {n} and len(waiting.candidates) == 7 and not waiting.backlog
            assert waiting.has_young(fine) and ("value", y, ("n", x["n"])) in cells(fine)
        if i == 7:  # its first fraction: the logged events wait for n's edges, their values its warm-up values
            assert fine.promoted == {n: "drop"} and not waiting.candidates and not waiting.has_young(fine)
            assert [e[2] for e in waiting.backlog] == [[(n, float(x["n"]))] for x, _, _ in events[:8]]
            assert not any(k[0] != "class" and "n" in (k[2][0], k[-1]) for k in cells(fine) if len(k) > 2)
    assert not waiting.backlog and fine.kinds[n] == BINNED
    ref = with_edges(fine, "n", types={"n": "numeric"})
    for x, y, w in events:
        ref.add(ref.encode_learn(x, y), ref.class_of(y), w)
    got = cells(fine)
    assert {k: v for k, v in got.items() if k[0] != "value" or k[2][0] != "detached"} == got  # nothing left behind
    assert got == cells(ref)


def test_a_feature_with_warmup_values_grows_up_and_its_events_stop_waiting():
    fine, waiting = fine_layer(), Waiting(3)
    for v in range(5):
        enc, _, _ = learn(fine, waiting, {"n": v % 4}, "y")
    n = fine.feature_index["n"]
    # values seen as warm-up values count them (a value new with the event once): 1 and 2 before events 0 and
    # 1, fewer than 3, then 3 before event 2: the first two events are logged, then n has grown up
    assert waiting.grown == {n} and not waiting.has_young(fine)
    assert [e[0].tolist() for e in waiting.candidates] == [[fine.values[n][0]], [fine.values[n][1]]]
    assert not waiting.young(fine, enc)


@pytest.mark.parametrize("when", ["waiting", "partly", "counted"])
def test_a_receipt_takes_an_event_back_whether_it_still_waits_or_was_counted_since(when):
    events = stream(60, seed=3)
    drop = 4
    fine, waiting = fine_layer(), Waiting(WARMUP)
    for i, (x, y, w) in enumerate(events):
        enc, c, e = learn(fine, waiting, x, y, w, keyed=i == drop)
        if i == drop:
            then = (enc, c, w, e)
            assert e[6] == waiting.receipts == 1 and e in waiting.backlog
        # partly: t has its edges (its value counted since), u not yet (its value still waits)
        if i == {"waiting": drop + 2, "partly": WARMUP + 2, "counted": 40}[when]:
            enc, c, w_, e = then
            now = [k for k in waiting.backlog if k[6] == 1]
            assert [k[2] for k in now] == {"waiting": [e[2]], "partly": [[(fine.feature_index["u"], events[drop][0]["u"])]],
                                            "counted": []}[when] and (1 in waiting.counted) == (when == "counted")
            waiting.unwait(fine, e)  # what counting its values added since, and its waiting, gone
            fine.add(enc, c, -w_)  # its first counts: the receipt's journal holds them
            assert not any(k[6] == 1 for k in waiting.backlog) and waiting.counted == {}
    ref = with_edges(fine, "t", "u")
    for i, (x, y, w) in enumerate(events):
        if i != drop:
            ref.add(ref.encode_learn(x, y), ref.class_of(y), w)
    got, want = cells(fine), cells(ref)
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], abs=1e-12) for k in got)


def test_decay_scales_the_waiting_events_as_it_scales_the_counts():
    events = stream(50, seed=4)
    fine, waiting = fine_layer(), Waiting(WARMUP)
    scaled_at, factor = 6, 0.25
    for i, (x, y, w) in enumerate(events):
        learn(fine, waiting, x, y, w)
        if i == scaled_at:
            scale(fine, factor)
            waiting.scale(factor)
    ref = with_edges(fine, "t", "u")
    for i, (x, y, w) in enumerate(events):
        ref.add(ref.encode_learn(x, y), ref.class_of(y), w)
        if i == scaled_at:
            scale(ref, factor)
    got, want = cells(fine), cells(ref)
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], abs=1e-12) for k in got)


def scale(s, factor):
    for a in (s.class_count, s.value_count, s.feat_count, s.pair_count, s.pair_feat):
        a *= factor


def test_the_state_carries_the_entries_and_their_keys_and_refuses_keys_that_do_not_fit():
    events = stream(30, seed=5)
    fine, waiting = fine_layer(), Waiting(WARMUP)
    for i, (x, y, w) in enumerate(events[:8]):
        learn(fine, waiting, x, y, w, keyed=i % 2 == 0)
    tl = json.loads(json.dumps(waiting.state()))
    assert tl["receipts"] == 4 and [e[6] if len(e) == 7 else None for e in tl["backlog"]] == [1, None, 2, None, 3, None, 4, None]
    back = Waiting.from_state(tl, fine, WARMUP)
    assert back.state() == waiting.state() and back.receipts == 4
    other = copy.deepcopy(fine)  # the restored part counts the backlog as the one it was saved from
    for x, y, w in events[8:]:
        learn(fine, waiting, x, y, w)
        learn(other, back, x, y, w)
    assert cells(other) == cells(fine) and back.counted.keys() == waiting.counted.keys() == {1, 2, 3, 4}
    assert Waiting(WARMUP).state() == {"backlog": [], "candidates": [], "grown": []}  # no receipts: as always written
    tl["backlog"][2][6] = 1
    with pytest.raises(ValueError, match=r"stats\.two_layer: expected receipt keys of the waiting and counted events distinct"):
        Waiting.from_state(tl, fine, WARMUP)
    tl["backlog"][2][6] = 9
    with pytest.raises(ValueError, match=r"each in 1\.\.4"):
        Waiting.from_state(tl, fine, WARMUP)


def _young_one_at_a_time(fine, grown: set, warmup: int, enc) -> bool:
    """:meth:`Waiting.young` feature by feature, as it was written first: each feature of integers not grown yet
    read alone, grown once its values were seen ``warmup`` times."""
    young = False
    for f in enc.feats.tolist():
        if f not in fine.from_int or f in grown:
            continue
        if fine.times_seen(fine.columns_of(f)).sum() < warmup:
            young = True
        else:
            grown.add(f)
    return young


def test_young_reads_every_feature_at_once_as_one_at_a_time():
    """Whether an event holds a young value, and the features grown after it, event after event over a stream
    of integer features with few and many values (some grown within a few events, some never), events that
    miss features, and a feature first seen late: the same as reading each feature alone."""
    rng = np.random.default_rng(3)
    fine, waiting = fine_layer(), Waiting(WARMUP)
    grown, answers = set(), []
    for i in range(120):
        x = {f"a{j}": int(rng.integers(1 + 9 * j)) for j in range(6) if rng.random() < 0.8}
        if i >= 60:
            x["late"] = int(rng.integers(3))
        if rng.random() < 0.05:
            x["rare"] = int(rng.integers(4))
        y = int(rng.integers(2))
        enc = fine.encode_learn(x, y)
        if not fine.from_int:
            continue
        want = _young_one_at_a_time(fine, grown, WARMUP, enc)
        assert waiting.young(fine, enc) == want
        assert waiting.grown == grown
        answers.append(want)
        fine.add(enc, fine.class_of(y))
    assert True in answers and False in answers and grown and fine.from_int - grown
