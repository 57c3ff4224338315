"""EM for missing values: E-steps against brute-force enumeration, and the M-step's bookkeeping."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import reference as ref
from stream_nb import AODE, EM, KDB, MDL, SPODE, TAN, Ignore, NaiveBayes, Parents, SuperParent, SuperParents, Tree
from stream_nb.learners import conditional_mutual_information
from test_learners import learn, random_events

FEATURES = [f"f{i}" for i in range(5)]


def enumerate_posterior(model, x, y):
    """E[e] and E[e eᵀ] over every completion of x's missing values, weighted by the model's own joint
    (what prediction and imputation use)."""
    s = model._stats
    enc = s.encode(x)
    miss = s.missing_of(enc)
    c = s.class_index[y]
    names = [s.features[f] for f in miss]
    doms = [s.columns_of(f) for f in miss]
    u = np.concatenate([enc.cols] + list(doms))
    where = {col: i for i, col in enumerate(u.tolist())}
    m, J, Z = np.zeros(len(u)), np.zeros((len(u), len(u))), 0.0
    for combo in itertools.product(*doms):
        full = dict(x)
        full.update({n: s.value_keys[col] for n, col in zip(names, combo)})
        p = float(np.exp(model._jll(s.encode(full))[c]))
        e = np.zeros(len(u))
        e[[where[v] for v in list(enc.cols) + list(combo)]] = 1.0
        m, J, Z = m + p * e, J + p * np.outer(e, e), Z + p
    return u, m / Z, J / Z


def named(model, arr):
    """``{(f, v, g, w, ...): count}`` of a count array of one class (value axes only), zeros left out."""
    s = model._stats
    name = {col: (s.features[s.value_feature[col]], s.value_keys[col])
            for col in range(1, len(s.value_keys)) if s.value_feature[col] >= 0}
    out = {}
    for idx in zip(*np.nonzero(np.abs(arr) > 1e-13)):
        out[tuple(item for col in idx for item in name[int(col)])] = float(arr[idx])
    return out


def assert_counts_equal(got: dict, want: dict, what: str):
    want = {k: v for k, v in want.items() if abs(v) > 1e-13}
    assert set(got) == set(want), (what, sorted(set(got) ^ set(want), key=repr)[:5])
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-12), (what, k)


def row_joint(kind, alpha=1.0, parents=None):
    """The joint under which EM weighs the completions for the counts led by feature f, from raw counts."""
    if kind == "nb":
        return lambda rc, z, c, f: ref.naive_bayes_joint(rc, z, c, alpha)
    if kind == "one":  # the rows of f: the SPODE whose super-parent is f
        return lambda rc, z, c, f: ref.spode_joint(rc, z, c, f, alpha)
    return lambda rc, z, c, f: ref.kdb_joint(rc, z, c, parents, alpha)


EM_MODELS = [
    ("nb", lambda: NaiveBayes(), "nb"),
    ("aode", lambda: AODE(), "one"),
    ("aode-m", lambda: AODE(search=SuperParents(m=60)), "one"),  # the E-step does not depend on the frequency limit
    ("spode", lambda: SPODE(search=SuperParent(parent="f1")), "one"),
    ("spode-unchosen", lambda: SPODE(search=SuperParent(rebuild_every=0)), "one"),
    ("tan", lambda: TAN(search=Tree(rebuild_every=100)), "one"),  # nor on the tree
    ("tan-unbuilt", lambda: TAN(search=Tree(rebuild_every=0)), "one"),
    ("kdb-unbuilt", lambda: KDB(k=2, search=Parents(0)), "nb"),
    ("kdb1", lambda: KDB(k=1, search=Parents(0)), "kdb"),
    ("kdb2", lambda: KDB(k=2, search=Parents(0)), "kdb"),
]


@pytest.mark.parametrize("make,kind", [(m, k) for _, m, k in EM_MODELS], ids=[n for n, _, _ in EM_MODELS])
def test_em_adds_the_expected_counts_of_brute_force_enumeration_under_the_observed_counts(make, kind):
    """Every count an incomplete event adds, against the posterior computed by enumeration from the raw
    events' observed values: the E-step reads the observed-only counts, never the imputed ones."""
    events = random_events(300, n_feats=5, n_vals=3, missing=0.3, seed=31)
    model = learn(make(), events)
    if kind == "kdb":
        model.rebuild()
    s = model._stats
    assert not np.allclose(s.value_count, s.obs_value_count)  # EM's counts and the observed ones differ
    parents = model.structure if isinstance(model, KDB) else None
    order = 1 + s.pairs + (s.tuples > 0)
    checked = 0
    for x, y in random_events(25, n_feats=5, n_vals=3, missing=0.45, seed=32):
        c = s.class_index[y]
        joint = row_joint(kind, parents=parents)
        want = [ref.expected_counts(events, x, y, FEATURES, joint, order=k) for k in range(1, order + 1)]
        before = {k: v.copy() for k, v in s.state()[0].items()}
        model.learn_one(x, y)
        after = s.state()[0]
        keys = ["value_count", "pair_count", "tuple_count"][:order]
        for k, key in enumerate(keys):
            assert_counts_equal(named(model, (after[key] - before[key])[c]), want[k], key)
            # the observed-only counts get the observed values, each once
            observed = [f for f in FEATURES if x.get(f) is not None]
            want_obs = {tuple(i for g in fs for i in (g, x[g])): 1.0 for fs in itertools.product(observed, repeat=k + 1)}
            assert_counts_equal(named(model, (after["obs_" + key] - before["obs_" + key])[c]), want_obs, "obs_" + key)
        events.append((x, y))
        checked += len(x) < len(FEATURES)
    assert checked > 15


