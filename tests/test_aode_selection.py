"""Selective AODE (``search=SuperParents(select=0.01)``): the choice against scipy's G-test, the probabilities
against the textbook's AODE over the super-parents kept (and plain AODE's when every attribute passes), the
one-event loop against the compiled runs, merges, snapshots, the settings and the daemon. Then each SPODE's
children (``SuperParents(children=0.01)``) the same way: the choice against scipy's G-tests of each pair given
the class, the probabilities against the textbook's AODE whose SPODEs read a child not chosen given the class."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import chi2, chi2_contingency

import stream_nb
from reference import loop_and_run, merged_and_one
from stream_nb import AODE, Decay, Parents, SuperParents
from stream_nb.exceptions import ConfigError
from stream_nb.settings import BY_NAME, MODELS

FEATURES = ("a", "b", "d", "n0", "n1")


def noisy_stream(n: int, seed: int) -> list:
    """a and d depend on the class strongly, b weakly; n0 and n1 are noise."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.randrange(3)
        x = {"a": c if rng.random() < 0.7 else rng.randrange(3), "b": c if rng.random() < 0.25 else rng.randrange(3),
             "d": (c + 1) % 3 if rng.random() < 0.5 else rng.randrange(3), "n0": rng.randrange(4),
             "n1": rng.randrange(3)}
        out.append((x, c))
    return out


def dependent_stream(n: int, seed: int) -> list:
    """Every attribute depends on the class strongly: every test passes."""
    rng = random.Random(seed)
    return [({name: (c + k) % 3 if rng.random() < 0.7 else rng.randrange(3) for k, name in enumerate("pqrs")}, c)
            for c in (rng.randrange(2) for _ in range(n))]


_TALLIES: dict = {}


def tally(events: list) -> tuple:
    """The counts of the complete ``events`` the textbook names (kept for the list the test passes)."""
    held = _TALLIES.get(id(events))
    if held is not None and held[0] is events:
        return held[1]
    cls, val_c, pair = Counter(), Counter(), Counter()
    values: dict = {}
    for e, c in events:
        cls[c] += 1
        for i, v in e.items():
            values.setdefault(i, set()).add(v)
            val_c[c, i, v] += 1
            for j, w in e.items():
                pair[c, i, v, j, w] += 1
    _TALLIES[id(events)] = (events, (len(events), cls, val_c, pair, values))
    return _TALLIES[id(events)][1]


def textbook(events: list, parents: list, x: dict, a: float = 1.0, children: dict | None = None) -> dict:
    """Zhou's eq. 7.23-7.25 from the complete events' counts, the sum over ``parents`` alone (none: naive
    Bayes): P(c | x) ∝ Σ_i P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i); with ``children`` ({i: [j, ...]}), an x_j
    not among x_i's children read as P̂(x_j | c), as naive Bayes reads it."""
    n, cls, val_c, pair, values = tally(events)

    def n_values(i, v):
        return len(values[i]) + (v not in values[i])

    joint = {}
    for c in sorted(cls):
        if not parents:
            p = (cls[c] + a) / (n + a * len(cls))
            for i, v in x.items():
                p *= (val_c[c, i, v] + a) / (cls[c] + a * n_values(i, v))
            joint[c] = p
            continue
        total = 0.0
        for i in parents:
            p = (val_c[c, i, x[i]] + a) / (n + a * n_values(i, x[i]))
            for j, w in x.items():
                if children is not None and j != i and j not in children[i]:
                    p *= (val_c[c, j, w] + a) / (cls[c] + a * n_values(j, w))
                elif j != i:
                    p *= (pair[c, i, x[i], j, w] + a) / (val_c[c, i, x[i]] + a * n_values(j, w))
            total += p
        joint[c] = total
    z = sum(joint.values())
    return {c: p / z for c, p in joint.items()}


def learned(model, events):
    for x, y in events:
        model.learn_one(x, y)
    return model


