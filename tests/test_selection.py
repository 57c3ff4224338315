"""Selective KDB (``search=Parents(select=0.01)``): the G-tests against brute force, the selection against the full model,
merges, snapshots, the settings, and the compiled path against the numpy one."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, chi2_contingency

import stream_nb
from reference import loop_and_run
from stream_nb import KDB, Parents
from stream_nb.exceptions import ConfigError
from stream_nb.learners._selection import g_test, selective_structure
from stream_nb.settings import BY_NAME, MODELS


def chain_stream(n: int, seed: int) -> list:
    """c -> a -> b (b tells nothing of c given a), d | c directly, and n0 noise: b and n0 are to be dropped."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.randrange(3)
        a = c if rng.random() < 0.7 else rng.randrange(3)
        b = a if rng.random() < 0.8 else rng.randrange(3)
        d = c if rng.random() < 0.5 else rng.randrange(3)
        out.append(({"a": a, "b": b, "d": d, "n0": rng.randrange(4)}, c))
    return out


def dependent_stream(n: int, seed: int) -> list:
    """Every attribute depends on the class and on the one before it, strongly: every test passes."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.randrange(2)
        x, prev = {}, c
        for name in "pqrs":
            v = (prev + c) % 3 if rng.random() < 0.8 else rng.randrange(3)
            x[name], prev = v, v
        out.append((x, c))
    return out


def brute_g(events: list, a, b, z) -> tuple[float, int]:
    """G = 2 Σ n log(n n_z / (n_az n_bz)) by a loop over the distinct (a, b, z) of ``events``, and the
    degrees of freedom Σ_z (values of a seen with z - 1)(values of b seen with z - 1)."""
    n: dict = {}
    for e in events:
        key = (a(e), b(e), z(e))
        n[key] = n.get(key, 0) + 1
    nz, naz, nbz = {}, {}, {}
    for (x, y, w), k in n.items():
        nz[w] = nz.get(w, 0) + k
        naz[x, w] = naz.get((x, w), 0) + k
        nbz[y, w] = nbz.get((y, w), 0) + k
    g = 2 * sum(k * math.log(k * nz[w] / (naz[x, w] * nbz[y, w])) for (x, y, w), k in n.items())
    df = sum((len({x for x, w2 in naz if w2 == w}) - 1) * (len({y for y, w2 in nbz if w2 == w}) - 1) for w in nz)
    return g, df


def selective_kdb1(events: list) -> KDB:
    """``KDB(k=1, search=Parents(0, select=0.01))`` after learning ``events`` one at a time."""
    model = KDB(k=1, search=Parents(0, select=0.01))
    for x, y in events:
        model.learn_one(x, y)
    return model


def test_the_g_test_is_the_likelihood_ratio_statistic_of_a_contingency_table():
    rng = np.random.default_rng(3)
    n = rng.integers(0, 9, size=(3, 4, 1)).astype(float)
    g, df = g_test(n)
    ref = chi2_contingency(n[:, :, 0], correction=False, lambda_="log-likelihood")
    assert g == pytest.approx(ref.statistic, rel=1e-12) and df == ref.dof


def test_williams_correction_divides_each_strata_g_by_its_textbook_q():
    # q = 1 + (n Σ_i 1/R_i - 1)(n Σ_j 1/C_j - 1) / (6 n (r - 1)(c - 1)) of each stratum's r x c table (the rows
    # and columns that hold a count), from scipy's G of each stratum alone
    rng = np.random.default_rng(5)
    n = rng.integers(0, 6, size=(4, 5, 3)).astype(float)
    n[2, :, 1] = 0.0  # a value of a absent from one stratum: not counted there
    want = 0.0
    for z in range(n.shape[2]):
        t = n[:, :, z]
        t = t[t.sum(1) > 0][:, t.sum(0) > 0]
        g = chi2_contingency(t, correction=False, lambda_="log-likelihood").statistic
        r, c, total = t.shape[0], t.shape[1], t.sum()
        q = 1 + (total * (1 / t.sum(1)).sum() - 1) * (total * (1 / t.sum(0)).sum() - 1) / (6 * total * (r - 1) * (c - 1))
        want += g / q
    got, df = g_test(n, williams=True)
    assert got == pytest.approx(want, rel=1e-12) and df == g_test(n)[1]
    assert got < g_test(n)[0]  # the correction only lowers G


def test_the_tests_the_selection_makes_are_those_of_brute_force_on_the_events():
    events = chain_stream(400, 1)
    s = selective_kdb1(events)._stats
    C = s.n_classes

    def cols(f):
        return s.columns_of(s.feature_index[f])

    # the class against a, alone: n[c, a, 1]; and against b within each value of a: n[c, b, a]
    marginal = g_test(s.value_count[:C, cols("a")][:, :, None])
    given = g_test(s.pair_count[:C, cols("b")[:, None], cols("a")[None, :]])
    # a against b given the class (the parent test): n[a, b, c]
    parent = g_test(np.asarray(s.pair_count[:C, cols("b")[:, None], cols("a")[None, :]]).transpose(1, 2, 0))
    for got, want in [(marginal, brute_g(events, lambda e: e[1], lambda e: e[0]["a"], lambda e: 0)),
                      (given, brute_g(events, lambda e: e[1], lambda e: e[0]["b"], lambda e: e[0]["a"])),
                      (parent, brute_g(events, lambda e: e[0]["b"], lambda e: e[0]["a"], lambda e: e[1]))]:
        assert got[0] == pytest.approx(want[0], rel=1e-10) and got[1] == want[1]
    # and G = 2 N I(a; y), the mutual information the order is made of
    mi = stream_nb.learners.mutual_information_with_class(s)[s.feature_index["a"]]
    assert marginal[0] == pytest.approx(2 * len(events) * mi, rel=1e-10)


def test_the_selection_drops_what_tells_nothing_more_of_the_class_and_keeps_the_rest():
    model = KDB(k=2, search=Parents(500, select=0.01))
    for x, y in chain_stream(3000, 2):
        model.learn_one(x, y)
    assert model.structure == {"a": [], "d": []}  # d is independent of a given the class: no parent
    assert sorted(model.dropped) == ["b", "n0"]
    # what the model predicts does not depend on the attributes it left out
    x = {"a": 1, "b": 2, "d": 1, "n0": 3}
    for b, n0 in [(0, 0), (1, 2), (None, None)]:
        assert model.predict_proba_one({**x, "b": b, "n0": n0}) == pytest.approx(model.predict_proba_one(x), rel=1e-12)


def test_an_attribute_is_left_out_when_its_first_parent_carries_all_it_says_of_the_class():
    # b copies a (the class drives a): given a, b says nothing of the class. The pair estimates, each from the
    # events its pair holds, may rank another earlier attribute above a for b (here n0, left out itself):
    # the class test given n0 then passes, and b is still left out, given a, its first parent. d says the
    # class on its own: no parent, kept. Each decision against the brute-force tests of the events.
    events = chain_stream(3000, 7)
    s = selective_kdb1(events)._stats
    order = [s.feature_index[f] for f in ("a", "n0", "b", "d")]
    a, n0, b, d = order
    cmi = np.zeros((len(s.features), len(s.features)))
    for f, g, v in ((n0, a, 0.1), (b, n0, 1.0), (b, a, 0.5), (d, a, 0.2), (d, n0, 0.1), (d, b, 0.1)):
        cmi[f, g] = cmi[g, f] = v
    parents, dropped = selective_structure(s, order, 1, 0.01, cmi, None)

    def passes(x, z, level=0.01 / 4):  # the class against x within each value of z, by a loop over the events
        g, df = brute_g(events, lambda e: e[1], lambda e: e[0][x], lambda e: e[0][z] if z else 0)
        return df > 0 and g > chi2.isf(level, df)

    assert passes("b", "n0") and not passes("b", "a")  # kept by its test given n0; nothing more given a
    assert passes("d", "a") and passes("a", None) and not passes("n0", "a")
    assert dropped == {n0, b} and parents[a] == () and parents[d] == ()


def test_the_attributes_left_out_lift_accuracy_on_a_chain_of_noise():
    # one informative attribute, thirty that copy it through a noisy chain: each tells nothing more of the
    # class than the one before it, and the full model's estimates of them only add noise
    rng = np.random.default_rng(0)

    def draw(n):
        y = rng.integers(0, 3, n)
        X = np.empty((n, 31), dtype=np.int64)
        X[:, 0] = np.where(rng.random(n) < 0.5, y, rng.integers(0, 6, n))
        for j in range(1, 31):
            X[:, j] = np.where(rng.random(n) < 0.7, X[:, j - 1], rng.integers(0, 6, n))
        return pd.DataFrame(X, columns=[f"x{j:02d}" for j in range(31)]), pd.Series(y)

    X, y = draw(1500)
    Xh, yh = draw(2000)
    scores = {}
    for name, model in [("full", KDB(k=1)), ("selective", KDB(k=1, search=Parents(select=0.01)))]:
        model.learn_many(X, y)
        model.rebuild()
        scores[name] = float((model.predict_many(Xh).to_numpy() == yh.to_numpy()).mean())
    assert model.structure == {"x00": []}
    assert scores["selective"] > scores["full"] + 0.05, scores


def test_with_every_test_passing_the_selection_is_the_full_model():
    events = dependent_stream(2000, 4)
    full, selective = KDB(k=2, search=Parents(300)), KDB(k=2, search=Parents(300, select=0.01))
    for x, y in events:
        full.learn_one(x, y)
        selective.learn_one(x, y)
    assert selective.dropped == [] and selective.structure == full.structure
    assert all(len(pa) == min(i, 2) for i, pa in enumerate(full.structure.values()))
    for x, _ in events[:50]:
        assert selective.predict_proba_one(x) == pytest.approx(full.predict_proba_one(x), rel=1e-12)


def test_two_models_merged_select_what_one_model_of_all_their_events_selects():
    events = chain_stream(2400, 5)
    one, a, b = (KDB(k=2, search=Parents(400, select=0.01)) for _ in range(3))
    for x, y in events:
        one.learn_one(x, y)
    for x, y in events[:1000]:
        a.learn_one(x, y)
    for x, y in events[1000:]:
        b.learn_one(x, y)
    a.merge(b)  # a merge rebuilds from the merged counts
    one.rebuild()
    assert (a.structure, a.dropped) == (one.structure, one.dropped) and a.dropped
    for x, _ in events[:40]:
        assert a.predict_proba_one(x) == pytest.approx(one.predict_proba_one(x), rel=1e-12)


def test_a_snapshot_keeps_the_selection(tmp_path):
    model = KDB(k=2, search=Parents(500, select=0.05))
    events = chain_stream(1500, 6)
    for x, y in events:
        model.learn_one(x, y)
    stream_nb.save(model, tmp_path / "m.snb")
    back = stream_nb.load(tmp_path / "m.snb")
    assert back.search == Parents(500, select=0.05) and back.dropped == model.dropped and back.structure == model.structure
    for x, _ in events[:30]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    # a state that leaves attributes out without a selection, or drops a parent, is refused
    arrays, meta = model.state()
    meta["params"]["search"]["select"] = None
    with pytest.raises(ValueError, match="dropped: expected"):
        KDB.from_state(arrays, meta)


def test_the_compiled_path_and_the_numpy_path_agree_under_a_selection():
    model = KDB(k=2, search=Parents(500, select=0.01))
    events = chain_stream(1500, 7)
    for x, y in events:
        model.learn_one(x, y)
    assert model.dropped
    s = model._stats
    X = pd.DataFrame([x for x, _ in events[:200]])
    kernel = model.predict_proba_many(X).to_numpy()
    D = np.stack([model._dense(s.encode(x)) for x, _ in events[:200]])
    terms = model._terms(D)  # numpy, off the counts, without the attributes left out
    post = np.exp(terms - terms.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    order = [s.class_index[c] for c in model.predict_proba_many(X).columns]
    assert np.allclose(kernel, post[:, order], rtol=1e-9, atol=0)
    # and prequential_many, the compiled run, predicts as the one-event loop does
    loop, run = loop_and_run(lambda: KDB(k=2, search=Parents(500, select=0.01)), chain_stream(1200, 8), rel=1e-7)
    assert run.dropped == loop.dropped and run.dropped


def test_the_option_is_declared_once_and_given_by_its_setting():
    assert KDB.from_flat({"select_level": 0.05, "rebuild_every": 70}).search == Parents(70, select=0.05)
    assert KDB().search == Parents() and KDB().select is None
    assert "select_level" in MODELS["kdb"][1] and "select_level" not in MODELS["nb"][1]
    assert "select_level" not in MODELS["tan"][1] and "select_level" not in MODELS["spode"][1]
    assert Parents.PARAMS[1].help in BY_NAME["select_level"].help
    assert "(model default none)" in BY_NAME["select_level"].help  # off unless given
    for bad in (0, 1.0, -0.1):
        with pytest.raises(ConfigError, match=r"Parents\(select=...\): expected"):
            Parents(select=bad)
    with pytest.raises(TypeError, match=r"KDB\(search=...\): expected Parents, got 0.01; write search=Parents"):
        KDB(search=0.01)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'select'"):
        KDB(select=0.01)  # one parameter carries the structure search: select is Parents'


def test_the_daemon_builds_a_selective_kdb_from_its_flag(tmp_path):
    events = tmp_path / "events.jsonl"
    root = Path(__file__).resolve().parents[1]
    events.write_text("".join(json.dumps({**x, "label": y}) + "\n" for x, y in chain_stream(600, 9)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", "--input", str(events), "--output",
                           str(tmp_path / "out.jsonl"), "--snapshot-dir", str(tmp_path / "snaps"), "--model", "kdb",
                           "--select-level", "0.05", "--rebuild-every", "200"], env=env, capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    store = stream_nb.snapshots.SnapshotStore(tmp_path / "snaps")
    model = store.read(store.sequences()[-1]).model()
    assert model.search == Parents(200, select=0.05) and "n0" in model.dropped