IMPUTE_MODELS = [
    ("nb", lambda: NaiveBayes()),
    ("aode", lambda: AODE()),
    ("aode-m", lambda: AODE(search=SuperParents(m=60))),  # some values below the frequency limit: the naive Bayes component appears
    ("spode", lambda: SPODE(search=SuperParent(parent="f1"))),
    ("tan", lambda: TAN(search=Tree(rebuild_every=100))),
    ("tan-unbuilt", lambda: TAN(search=Tree(rebuild_every=0))),
    ("kdb", lambda: KDB(k=2, search=Parents(100))),
]


@pytest.mark.parametrize("make", [m for _, m in IMPUTE_MODELS], ids=[n for n, _ in IMPUTE_MODELS])
def test_the_posterior_imputation_reports_equals_enumeration_under_the_model(make):
    model = learn(make(), random_events(300, n_feats=5, n_vals=3, missing=0.1, seed=31))
    s = model._stats
    checked = 0
    for x, y in random_events(40, n_feats=5, n_vals=3, missing=0.45, seed=32):
        enc = s.encode(x)
        miss = s.missing_of(enc)
        if not len(miss):
            continue
        u, mb, _ = enumerate_posterior(model, x, y)
        got = np.concatenate([q for _, _, q in model._missing_posterior(enc, s.class_index[y], miss)])
        np.testing.assert_allclose(got, mb[len(enc.cols):], rtol=0, atol=1e-12)
        checked += 1
    assert checked > 20


def test_the_aode_naive_bayes_component_is_exercised():
    model = learn(AODE(search=SuperParents(m=60)), random_events(300, n_feats=5, n_vals=3, missing=0.1, seed=31))
    count = model._stats.value_count[: model._stats.n_classes].sum(0)
    assert (count[1:len(model._stats.value_keys)] < 60).any() and (count[1:len(model._stats.value_keys)] >= 60).any()


@pytest.mark.parametrize("cls", [NaiveBayes, AODE, SPODE, TAN, KDB])
def test_an_incomplete_event_adds_exactly_one_event(cls):
    search = {SPODE: SuperParent(rebuild_every=50), TAN: Tree(rebuild_every=50), KDB: Parents(rebuild_every=50)}
    model = learn(cls(**({"search": search[cls]} if cls in search else {})), random_events(120, n_feats=5, seed=33))
    s = model._stats
    before = {k: v.copy() for k, v in s.state()[0].items()}
    model.learn_one({"f0": "v1", "f3": "v2"}, "c1")  # f1, f2, f4 missing
    after = s.state()[0]
    assert after["class_count"].sum() - before["class_count"].sum() == pytest.approx(1.0)
    added = after["value_count"] - before["value_count"]
    for f in range(len(s.features)):
        cols = s.columns_of(f)
        assert added[:, cols].sum() == pytest.approx(1.0)  # each attribute: one value, in expectation
        assert (added[:, cols] >= 0).all()
    assert (after["feat_count"] - before["feat_count"]).sum() == pytest.approx(len(s.features))
    if s.pairs:
        pairs = after["pair_count"] - before["pair_count"]
        for f, g in itertools.product(range(len(s.features)), repeat=2):
            block = pairs[:, s.columns_of(f)][:, :, s.columns_of(g)]
            assert block.sum() == pytest.approx(1.0)
        # pair_feat stays the block sums of pair_count
        pf = after["pair_feat"]
        for g in range(len(s.features)):
            np.testing.assert_allclose(pf[:, :, g], after["pair_count"][:, :, s.columns_of(g)].sum(2), atol=1e-9)
    # the observed-only counts (started, as a copy of the counts, by this first incomplete event):
    # the two observed values, nothing for the missing ones
    assert "obs_value_count" not in before
    obs = after["obs_value_count"] - before["value_count"]
    assert obs.sum() == pytest.approx(2.0) and set(np.flatnonzero(obs.sum(0))) == {
        s.values[s.feature_index["f0"]]["v1"], s.values[s.feature_index["f3"]]["v2"]}


