"""``unlearn_one`` under forgetting: a window takes the event out of its pane, decay subtracts its decayed weight."""

from __future__ import annotations

import math

import numpy as np
import pytest

import stream_nb
from stream_nb import Decay, NaiveBayes, Window
from stream_nb.exceptions import UnlearnError
from test_forgetting import MODELS, brute_force_decay, stream
from test_forgetting_time import brute_force, timed

def named(model):
    """The model's true counts (stored divided by the decay's inflation) keyed by class, feature and value names."""
    s, g = model._stats, model._inflation
    col = {c: (s.features[f], v) for f in range(len(s.features)) if s.gslot[f] < 0 for v, c in s.values[f].items()}
    out = {}
    for ci, c in enumerate(s.classes):
        out[c] = s.class_count[ci] / g
        for k, key in col.items():
            out[c, key] = s.value_count[ci, k] / g
            if s.pairs:
                for k2, key2 in col.items():
                    out[c, key, key2] = s.pair_count[ci, k, k2] / g
        for f, name in enumerate(s.features):
            if s.gslot[f] >= 0:
                gs = s.gslot[f]
                out[c, name, "g"] = (s.g_n[ci, gs] / g, s.g_mean[ci, gs], s.g_m2[ci, gs] / g)
    return out


def same_counts(model, ref):
    a, b = named(model), named(ref)
    for key in a.keys() | b.keys():  # a value only the forgotten events held counts 0 in the model
        x, y = a.get(key, 0.0), b.get(key, 0.0)
        if isinstance(x, tuple) or isinstance(y, tuple):
            x, y = x if isinstance(x, tuple) else (0.0, 0.0, 0.0), y if isinstance(y, tuple) else (0.0, 0.0, 0.0)
            assert x[0] == pytest.approx(y[0], rel=1e-9, abs=1e-9), key
            if y[0] > 1e-6:
                assert x[1:] == pytest.approx(y[1:], rel=1e-6, abs=1e-7), key
        else:
            assert x == pytest.approx(y, rel=1e-9, abs=1e-9), key


@pytest.mark.parametrize("name", ["nb", "tan"])
def test_window_unlearn_takes_the_event_out_of_its_pane(name):
    window, panes, size = 40, 4, 10
    data = stream(130, seed=12, numeric=name == "nb")
    model = MODELS[name](forgetting=Window(window, panes=panes))
    receipts, gone = [], set()
    plan = {57: 55, 66: 48, 75: 30, 88: 87, 101: 99}  # at event i unlearn event j: kept panes, in progress, expired
    for i, (x, y) in enumerate(data):
        receipts.append(model.learn_one_receipt(x, y))
        if i in plan:
            j = plan[i]
            model.unlearn_one(*data[j], receipt=receipts[j])
            gone.add(j)
    # the window by position (panes by learned events), without the unlearned events: unlearned once, expired later
    last_pane = len(data) // size
    kept = [(x, y) for i, (x, y) in enumerate(data) if i // size >= last_pane - (panes - 1) and i not in gone]
    ref = MODELS[name]()
    for x, y in kept:
        ref.learn_one(x, y)
    same_counts(model, ref)
    assert model.expired_unlearns == 1  # event 30 had left the window at 75 (panes 4..7 kept)
    # a pane still holds its events minus the unlearned one: expiring it later leaves no negative count
    assert all((a >= -1e-12).all() for k, a in model.state()[0].items() if k.endswith("count") and "." not in k)


def test_window_unlearn_without_receipt_is_of_the_pane_in_progress_and_snapshots_keep_the_panes(tmp_path):
    data = stream(70, seed=13)
    model = NaiveBayes(forgetting=Window(size=20, panes=2))
    receipts = [model.learn_one_receipt(x, y) for x, y in data[:45]]
    stream_nb.save(model, tmp_path / "m.snb")
    restored = stream_nb.load(tmp_path / "m.snb")
    for m in (model, restored):
        m.unlearn_one(*data[44])  # no receipt: the pane in progress (40..49)
        m.unlearn_one(*data[35], receipt=receipts[35])  # the kept pane (30..39)
        for x, y in data[45:]:
            m.learn_one(x, y)
    (a, ma), (b, mb) = model.state(), restored.state()
    assert ma == mb and all(np.array_equal(a[k], b[k]) for k in a)
    ref = NaiveBayes()
    for x, y in data[60:]:
        ref.learn_one(x, y)
    same_counts(model, ref)


def test_decay_unlearn_subtracts_the_decayed_weight_in_event_time():
    H = 5.0  # 40-second gaps decay the cells themselves: the stamp spans renormalisations
    data = timed(160, seed=14, late=0.0)
    model = NaiveBayes(forgetting=Decay(half_life=H, time_field="ts"))
    receipts = [model.learn_one_receipt(x, y) for x, y in data[:120]]
    for j in (3, 60, 119):
        model.unlearn_one(*data[j], receipt=receipts[j])
    for x, y in data[120:]:
        model.learn_one(x, y)
    ref = brute_force(NaiveBayes, [e for j, e in enumerate(data) if j not in (3, 60, 119)], H)
    same_counts(model, ref)
    probe = {"a": "u", "b": "t", "t": 0.4}
    p, q = model.predict_proba_one(probe), ref.predict_proba_one(probe)
    assert all(math.isclose(p[k], q[k], rel_tol=1e-8) for k in p)


def test_decay_unlearn_in_events_and_what_is_refused():
    H = 4.0
    data = stream(90, seed=15)
    model, ref = NaiveBayes(forgetting=Decay(half_life=H)), NaiveBayes()
    receipts = []
    for j, (x, y) in enumerate(data):
        receipts.append(model.learn_one_receipt(x, y))
        brute_force_decay(ref, 2.0 ** (-1.0 / H))
        if j != 20:
            ref.learn_one(x, y)  # the reference never sees event 20, but its step of decay passes
    model.unlearn_one(*data[20], receipt=receipts[20])
    same_counts(model, ref)
    with pytest.raises(UnlearnError) as info:
        model.unlearn_one(*data[30])  # no receipt: its weight is unknown
    assert info.value.reason == "needs_receipt"
    em = NaiveBayes(forgetting=Decay(half_life=H))
    em.learn_one({"a": "u", "b": "r"}, "p")
    receipt = em.learn_one_receipt({"a": "u"}, "p")  # b missing: EM's fractions
    with pytest.raises(UnlearnError, match="plain counting") as info:
        em.unlearn_one({"a": "u"}, "p", receipt=receipt)
    assert info.value.reason == "forgets"