def test_an_attribute_is_a_super_parent_when_scipys_g_test_rejects_its_independence_of_the_class():
    events = noisy_stream(1500, 1)
    for level in (0.01, 0.2):
        model = learned(AODE(search=SuperParents(select=level, rebuild_every=0)), events)
        assert model.super_parents is None  # no choice made yet: every attribute
        model.rebuild()
        frame = pd.DataFrame([x for x, _ in events])
        want = []
        for f in FEATURES:
            g, _, df, _ = chi2_contingency(pd.crosstab(frame[f], [y for _, y in events]), correction=False,
                                           lambda_="log-likelihood")
            threshold = chi2.ppf(1 - level / len(FEATURES), df)
            assert abs(g - threshold) > 0.05 * threshold  # clear of the quantile's approximation
            if g > threshold:
                want.append(f)
        assert model.super_parents == want
    assert "a" in want and "d" in want and "n0" not in want and "n1" not in want


@pytest.mark.parametrize("budget", [None, 2000], ids=["dense", "sparse-pairs"])
def test_the_probabilities_are_the_textbooks_aode_over_the_super_parents_kept(budget):
    events = noisy_stream(900, 2)
    model = learned(AODE(search=SuperParents(select=0.01, rebuild_every=300), memory_budget=budget), events)
    assert model._stats.pairs_sparse == (budget is not None)  # the compiled sparse path reads the choice too
    assert model.n_rebuilds == 3 and model.super_parents and "n0" not in model.super_parents
    probes = [x for x, _ in noisy_stream(40, 3)]
    for x in probes:
        assert model.predict_proba_one(x) == pytest.approx(textbook(events, model.super_parents, x), rel=1e-9)
    frame = model.predict_proba_many(pd.DataFrame(probes))
    for x, (_, row) in zip(probes, frame.iterrows()):
        assert row.to_dict() == pytest.approx(textbook(events, model.super_parents, x), rel=1e-9)
    # none kept (noise alone; or a level below the float spacing at 1): naive Bayes over the same counts
    noise = [({"n0": x["n0"], "n1": x["n1"]}, y) for x, y in events]
    for data, level in ((noise, 0.01), (events, 1e-300)):
        strict = learned(AODE(search=SuperParents(select=level, rebuild_every=900)), data)
        assert strict.super_parents == []
        x = {k: probes[0][k] for k in data[0][0]}
        assert strict.predict_proba_one(x) == pytest.approx(textbook(data, [], x), rel=1e-9)


@pytest.mark.parametrize("budget", [None, 2000], ids=["dense", "sparse-pairs"])
def test_with_drop_the_attributes_not_kept_are_left_out_of_the_model_and_still_counted(budget):
    events = noisy_stream(900, 2)
    model = learned(AODE(search=SuperParents(select=0.01, rebuild_every=300, drop=True), memory_budget=budget), events)
    kept = model.super_parents
    assert kept and "n0" not in kept and len(model._stats.features) == len(FEATURES)
    alone = [({k: x[k] for k in kept}, y) for x, y in events]  # the textbook's AODE over the kept attributes
    probes = [x for x, _ in noisy_stream(40, 3)]
    frame = model.predict_proba_many(pd.DataFrame(probes))
    for x, (_, row) in zip(probes, frame.iterrows()):
        want = textbook(alone, kept, {k: x[k] for k in kept})
        assert model.predict_proba_one(x) == pytest.approx(want, rel=1e-9)
        assert row.to_dict() == pytest.approx(want, rel=1e-9)
    # the counts are AODE's own: without the choice, the same model is plain AODE
    plain = learned(AODE(memory_budget=budget), events)
    model._keep = model._keep[:0]
    assert model.predict_proba_one(probes[0]) == plain.predict_proba_one(probes[0])


def test_when_every_attribute_passes_the_probabilities_are_plain_aodes():
    events = dependent_stream(800, 4)
    selective = learned(AODE(search=SuperParents(select=0.01, rebuild_every=200)), events)
    plain = learned(AODE(), events)
    assert selective.super_parents == list("pqrs")
    for x, _ in dependent_stream(50, 5):
        assert selective.predict_proba_one(x) == plain.predict_proba_one(x)
    probes = pd.DataFrame([x for x, _ in dependent_stream(50, 6)])
    pd.testing.assert_frame_equal(selective.predict_proba_many(probes), plain.predict_proba_many(probes))


@pytest.mark.parametrize("drop, forgetting", [(False, None), (True, None), (True, Decay(half_life=400.0))],
                         ids=["parents", "drop", "drop-decay"])