@pytest.mark.parametrize("cls", [NaiveBayes, AODE, SPODE, TAN, KDB])
def test_without_missing_values_em_changes_nothing(cls):
    events = random_events(300, n_feats=5, seed=34)
    a, b = learn(cls(missing=EM()), events), learn(cls(missing=Ignore()), events)
    em, ignore = a._stats.state()[0], b._stats.state()[0]
    assert em.keys() == ignore.keys()  # not even a second copy of the counts: it starts with the first expected counts
    for k, v in ignore.items():
        np.testing.assert_array_equal(em[k], v, err_msg=k)
    for x, _ in random_events(20, n_feats=5, missing=0.4, seed=35):
        assert a.predict_proba_one(x) == b.predict_proba_one(x)


def test_tan_rebuilds_from_the_fractional_pair_counts():
    model = learn(TAN(search=Tree(rebuild_every=0)), random_events(400, n_feats=4, missing=0.3, seed=35))
    s = model._stats
    assert not np.allclose(s.pair_count, np.round(s.pair_count))  # EM left fractions
    # ... and each pair's two blocks differ: x_i's rows are filled under SPODE i, x_j's under SPODE j
    assert not np.allclose(s.pair_count, s.pair_count.transpose(0, 2, 1))
    # CMI by a plain loop over the (fractional) counts: each block's, then the two pooled by their weight
    C, F = s.n_classes, len(s.features)
    cols = [s.columns_of(f) for f in range(F)]
    block, mass = np.zeros((F, F)), np.zeros((F, F))
    for i, j in itertools.permutations(range(F), 2):
        n = sum(s.pair_count[c, v, w] for c in range(C) for v in cols[i] for w in cols[j])
        for c in range(C):
            nc = sum(s.pair_count[c, v, w] for v in cols[i] for w in cols[j])
            for v in cols[i]:
                for w in cols[j]:
                    nvw = s.pair_count[c, v, w]
                    if nvw > 0:
                        nv = sum(s.pair_count[c, v, w2] for w2 in cols[j])
                        nw = sum(s.pair_count[c, v2, w] for v2 in cols[i])
                        block[i, j] += nvw / n * np.log(nvw * nc / (nv * nw))
        mass[i, j] = n
    want = np.where(mass > 0, (block * mass + (block * mass).T) / np.where(mass > 0, mass + mass.T, 1.0), 0.0)
    np.testing.assert_allclose(conditional_mutual_information(s), want, atol=1e-12)
    model.rebuild()
    assert len(model.tree) == F - 1


@pytest.mark.parametrize("cls", [NaiveBayes, AODE, TAN])
def test_unlabeled_events_spread_over_the_classes_by_posterior(cls):
    events = random_events(150, n_feats=4, seed=36)
    model = learn(cls(missing=EM(unlabeled=True, unlabeled_weight=0.5)), events)
    x = {"f0": "v0", "f1": "v2", "f2": "v1", "f3": "v0"}
    post = model.predict_proba_one(x)
    before = model._stats.class_count[: model._stats.n_classes].copy()
    model.learn_one(x, None)
    added = model._stats.class_count[: model._stats.n_classes] - before
    np.testing.assert_allclose(added, 0.5 * np.array([post[c] for c in model.classes]), atol=1e-12)
    frozen = learn(cls(), events)
    with pytest.raises(Exception, match="label"):
        frozen.learn_one(x, None)  # off by default: an unlabeled event is refused


def naive_bayes_stream(n, seed, C=3, F=8, V=4):
    """Events drawn from a naive Bayes network, so that the model's assumption holds."""
    theta = np.random.default_rng(0).dirichlet(np.ones(V) * 0.5, size=(C, F))
    r = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(r.integers(C))
        out.append(({f"f{f}": f"v{r.choice(V, p=theta[y, f])}" for f in range(F)}, f"c{y}"))
    return out


def test_semi_supervised_em_helps_when_labels_are_not_too_rare():
    """Nigam et al.'s setting: 1 event in 20 labeled, the rest learned through EM over the class."""
    stream, test = naive_bayes_stream(5000, seed=1), naive_bayes_stream(2000, seed=2)
    sup, semi = NaiveBayes(), NaiveBayes(missing=EM(unlabeled=True, unlabeled_weight=0.5))
    for i, (x, y) in enumerate(stream):
        label = y if i % 20 == 0 else None
        if label is not None:
            sup.learn_one(x, label)
        semi.learn_one(x, label)

    def accuracy(m):
        return np.mean([m.predict_one(x) == y for x, y in test])

    assert accuracy(semi) > accuracy(sup)


