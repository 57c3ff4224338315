"""Forgetting (windows of panes, exponential decay, resets on drift) against independent references.

* windows: the counts equal those of a model that learned the whole stream minus those of a
  model that learned the expired prefix (two plain models, no subtraction code shared), and the
  Gaussian moments equal numpy's over the events in the window;
* decay: predictions equal those of a plain model whose every count array is literally multiplied
  by 2**(-1/H) before each event;
* drift: switching leaves exactly the counts of the events since the warning;
* the batch and vectorised paths equal the one-event path, snapshots restore bit for bit,
  merges of decayed models add the decayed counts, windows refuse to merge.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from river import drift

import stream_nb
from stream_nb import AODE, KDB, MDL, SPODE, TAN, Decay, EqualFrequency, NaiveBayes, Parents, SuperParent, SuperParents, Tree, Window
from stream_nb.exceptions import ConfigError, MergeError

MODELS = {
    "nb": lambda **kw: NaiveBayes(**kw),
    "aode": lambda numeric=MDL(bins=3, warmup=20), **kw: AODE(numeric=numeric, **kw),
    "tan": lambda numeric=MDL(bins=3, warmup=20), **kw: TAN(numeric=numeric, search=Tree(rebuild_every=40), **kw),
    "spode": lambda numeric=MDL(bins=3, warmup=20), **kw: SPODE(numeric=numeric, search=SuperParent(rebuild_every=40), **kw),
    "kdb": lambda numeric=EqualFrequency(bins=3, warmup=20), **kw: KDB(k=2, numeric=numeric, search=Parents(rebuild_every=40), **kw),
}


def stream(n, seed=0, flip_at=None, numeric=True):
    """Two classes; feature a agrees with the class (inverted after ``flip_at``), b is noise, t is numeric."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        y = rng.choice(["p", "q"])
        agree = (y == "p") != (flip_at is not None and i >= flip_at)
        x = {"a": "u" if agree ^ (rng.random() < 0.15) else "v", "b": rng.choice(["r", "s", "t"])}
        if numeric:
            x["t"] = rng.gauss(1.0 if y == "p" else -1.0, 1.0)
        out.append((x, y))
    return out


def used(s, arr):
    """The part of count array ``arr`` of store ``s`` over its classes, values and features."""
    C, V, F, t = len(s.classes), len(s.value_keys), len(s.features), s.tuples
    dims = {"class_count": (C,), "value_count": (C, V), "feat_count": (C, F), "pair_count": (C, V, V),
            "pair_feat": (C, V, F), "tuple_count": (C,) + (V,) * t, "tuple_feat": (C,) + (V,) * (t - 1) + (F,)}[arr]
    return getattr(s, arr)[tuple(slice(0, d) for d in dims)]