def test_the_compiled_runs_choose_and_predict_where_the_one_event_loop_does(drop, forgetting):
    stream = noisy_stream(1300, 7)
    loop, run = loop_and_run(lambda: AODE(search=SuperParents(select=0.01, rebuild_every=250, drop=drop),
                                          forgetting=forgetting), stream)
    assert (run.super_parents, run.n_rebuilds) == (loop.super_parents, loop.n_rebuilds) == (loop.super_parents, 5)
    batch = AODE(search=SuperParents(select=0.01, rebuild_every=250, drop=drop), forgetting=forgetting)
    batch.learn_many(pd.DataFrame([x for x, _ in stream]), pd.Series([y for _, y in stream]))
    assert batch.super_parents == loop.super_parents and "n0" not in loop.super_parents


def test_two_models_merged_choose_what_one_model_of_all_their_events_chooses():
    events = noisy_stream(2000, 8)
    a, one = merged_and_one(lambda: AODE(search=SuperParents(select=0.01, rebuild_every=400)), events, 700)
    assert a.super_parents == one.super_parents and "n1" not in a.super_parents
    for x, _ in events[:40]:
        assert a.predict_proba_one(x) == pytest.approx(one.predict_proba_one(x), rel=1e-12)


def test_a_snapshot_keeps_the_choice_and_the_schedule(tmp_path):
    events = noisy_stream(1300, 9)
    model = learned(AODE(search=SuperParents(select=0.05, rebuild_every=500)), events[:1100])
    stream_nb.save(model, tmp_path / "m.snb")
    back = stream_nb.load(tmp_path / "m.snb")
    assert back.search == SuperParents(select=0.05, rebuild_every=500) and back.super_parents == model.super_parents
    for x, _ in events[:30]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    learned(model, events[1100:])  # the next choice after 1,500 events, in both
    learned(back, events[1100:])
    assert (back.n_rebuilds, back.super_parents) == (model.n_rebuilds, model.super_parents)
    for x, _ in events[:30]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    # a state that chooses super-parents without a selection is refused
    arrays, meta = model.state()
    meta["params"]["search"]["select"] = None
    with pytest.raises(ValueError, match="super_parents: expected per feature"):
        AODE.from_state(arrays, meta)


def test_the_option_is_declared_once_and_given_by_its_settings():
    assert AODE.from_flat({"select_parents": 0.05, "rebuild_every": 70, "m": 3}).search == SuperParents(3, 0.05, 70)
    assert AODE.from_flat({"select_parents": 0.05, "drop_unselected": True}).search == SuperParents(select=0.05,
                                                                                                    drop=True)
    assert AODE().search == SuperParents() and AODE().m == 1 and AODE().super_parents is None
    assert {"select_parents", "drop_unselected", "m"} <= set(MODELS["aode"][1])
    assert "select_parents" not in MODELS["kdb"][1] and "select_level" not in MODELS["aode"][1]
    assert SuperParents.PARAMS[1].help in BY_NAME["select_parents"].help
    for bad in (0, 1.0, -0.1):
        with pytest.raises(ConfigError, match=r"SuperParents\(select=...\): expected"):
            SuperParents(select=bad)
    with pytest.raises(TypeError, match=r"AODE\(search=...\): expected SuperParents, got Parents\(\); write "
                                        r"search=SuperParents\(...\)"):
        AODE(search=Parents())
    with pytest.warns(DeprecationWarning, match=r"write AODE\(search=SuperParents\(m=5\)\)"):
        assert AODE(m=5).m == 5  # the frequency limit of earlier releases' keyword
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert AODE(search=SuperParents(m=5)).m == 5