def test_impute_proba_is_the_class_mixture_of_the_estep():
    events = random_events(200, n_feats=4, seed=39)
    model = learn(NaiveBayes(), events)
    x = {"f0": "v1", "f2": "v0"}
    post = model.predict_proba_one(x)
    got = model.impute_proba_one(x)
    assert set(got) == {"f1", "f3"}
    for f in ("f1", "f3"):
        for v, p in got[f].items():
            s = model._stats
            fi = s.feature_index[f]
            col = s.values[fi][v]
            want = sum(
                post[y] * (s.value_count[ci, col] + 1) / (s.feat_count[ci, fi] + s.n_values[fi])
                for ci, y in enumerate(s.classes)
            )
            assert p == pytest.approx(want, abs=1e-12)
        assert sum(got[f].values()) == pytest.approx(1.0)
    filled = model.impute_one(x)
    assert filled["f1"] == max(got["f1"], key=got["f1"].get) and filled["f0"] == "v1"


def test_tan_imputation_equals_brute_force():
    events = random_events(300, n_feats=4, n_vals=3, seed=40)
    model = learn(TAN(search=Tree(rebuild_every=100)), events)
    s = model._stats
    x = {"f0": "v2", "f3": "v1"}
    got = model.impute_proba_one(x)
    post = model.predict_proba_one(x)
    for f in ("f1", "f2"):
        fi = s.feature_index[f]
        for v, p in got[f].items():
            want = 0.0
            for y, py in post.items():
                u, m, _ = enumerate_posterior(model, x, y)
                want += py * m[list(u).index(s.values[fi][v])]
            assert p == pytest.approx(want, abs=1e-12)


def test_numeric_features_impute_their_posterior_mean_or_bin():
    rng = np.random.default_rng(41)
    events = [({"a": float(rng.normal(3 * y, 1)), "k": f"k{y}"}, y) for y in rng.integers(0, 2, 400).tolist()]
    nb = learn(NaiveBayes(), events)
    got = nb.impute_proba_one({"k": "k1"})["a"]
    assert got["mean"] == pytest.approx(3.0, abs=0.3) and got["std"] > 0
    assert nb.impute_one({"k": "k0"})["a"] == pytest.approx(0.0, abs=0.3)
    tan = learn(TAN(numeric=MDL(warmup=50), search=Tree(rebuild_every=100)), events)
    bins = tan.impute_proba_one({"k": "k1"})["a"]
    assert all(k.startswith("[") for k in bins) and sum(bins.values()) == pytest.approx(1.0)
    assert tan.impute_one({"k": "k1"})["a"] > tan.impute_one({"k": "k0"})["a"]


@pytest.mark.parametrize("model", ["nb", "aode", "tan"])
def test_the_daemon_learns_incomplete_events_by_em_and_emits_imputations(model, tmp_path):
    """The CLI over events with missing fields equals an in-process EM model event by event."""
    import json
    import subprocess
    import sys

    import stream_nb

    events = random_events(300, n_feats=4, n_vals=3, missing=0.3, seed=42)
    lines = []
    for i, (x, y) in enumerate(events):
        e = dict(x, id=i)
        if i % 7 == 3:
            e["f1"] = None  # null is missing too
        if i % 10 != 9:
            e["label"] = y  # every tenth event unlabeled: predicted only
        lines.append(json.dumps(e))
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    params = ["--rebuild-every", "50"] if model == "tan" else []
    out = subprocess.run(
        [sys.executable, "-m", "stream_nb.cli", "run", "--model", model, *params, "--emit-imputed",
         "--input", str(path), "--dead-letter", str(tmp_path / "dlq.jsonl")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()
    assert len(out) == len(events)
    ref = {"nb": stream_nb.NaiveBayes, "aode": stream_nb.AODE, "tan": stream_nb.TAN}[model](
        **({"search": Tree(rebuild_every=50)} if model == "tan" else {})
    )
    for line, raw in zip(out, lines):
        rec, e = json.loads(line), json.loads(raw)
        label = e.pop("label", None)
        e.pop("id")
        want_imputed = {k: v for k, v in ref.impute_one(e).items() if k not in e or e[k] is None}
        assert rec["imputed"] == want_imputed
        assert rec["proba"] == pytest.approx(ref.predict_proba_one(e), abs=1e-12)
        if label is not None:
            ref.learn_one(e, label)
        assert rec["learned"] is (label is not None)
    assert any(rec for rec in (json.loads(line)["imputed"] for line in out))