def window_size(n, window, panes):
    size = math.ceil(window / panes)
    return min(n // size, panes - 1) * size + n % size


# ---------------------------------------------------------------------- windows


@pytest.mark.parametrize("name", ["nb", "tan", "kdb"])
@pytest.mark.parametrize("window,panes", [(40, 4), (30, 3), (12, 1)])
def test_window_counts_are_those_of_the_recent_events(name, window, panes):
    data = stream(150, seed=1, numeric=name == "nb")
    model = MODELS[name](forgetting=Window(window, panes=panes))
    everything = MODELS[name]()
    for n, (x, y) in enumerate(data, 1):
        model.learn_one(x, y)
        everything.learn_one(x, y)
        if n % 7 and n != len(data):
            continue
        k = window_size(n, window, panes)
        assert model.n_learned == k
        prefix = MODELS[name]()
        for x0, y0 in data[: n - k]:
            prefix.learn_one(x0, y0)
        s, a, b = model._stats, everything._stats, prefix._stats
        arrays = ["class_count", "value_count", "feat_count"] + (["pair_count", "pair_feat"] if a.pairs else []) + (
            ["tuple_count", "tuple_feat"] if a.tuples else [])
        for arr in arrays:
            want = used(a, arr).copy()
            part = used(b, arr)
            want[tuple(slice(0, d) for d in part.shape)] -= part
            assert np.array_equal(getattr(s, arr)[tuple(slice(0, d) for d in want.shape)], want), arr
        if name == "nb":  # the Gaussian moments of the window against numpy's
            recent = data[n - k: n]
            for c, label in enumerate(s.classes):
                xs = np.array([x["t"] for x, y in recent if y == label])
                g = s.gslot[s.feature_index["t"]]
                assert s.g_n[c, g] == len(xs)
                if len(xs):
                    assert s.g_mean[c, g] == pytest.approx(xs.mean(), rel=1e-9, abs=1e-9)
                    assert s.g_m2[c, g] == pytest.approx(((xs - xs.mean()) ** 2).sum(), rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("kw", [dict(forgetting=Window(50)), dict(forgetting=Window(45, panes=3)), dict(forgetting=Decay(half_life=25.0)),
                                dict(drift_detector="ddm"), dict(forgetting=Window(60), drift_detector="adwin")])
def test_prequential_many_equals_the_one_event_path(name, kw):
    data = stream(400, seed=2, flip_at=200, numeric=name == "nb")
    xs, ys = [x for x, _ in data], [y for _, y in data]
    loop, batch = MODELS[name](**kw), MODELS[name](**kw)
    expected = []
    for x, y in data:
        step = loop.prequential_one(x, y)
        expected.append((step.prediction, step.proba))
    got = []
    for lo in range(0, len(xs), 97):
        got += batch.prequential_many(xs[lo: lo + 97], ys[lo: lo + 97])
    assert [g[0] for g in got] == [e[0] for e in expected]
    for (_, p), (_, q) in zip(got, expected):
        assert p.keys() == q.keys() and all(math.isclose(p[k], q[k], rel_tol=1e-9, abs_tol=1e-12) for k in p)
    assert loop.drifts == batch.drifts
    a, b = loop.state()[0], batch.state()[0]
    assert a.keys() == b.keys() and all(np.allclose(a[k], b[k], rtol=1e-9, atol=1e-9) for k in a)


@pytest.mark.parametrize("name", ["nb", "tan"])
def test_learn_many_with_a_window_equals_learn_one(name):
    pd = pytest.importorskip("pandas")
    data = stream(230, seed=3, numeric=name == "nb")
    one, many = MODELS[name](forgetting=Window(64)), MODELS[name](forgetting=Window(64))
    for x, y in data:
        one.learn_one(x, y)
    frame = pd.DataFrame([x for x, _ in data])
    for lo in range(0, len(data), 50):
        many.learn_many(frame.iloc[lo: lo + 50], pd.Series([y for _, y in data[lo: lo + 50]]))
    a, b = one.state()[0], many.state()[0]
    assert a.keys() == b.keys() and all(np.allclose(a[k], b[k], rtol=1e-12, atol=1e-9) for k in a)


def OWN():
    """A river detector with no compiled twin (a drift at its 300th error), as a user may give one."""
    return drift.DummyDriftDetector(t_0=300, seed=1)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("kw", [dict(forgetting=Decay(half_life=3.0)), dict(drift_detector="ddm"),
                                dict(forgetting=Decay(half_life=8.0), drift_detector="ddm"), dict(drift_detector=OWN)],
                         ids=["decay", "ddm", "decay-ddm", "own-detector"])
def test_learn_many_with_decay_or_a_detector_equals_learn_one_in_the_kernel(name, kw):
    """``learn_many`` with decay or a detector learns as ``prequential_many`` does (the kernel predicts each row,
    feeds its error to the detector's twin, then counts it with its decayed weight), and ends as the loop of
    ``learn_one``: the same counts, drifts (one inside a batch), and decay's inflation after its renormalisations
    (every 48 events with half_life=3, every 128 with 8: inside batches of 70)."""
    pd = pytest.importorskip("pandas")
    data = stream(400, seed=2, flip_at=200, numeric=name == "nb")
    one, many = (MODELS[name](**{k: v() if callable(v) else v for k, v in kw.items()}) for _ in range(2))
    for x, y in data:
        one.learn_one(x, y)
    frame, labels = pd.DataFrame([x for x, _ in data]), pd.Series([y for _, y in data])
    single = []  # the rows learned one at a time (learn_one)
    many.learn_one = lambda x, y, w=1.0: single.append(x) or type(many).learn_one(many, x, y, w)
    for lo in range(0, len(data), 70):
        many.learn_many(frame.iloc[lo: lo + 70], labels.iloc[lo: lo + 70])
    a, b = one.state(), many.state()
    assert a[0].keys() == b[0].keys() and all(np.allclose(a[0][k], b[0][k], rtol=1e-12, atol=1e-12) for k in a[0])
    assert a[1] == b[1]  # the decay's inflation and halvings, the detector's state, the drifts
    if "forgetting" not in kw:  # (with decay the model keeps up with the change: no drift)
        assert one.drifts and all(d % 70 for d in one.drifts), one.drifts  # inside a batch
    if kw.get("drift_detector") is OWN:
        assert len(single) == len(data)  # a detector with no twin: fed in Python, every row learned one at a time
    else:
        assert len(single) < len(data) / 4, len(single)  # the kernel took the runs


DECAY_OR_DETECTOR = {"half_life": dict(forgetting=Decay(half_life=3.0)), "drift_detector": dict(drift_detector="ddm"),
                     "half_life-time_field": dict(forgetting=Decay(half_life=3.0, time_field="ts"))}


@pytest.mark.parametrize("kw,bad", [pytest.param(kw, bad, id=f"{name}-{bad}") for name, kw in DECAY_OR_DETECTOR.items()
                                    for bad in ("value", "missing label", "label type")]
                         + [pytest.param(DECAY_OR_DETECTOR["half_life-time_field"], "time", id="half_life-time_field-time")])
def test_a_bad_row_of_learn_many_with_decay_or_a_detector_leaves_no_trace(kw, bad):
    pd = pytest.importorskip("pandas")
    from stream_nb.exceptions import InvalidEventError

    data = stream(120, seed=4, flip_at=60, numeric=False)
    timed = getattr(kw.get("forgetting"), "time_field", None) is not None
    rows = [{**x, "ts": float(i)} if timed else x for i, (x, _) in enumerate(data)]
    ys = [y for _, y in data]
    model = MODELS["tan"](**kw)
    model.learn_many(pd.DataFrame(rows[:50]), pd.Series(ys[:50]))
    before = model.state()
    rows, ys = rows[50:], ys[50:]
    if bad == "value":
        rows[40] = {**rows[40], "b": 5}  # feature b holds strings
    elif bad == "missing label":
        ys[40] = None
    elif bad == "label type":
        ys[40] = 7
    else:
        rows[40] = {**rows[40], "ts": "noon"}
    with pytest.raises(InvalidEventError):
        model.learn_many(pd.DataFrame(rows), pd.Series(ys, dtype=object))
    after = model.state()
    assert before[1] == after[1] and all(np.array_equal(before[0][k], after[0][k]) for k in before[0])



# ---------------------------------------------------------------------- decay


def brute_force_decay(model, d):
    """Multiply every count the model's store holds by ``d``, literally, cell by cell."""
    s = model._stats
    for name in ("class_count", "value_count", "feat_count", "pair_count", "pair_feat", "tuple_count", "tuple_feat",
                 "obs_value_count", "obs_feat_count", "obs_pair_count", "obs_pair_feat", "g_n", "g_m2"):
        if hasattr(s, name):
            arr = getattr(s, name)
            arr[...] = arr * d
    s.epoch += 1  # cached tables are stale


@pytest.mark.parametrize("name", ["nb", "tan", "aode"])
def test_decay_equals_multiplying_every_count_per_event(name):
    H = 3.0  # short: the stored counts are renormalised several times (every 16 half-lives)
    d = 2.0 ** (-1.0 / H)
    data = stream(160, seed=4, flip_at=80, numeric=name == "nb")
    model = MODELS[name](forgetting=Decay(half_life=H))
    ref = MODELS[name]()
    for x, y in data:
        if ref._stats.n_classes:
            p, q = model.predict_proba_one(x), ref.predict_proba_one(x)
            assert p.keys() == q.keys()
            assert all(math.isclose(p[k], q[k], rel_tol=1e-8, abs_tol=1e-12) for k in p), (p, q)
        brute_force_decay(ref, d)
        ref.learn_one(x, y)
        model.learn_one(x, y)
    assert model.n_learned == pytest.approx(ref.n_learned, rel=1e-9)
    assert model.n_learned == pytest.approx(sum(d ** i for i in range(len(data))), rel=1e-9)
    if name == "tan":
        assert [e[:2] for e in model.tree] == [e[:2] for e in ref.tree]
        assert [e[2] for e in model.tree] == pytest.approx([e[2] for e in ref.tree], rel=1e-9)


def test_decay_keeps_alpha_meaning():
    """After the counts decay to almost nothing, the estimate is alpha's, not the inflated counts'."""
    model = NaiveBayes(alpha=1.0, forgetting=Decay(half_life=1.0))
    model.learn_one({"a": "u"}, "p")
    model.learn_one({"a": "v"}, "q")
    for _ in range(40):
        model.learn_one({"a": "u"}, "p")
    # the one q event has weight 2**-40: P(q) = (2**-40 + 1) / (~2 + 2), close to 1/4
    assert model.predict_proba_one({"b": "x"})["q"] == pytest.approx(1.0 / (2.0 + 2.0), rel=1e-6)


def test_merge_of_decayed_models_adds_the_decayed_counts():
    a, b = NaiveBayes(forgetting=Decay(half_life=20.0)), NaiveBayes(forgetting=Decay(half_life=20.0))
    ra, rb = NaiveBayes(), NaiveBayes()
    for (x, y), (x2, y2) in zip(stream(120, seed=5), stream(120, seed=6)):
        for m, r, xx, yy in ((a, ra, x, y), (b, rb, x2, y2)):
            m.learn_one(xx, yy)
            brute_force_decay(r, 2.0 ** (-1 / 20.0))
            r.learn_one(xx, yy)
    a.merge(b)
    ra.merge(rb)
    x = {"a": "u", "b": "s", "t": 0.3}
    p, q = a.predict_proba_one(x), ra.predict_proba_one(x)
    assert all(math.isclose(p[k], q[k], rel_tol=1e-9) for k in p)


def test_windows_refuse_to_merge():
    a, b = NaiveBayes(forgetting=Window(size=10)), NaiveBayes()
    a.learn_one({"a": "u"}, "p")
    with pytest.raises(MergeError, match="window=10"):
        a.merge(b)
    with pytest.raises(MergeError, match="the other model forgets by a window"):
        b.merge(a)


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="window"):
        NaiveBayes(window=0)
    with pytest.raises(ConfigError, match="not both"):
        NaiveBayes(window=10, half_life=5.0)
    with pytest.raises(ConfigError, match="panes"):
        NaiveBayes(window=3, panes=4)
    with pytest.raises(ConfigError, match="drift_detector"):
        NaiveBayes(drift_detector="nope")
    with pytest.raises(ConfigError, match="half_life"):
        NaiveBayes(half_life=-1.0)


# ---------------------------------------------------------------------- drift


def test_drift_switches_to_the_counts_since_the_warning():
    data = stream(1200, seed=7, flip_at=600, numeric=False)
    model = NaiveBayes(drift_detector=drift.binary.DDM())
    since = None
    for i, (x, y) in enumerate(data):
        before = model._forget.warning
        model.prequential_one(x, y)
        assert len(model.drifts) <= 1
        f = model._forget
        if f.warning and not before:
            since = i  # the warning came with event i's prediction, before it was learned
        if model.drifts:
            fresh = NaiveBayes()
            for x0, y0 in data[since: i + 1]:
                fresh.learn_one(x0, y0)
            assert model._stats.counts()["class_count"] == {
                k: fresh._stats.counts()["class_count"].get(k, 0.0) for k in model.classes}
            assert model._stats.counts()["value_count"]["a"] == {
                v: {c: fresh._stats.counts()["value_count"]["a"].get(v, {}).get(c, 0.0) for c in model.classes}
                for v in model._stats.counts()["value_count"]["a"]}
            assert since is not None and 600 <= since <= i
            break
    else:
        pytest.fail("DDM found no drift")
    assert 600 < model.drifts[0] < 900


@pytest.mark.parametrize("name", ["tan", "spode", "kdb"])
def test_structures_rebuild_after_a_switch(name):
    data = stream(1500, seed=8, flip_at=700, numeric=False)
    model = MODELS[name](drift_detector="ddm")
    rebuilds_before = None
    for i, (x, y) in enumerate(data):
        n = len(model.drifts)
        model.prequential_one(x, y)
        if len(model.drifts) > n:
            rebuilds_before = True
            # the early schedule starts again; n_rebuilds counts on (a counter of the model's life)
            assert model._rebuild_origin == model.n_rebuilds and model._since_rebuild <= 1
            assert model.rebuild_interval() == model.warmup
    assert rebuilds_before and model.n_rebuilds > 0


# ---------------------------------------------------------------------- snapshots


@pytest.mark.parametrize("name,kw", [
    (name, kw) for name in ("nb", "tan", "kdb")
    for kw in (dict(forgetting=Window(50, panes=5)), dict(forgetting=Decay(half_life=4.0)), dict(drift_detector="ddm"),
               dict(drift_detector=drift.ADWIN()), dict(drift_detector=drift.PageHinkley()),
               dict(forgetting=Window(40), drift_detector="hddm_w"))
] + [("nb", dict(drift_detector=drift.KSWIN(seed=1)))])  # KSWIN is slow: one model
def test_snapshot_restores_bit_for_bit(tmp_path, name, kw):
    data = stream(700, seed=9, flip_at=300, numeric=name == "nb")
    model = MODELS[name](**kw)
    for x, y in data[:437]:
        model.prequential_one(x, y)
    path = tmp_path / "model.snb"
    stream_nb.save(model, path)
    restored = stream_nb.load(path)
    for x, y in data[437:]:
        assert model.prequential_one(x, y) == restored.prequential_one(x, y)
    assert model.drifts == restored.drifts
    a, ma = model.state()
    b, mb = restored.state()
    assert ma == mb
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_forgetting_memory_is_bounded_by_panes_plus_one():
    model = TAN(forgetting=Window(size=100))
    for x, y in stream(1000, seed=10, numeric=False):
        model.learn_one(x, y)
    counts = sum(a.nbytes for k, a in model._stats.state()[0].items())
    assert model.forgetting_nbytes <= 4 * counts


@pytest.mark.parametrize("kw", [dict(drift_detector="ddm"), dict(drift_detector="adwin")])
def test_unlearn_one_is_refused_when_a_detector_forgets_without_a_window(kw):
    from stream_nb.exceptions import UnlearnError

    model = NaiveBayes(**kw)
    for x, y in stream(30, seed=11):
        model.learn_one(x, y)
    before = model.state()[0]
    with pytest.raises(UnlearnError, match="this model forgets") as info:
        model.unlearn_one(*stream(30, seed=11)[-1])
    assert info.value.reason == "forgets"
    after = model.state()[0]
    assert all(np.array_equal(before[k], after[k]) for k in before)
    plain = NaiveBayes()
    plain.learn_one(*stream(1, seed=11)[0])
    plain.unlearn_one(*stream(1, seed=11)[0])  # a model that does not forget takes it back


def test_evaluate_runs_the_drifting_streams_and_marks_drifts(tmp_path):
    from stream_nb.tools.evaluate import DRIFT_STREAMS, evaluate, make_model, open_events
    from stream_nb.tools.report import write_report

    stream = DRIFT_STREAMS["STAGGER-abrupt"](1)
    assert stream.change_points(4000) == [1000, 2000, 3000]
    models = {"nb": make_model("nb"), "nb:ddm": make_model("nb", {"drift_detector": "ddm"})}
    result = evaluate(open_events("river:STAGGER-abrupt", events=4000), models)
    drifts = result.models[1].model.drifts
    # one drift found shortly after each change, and the reset pays off
    assert len(drifts) == 3 and all(0 < d - p < 300 for d, p in zip(drifts, [1000, 2000, 3000]))
    assert result.models[1].accuracy > result.models[0].accuracy + 0.1
    pytest.importorskip("matplotlib")
    paths = write_report(result, str(tmp_path), window=200)
    assert (tmp_path / "learning_curves.png").stat().st_size > 0 and paths["report"]


def test_em_respects_the_window():
    """EM's expected counts leave with their pane: the observed-only counts (what its E-step reads) are
    exactly those of the events in the window, and every expected count stays within them."""
    rng = random.Random(12)
    data = [({k: v for k, v in x.items() if rng.random() > 0.3}, y) for x, y in stream(200, seed=12, numeric=False)]
    model, everything = NaiveBayes(forgetting=Window(size=40)), NaiveBayes()
    for x, y in data:
        model.learn_one(x, y)
        everything.learn_one(x, y)
    k = window_size(len(data), 40, 4)
    prefix = NaiveBayes()
    for x, y in data[: len(data) - k]:
        prefix.learn_one(x, y)
    s, a, b = model._stats, everything._stats, prefix._stats
    assert s.keeps_observed
    C, V = len(a.classes), len(a.value_keys)
    want = a.obs_value_count[:C, :V].copy()
    want[: len(b.classes), : len(b.value_keys)] -= (b.obs_value_count if b.keeps_observed else b.value_count)[
        : len(b.classes), : len(b.value_keys)]
    assert np.array_equal(s.obs_value_count[:C, :V], want)
    assert s.class_count[:C].sum() == k
    assert (s.value_count[:C, :V] >= -1e-9).all() and (s.value_count[:C, :V] <= k + 1e-9).all()


def test_metrics_and_logs_show_the_drifts(caplog):
    import json
    import logging

    from test_ops import ListSink, ListSource, scrape

    from stream_nb.engine import Engine
    from stream_nb.ops import Operations

    values = [json.dumps({**x, "label": y}).encode() for x, y in stream(1200, seed=7, flip_at=600, numeric=False)]
    engine = Engine(NaiveBayes(drift_detector="ddm"), ListSource(values), ListSink(), ListSink(),
                    config={"model_name": "nb-ddm", "poll_max_records": 100})
    ops = Operations(model_name="nb-ddm", mode="jsonl", host="127.0.0.1", port=0, summary_interval=0)
    try:
        ops.attach(engine)
        with caplog.at_level(logging.INFO, logger="stream_nb.drift"):
            engine.run()
        m = scrape(ops.server.url)
    finally:
        ops.detach()
        ops.close()
    drifts = engine.model.drifts
    assert drifts and m[("stream_nb_model_drifts_total", (("model", "nb-ddm"),))] == len(drifts)
    logged = [r for r in caplog.records if getattr(r, "event", None) == "drift"]
    assert [r.position for r in logged] == drifts


def test_windows_with_sparse_tables_equal_dense_ones(tmp_path):
    """A KDB whose t-way tables are sparse (a tiny memory budget) forgets exactly as a dense one, and restores."""
    data = stream(160, seed=13, flip_at=80, numeric=False)
    dense = KDB(k=2, forgetting=Window(40), numeric=EqualFrequency(warmup=20), search=Parents(rebuild_every=40), drift_detector="ddm", memory_budget=None)
    sparse = KDB(k=2, forgetting=Window(40), numeric=EqualFrequency(warmup=20), search=Parents(rebuild_every=40), drift_detector="ddm", memory_budget=1)
    def same(a, b):  # the dense tables are read by the compiled kernel, the sparse ones by numpy: to 1e-12
        return (a._replace(proba=None) == b._replace(proba=None) and a.proba.keys() == b.proba.keys()
                and all(b.proba[c] == pytest.approx(p, rel=1e-12) for c, p in a.proba.items()))

    for x, y in data[:100]:
        assert same(dense.prequential_one(x, y), sparse.prequential_one(x, y))
    assert sparse._stats.tuples_sparse and not dense._stats.tuples_sparse
    stream_nb.save(sparse, tmp_path / "kdb.snb")
    restored = stream_nb.load(tmp_path / "kdb.snb")
    for x, y in data[100:]:
        step, got = dense.prequential_one(x, y), sparse.prequential_one(x, y)
        assert same(step, got) and got == restored.prequential_one(x, y)


@pytest.mark.parametrize("name", ["aode", "tan", "kdb"])
@pytest.mark.parametrize("path", ["one", "many"])
def test_window_over_supervised_bins_counts_the_window_by_brute_force(name, path):
    """With the two-layer discretiser (the default), a window forgets in the fine layer and the
    coarse counts are derived again: after many cut-point choices and pane expiries, the class counts
    and each bin's counts equal a histogram of the events in the window under the cut points the
    model shows (a changed cut point used to break the pane arithmetic: shapes no longer matched)."""
    window, panes = 120, 4
    data = stream(1500, seed=5, flip_at=700)
    mdl = MDL(bins=3, fine_bins=16, warmup=20) if name == "kdb" else MDL(bins=3, warmup=20)  # KDB's fine bins: 16
    model = MODELS[name](forgetting=Window(window, panes=panes), numeric=mdl)
    if path == "one":
        for x, y in data:
            model.learn_one(x, y)
    else:
        model.prequential_many([x for x, _ in data], [y for _, y in data])
    s = model._stats
    k = int(round(s.class_count[: len(s.classes)].sum()))
    assert window - window // panes <= k <= window
    recent = data[-k:]
    assert {c: int(s.class_count[i]) for i, c in enumerate(s.classes)} == {
        c: sum(y == c for _, y in recent) for c in s.classes}
    cuts = model.cut_points()["t"]
    f = s.feature_index["t"]
    for ci, c in enumerate(s.classes):
        hist = np.bincount(np.searchsorted(cuts, [x["t"] for x, y in recent if y == c], side="right"),
                           minlength=len(cuts) + 1)
        assert {b: int(s.value_count[ci, col]) for b, col in s.values[f].items()} == {
            b: int(hist[b]) for b in s.values[f]}
        assert hist.sum() == sum(y == c for _, y in recent)


@pytest.mark.parametrize("make", [
    lambda **kw: TAN(search=stream_nb.Tree(rebuild_every=40, backoff=2.0), **kw),
    lambda **kw: TAN(search=stream_nb.Tree(rebuild_every=40, backoff=2.0, backoff_to="parent"), **kw),
    lambda **kw: AODE(search=SuperParents(m=3), **kw),
])
def test_decay_with_a_back_off_does_not_depend_on_when_counts_are_renormalised(make):
    """TAN's back-off m weighs the prior estimate against the stored counts, which decay keeps inflated: m is
    inflated with them (as alpha, and AODE's parent threshold m), so a model whose runs leave the counts
    inflated (``prequential_many``, its kernel) predicts as one renormalised after every event (before, m
    shrank against the counts until the next renormalisation, and the two differed)."""
    data = stream(300, seed=5, flip_at=150)
    decay, bins = stream_nb.Decay(half_life=20.0), stream_nb.EqualFrequency(bins=3, warmup=20)
    lazy, eager = (make(forgetting=decay, numeric=bins) for _ in range(2))
    got = lazy.prequential_many([x for x, _ in data], [y for _, y in data])
    for (x, y), (_, p) in zip(data, got):
        q = eager.predict_proba_one(x)
        assert p.keys() == q.keys()
        assert all(math.isclose(p[c], q[c], rel_tol=1e-9, abs_tol=1e-12) for c in p)
        eager.learn_one(x, y)
        eager._settle()
    assert lazy._forget.inflation > 1.0


@pytest.mark.parametrize("name", ["aode", "tan"])
def test_decay_over_supervised_bins_does_not_depend_on_when_counts_are_renormalised(name):
    """MDL's cut points depend on the counts' absolute sizes, which decay keeps inflated until it
    renormalises: the cut points are chosen from renormalised counts, so a model renormalised after
    every event predicts like one left to renormalise on its own (120 of 220 predictions differed)."""
    data = stream(600, seed=7, flip_at=300)
    lazy, eager = (MODELS[name](forgetting=Decay(half_life=40.0), numeric=MDL(bins=3, warmup=20)) for _ in range(2))
    for x, y in data:
        p, q = lazy.predict_proba_one(x), eager.predict_proba_one(x)
        assert p.keys() == q.keys()
        assert all(math.isclose(p[c], q[c], rel_tol=1e-9, abs_tol=1e-12) for c in p)
        lazy.learn_one(x, y)
        eager.learn_one(x, y)
        eager._settle()
    assert lazy.cut_points()["t"] == pytest.approx(eager.cut_points()["t"])