def test_the_daemon_builds_a_selective_aode_from_its_flags(tmp_path):
    events = tmp_path / "events.jsonl"
    root = Path(__file__).resolve().parents[1]
    events.write_text("".join(json.dumps({**x, "label": y}) + "\n" for x, y in noisy_stream(600, 10)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", "--input", str(events), "--output",
                           str(tmp_path / "out.jsonl"), "--snapshot-dir", str(tmp_path / "snaps"), "--model", "aode",
                           "--select-parents", "0.05", "--rebuild-every", "200", "--m", "2", "--drop-unselected",
                           "--select-children", "0.05"],
                          env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 600
    store = stream_nb.snapshots.SnapshotStore(tmp_path / "snaps")
    model = store.read(store.sequences()[-1]).model()
    assert model.search == SuperParents(2, 0.05, 200, drop=True, children=0.05) and model.n_rebuilds == 3
    assert model.children is not None and "a" in model.children
    assert "a" in model.super_parents and "n0" not in model.super_parents


# ---------------------------------------------------------------------------------------------- each SPODE's children

PAIRED = ("a", "b", "d", "e", "n0")


def paired_stream(n: int, seed: int) -> list:
    """a and d depend on the class; b on a and e on d, given the class; n0 is noise."""
    rng = random.Random(seed)

    def event():
        c = rng.randrange(3)
        a = c if rng.random() < 0.5 else rng.randrange(3)
        d = (c + 1) % 3 if rng.random() < 0.4 else rng.randrange(3)
        return {"a": a, "b": a if rng.random() < 0.6 else rng.randrange(3), "d": d,
                "e": (d + c) % 3 if rng.random() < 0.5 else rng.randrange(3), "n0": rng.randrange(3)}, c

    return [event() for _ in range(n)]


def scipy_children(events: list, level: float) -> dict:
    """{i: [j, ...]}: the pairs whose G-test of independence given the class (the sum over the classes of
    scipy's G of x_i against x_j) rejects at ``level`` shared among the pairs."""
    frame = pd.DataFrame([x for x, _ in events])
    ys = pd.Series([y for _, y in events])
    names = list(frame.columns)
    pairs = [(i, j) for k, i in enumerate(names) for j in names[k + 1:]]
    out = {i: [] for i in names}
    for i, j in pairs:
        g = df = 0.0
        for c in sorted(ys.unique()):
            rows = frame[ys == c]
            gc, _, dfc, _ = chi2_contingency(pd.crosstab(rows[i], rows[j]), correction=False, lambda_="log-likelihood")
            g, df = g + gc, df + dfc
        threshold = chi2.ppf(1 - level / len(pairs), df)
        assert abs(g - threshold) > 0.05 * threshold  # clear of the quantile's approximation
        if g > threshold:
            out[i].append(j)
            out[j].append(i)
    return {i: sorted(js, key=names.index) for i, js in out.items()}


@pytest.mark.parametrize("budget", [None, 2000], ids=["dense", "sparse-pairs"])
def test_each_spodes_children_are_the_pairs_scipys_g_tests_show_dependent_given_the_class(budget):
    events = paired_stream(2000, 11)
    model = learned(AODE(search=SuperParents(children=0.01, rebuild_every=0), memory_budget=budget), events)
    assert model._stats.pairs_sparse == (budget is not None)  # G read off the sparse cells the same
    assert model.children is None  # no choice made yet: every attribute a child of every super-parent
    model.rebuild()
    assert model.children == scipy_children(events, 0.01)
    assert model.children["b"] == ["a"] and model.children["e"] == ["d"] and model.children["n0"] == []


@pytest.mark.parametrize("budget", [None, 2000], ids=["dense", "sparse-pairs"])
def test_the_probabilities_are_the_textbooks_aode_whose_spodes_read_the_others_given_the_class(budget):
    events = paired_stream(900, 12)
    model = learned(AODE(search=SuperParents(children=0.01, rebuild_every=300), memory_budget=budget), events)
    assert model._stats.pairs_sparse == (budget is not None)  # the compiled sparse path reads the choice too
    assert model.n_rebuilds == 3 and model.children["b"] == ["a"]
    probes = [x for x, _ in paired_stream(40, 13)]
    frame = model.predict_proba_many(pd.DataFrame(probes))
    for x, (_, row) in zip(probes, frame.iterrows()):
        want = textbook(events, list(PAIRED), x, children=model.children)
        assert model.predict_proba_one(x) == pytest.approx(want, rel=1e-9)
        assert row.to_dict() == pytest.approx(want, rel=1e-9)
    assert model.predict_proba_one(probes[0]) != pytest.approx(textbook(events, list(PAIRED), probes[0]), rel=1e-6)
    # the counts are AODE's own: without the choice, the same model is plain AODE
    plain = learned(AODE(memory_budget=budget), events)
    model._children = model._children[:0, :0]
    assert model.predict_proba_one(probes[0]) == plain.predict_proba_one(probes[0])


def test_a_missing_attribute_is_imputed_as_the_model_with_its_children_predicts():
    events = paired_stream(900, 14)
    model = learned(AODE(search=SuperParents(children=0.01, rebuild_every=300)), events)
    for x, _ in paired_stream(20, 15):
        given = {k: v for k, v in x.items() if k != "b"}
        # Σ_c P(c | the rest) P(b = v | the rest, c), the latter ∝ the textbook's joint of each completion in c
        post = textbook(events, [k for k in PAIRED if k != "b"], given, children=model.children)
        joint = {v: _joint(events, {**given, "b": v}, model.children) for v in range(3)}
        want = {v: sum(post[c] * joint[v][c] / sum(joint[w][c] for w in range(3)) for c in post) for v in range(3)}
        assert model.impute_proba_one(given)["b"] == pytest.approx(want, rel=1e-9)


def _joint(events: list, x: dict, children: dict, a: float = 1.0) -> dict:
    """The textbook's unnormalised Σ_i P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i) of ``x`` per class (as ``textbook``)."""
    n, cls, val_c, pair, values = tally(events)
    out = {}
    for c in sorted(cls):
        total = 0.0
        for i in x:
            p = (val_c[c, i, x[i]] + a) / (n + a * len(values[i]))
            for j, w in x.items():
                if j != i:
                    p *= ((pair[c, i, x[i], j, w] + a) / (val_c[c, i, x[i]] + a * len(values[j])) if j in children[i]
                          else (val_c[c, j, w] + a) / (cls[c] + a * len(values[j])))
            total += p
        out[c] = total
    return out


@pytest.mark.parametrize("forgetting", [None, Decay(half_life=400.0)], ids=["counts", "decay"])
def test_the_compiled_runs_choose_children_and_predict_where_the_one_event_loop_does(forgetting):
    stream = paired_stream(1300, 16)
    loop, run = loop_and_run(lambda: AODE(search=SuperParents(children=0.01, rebuild_every=250),
                                          forgetting=forgetting), stream)
    assert (run.children, run.n_rebuilds) == (loop.children, 5) and loop.children["e"] == ["d"]
    batch = AODE(search=SuperParents(children=0.01, rebuild_every=250), forgetting=forgetting)
    batch.learn_many(pd.DataFrame([x for x, _ in stream]), pd.Series([y for _, y in stream]))
    assert batch.children == loop.children


def test_merged_models_choose_the_children_of_one_model_of_all_their_events_and_snapshots_keep_them(tmp_path):
    events = paired_stream(2000, 17)
    a, one = merged_and_one(lambda: AODE(search=SuperParents(children=0.01, rebuild_every=400)), events, 700)
    assert a.children == one.children and a.children["b"] == ["a"]
    for x, _ in events[:40]:
        assert a.predict_proba_one(x) == pytest.approx(one.predict_proba_one(x), rel=1e-12)
    stream_nb.save(one, tmp_path / "m.snb")
    back = stream_nb.load(tmp_path / "m.snb")
    assert back.search == one.search and back.children == one.children and back.n_rebuilds == one.n_rebuilds
    for x, _ in events[:30]:
        assert back.predict_proba_one(x) == one.predict_proba_one(x)
    arrays, meta = one.state()
    meta["params"]["search"]["children"] = None  # a choice of children without the option is refused
    with pytest.raises(ValueError, match="children: expected a symmetric"):
        AODE.from_state(arrays, meta)


def test_the_children_option_is_given_by_its_setting():
    assert AODE.from_flat({"select_children": 0.05}).search == SuperParents(children=0.05)
    assert "select_children" in MODELS["aode"][1] and "select_children" not in MODELS["kdb"][1]
    assert AODE(search=SuperParents(children=0.05)).rebuild_every == 1000 and AODE().rebuild_every == 0
    for bad in (0, 1.0, -0.1):
        with pytest.raises(ConfigError, match=r"SuperParents\(children=...\): expected"):
            SuperParents(children=bad)
