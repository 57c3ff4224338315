"""A restored model is a model: it learns, predicts and merges exactly as one that never left memory.

Every model and configuration is trained on a prefix, then copied two ways,
``stream_nb.save`` -> ``stream_nb.load`` and ``from_state(model.state())``;
each copy then goes on (``learn_one``, ``learn_many``, ``prequential_many``,
a merge either way) side by side with an in-memory twin trained on the same
prefix, and must give the twin's predictions, probabilities and state. A copy
must also own its arrays: none read-only where the twin's is writeable, none
shared with the file's bytes, the state it was built from or the model it was
copied from. Finally the daemon: every ``--model`` of ``stream-nb run``,
stopped and restarted from its own snapshot on more labeled events, keeps
learning to the model of one uninterrupted run.
"""

from __future__ import annotations

import copy
import json
import os
import random

import numpy as np
import pandas as pd
import pytest

import stream_nb
from stream_nb import AODE, EM, KDB, MDL, SPODE, TAN, Edges, EqualFrequency, Ignore, NaiveBayes, Parents, SuperParent, SuperParents, Tree
from stream_nb.cli import main
from stream_nb.settings import MODELS

# ----------------------------------------------------------------------------- data

CATEGORIES = {"a": ["x", "y", "z"], "b": ["p", "q"], "c": ["u", "v", "w"], "d": ["m", "n"]}


def make_events(n: int, seed: int, *, numeric: bool = False, missing: float = 0.0,
                unlabeled: float = 0.0) -> list[tuple[dict, object]]:
    """``(x, y)`` pairs: categorical features (and ``w``, a float, with ``numeric``) the class depends on.

    ``missing``: the chance that each feature is absent or None (alternately);
    ``unlabeled``: the chance that ``y`` is None.
    """
    rng = random.Random(seed)
    out = []
    for i in range(n):
        x = {f: rng.choice(vals) for f, vals in CATEGORIES.items()}
        score = (x["a"] == "x") + (x["b"] == "p") + (x["c"] != "w") + (rng.random() < 0.25)
        y = ["no", "maybe", "yes", "yes", "yes"][score]
        if numeric:
            x["w"] = round(rng.gauss(3.0 + score, 1.0), 3)
        for f in list(x):
            if rng.random() < missing:
                if i % 2:
                    del x[f]
                else:
                    x[f] = None
        if rng.random() < unlabeled:
            y = None
        out.append((x, y))
    return out


def frame(events: list[tuple[dict, object]]) -> tuple[pd.DataFrame, pd.Series]:
    xs = [x for x, _ in events]
    columns = sorted({k for x in xs for k in x})
    X = pd.DataFrame([{k: x.get(k) for k in columns} for x in xs], columns=columns)
    for k in columns:  # a categorical column stays object (None: missing); a numeric one float (NaN: missing)
        if k != "w":
            X[k] = X[k].astype(object)
    return X, pd.Series([y for _, y in events], dtype=object)


# ----------------------------------------------------------------------------- configurations

LOSS = {"yes": {"no": 4.0, "maybe": 2.0}, "no": {"yes": 3.0}}
EDGES = {"w": [2.5, 4.0, 5.5]}

#: id -> (class, parameters, data options). Small streams: a structure is (re)built before the copy
#: and again while the copy learns; numeric bins are placed (warmup) before the copy.
CONFIGS = {
    "nb": (NaiveBayes, {}, {}),
    "nb-loss": (NaiveBayes, {"loss": LOSS}, {}),
    "nb-em-missing": (NaiveBayes, {"missing": EM()}, {"missing": 0.2}),
    "nb-ignore-missing": (NaiveBayes, {"missing": Ignore()}, {"missing": 0.2}),
    "nb-gaussian": (NaiveBayes, {}, {"numeric": True}),
    "nb-unlabeled": (NaiveBayes, {"missing": EM(unlabeled=True)}, {"unlabeled": 0.2, "missing": 0.1}),
    "aode-bins": (AODE, {"numeric": MDL(bins=3, warmup=20)}, {"numeric": True}),
    "aode-bin-edges": (AODE, {"numeric": Edges(EDGES, rest=MDL()), "loss": LOSS}, {"numeric": True}),
    "aode-em-missing": (AODE, {"missing": EM(), "search": SuperParents(m=2)}, {"missing": 0.2}),
    "tan-bins": (TAN, {"numeric": MDL(bins=3, warmup=20), "search": Tree(rebuild_every=25)}, {"numeric": True}),
    "tan-bin-edges": (TAN, {"numeric": Edges(EDGES, rest=MDL()), "search": Tree(rebuild_every=25)}, {"numeric": True}),
    "tan-em-missing": (TAN, {"missing": EM(), "search": Tree(rebuild_every=25)}, {"missing": 0.2}),
    "tan-unlabeled": (TAN, {"missing": EM(unlabeled=True), "search": Tree(rebuild_every=25)}, {"unlabeled": 0.2}),
    "spode-chosen": (SPODE, {"search": SuperParent(rebuild_every=25)}, {}),
    "spode-chosen-em-bins": (SPODE, {"numeric": MDL(bins=3, warmup=20), "search": SuperParent(rebuild_every=25)}, {"numeric": True, "missing": 0.15}),
    "spode-fixed": (SPODE, {"search": SuperParent(parent="a", rebuild_every=25), "loss": LOSS}, {}),
    "spode-fixed-em": (SPODE, {"search": SuperParent(parent="c", rebuild_every=25)}, {"missing": 0.2}),
    "kdb1": (KDB, {"k": 1, "search": Parents(25)}, {}),
    "kdb2": (KDB, {"k": 2, "numeric": EqualFrequency(bins=3, warmup=20), "search": Parents(rebuild_every=25)}, {"numeric": True}),
    "kdb3": (KDB, {"k": 3, "search": Parents(25)}, {}),
    "kdb2-em-missing": (KDB, {"k": 2, "missing": EM(), "search": Parents(rebuild_every=25)}, {"missing": 0.15}),
    "kdb3-em-missing": (KDB, {"k": 3, "missing": EM(), "search": Parents(rebuild_every=25)}, {"missing": 0.1}),
}

PREFIX, REST, PROBE = 60, 40, 15


def config(name: str):
    """``(class, parameters, prefix, rest, probes, other)``.

    ``other()`` trains a model to merge with: on the prefix then other events, so that
    its learned bin edges are the copy's (models binned differently refuse to merge).
    """
    cls, params, data = CONFIGS[name]
    prefix = make_events(PREFIX, 1, **data)
    return (cls, params, prefix, make_events(REST, 2, **data), make_events(PROBE, 3, **data),
            lambda: train(cls, params, prefix + make_events(30, 4, **data)))


def train(cls, params: dict, events) -> stream_nb.NaiveBayes:
    model = cls(**params)
    for x, y in events:
        model.learn_one(x, y)
    return model


# ----------------------------------------------------------------------------- comparing models


def assert_same_state(got, expected, what: str = "model") -> None:
    """Two models hold the same state: the same arrays (names, dtypes, shapes, values) and metadata."""
    assert type(got) is type(expected), what
    (ga, gm), (ea, em) = got.state(), expected.state()
    assert sorted(ga) == sorted(ea), f"{what}: array names differ"
    for k in ea:
        assert ga[k].dtype == ea[k].dtype and ga[k].shape == ea[k].shape, f"{what}: array {k}"
        np.testing.assert_array_equal(ga[k], ea[k], err_msg=f"{what}: array {k}")
    assert gm == em, f"{what}: metadata differ"


def mutables_of(obj, path: str = "", seen: set | None = None):
    """``(path, object)`` of every mutable object reachable from ``obj``: numpy arrays, dicts, lists,
    sets and stream_nb objects, through attributes (of stream_nb objects), items and elements."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        yield path, obj
    elif isinstance(obj, dict):
        yield path, obj
        for k, v in obj.items():
            yield from mutables_of(v, f"{path}[{k!r}]", seen)
    elif isinstance(obj, (list, tuple, set)):
        if not isinstance(obj, tuple):
            yield path, obj
        for i, v in enumerate(obj):
            yield from mutables_of(v, f"{path}[{i}]", seen)
    elif type(obj).__module__.startswith("stream_nb") and hasattr(obj, "__dict__"):
        yield path, obj
        for k, v in vars(obj).items():
            yield from mutables_of(v, f"{path}.{k}", seen)


def assert_shares_nothing(mine, *others, what: str = "the copy") -> None:
    """No mutable object reachable from ``mine`` is one reachable from ``others``, and no array
    overlaps one of theirs in memory (a view of a loaded file's bytes, of a state's arrays)."""
    theirs = {}
    for i, other in enumerate(others):
        for path, obj in mutables_of(other):
            theirs.setdefault(id(obj), (i, path))
    their_arrays = [obj for other in others for _, obj in mutables_of(other) if isinstance(obj, np.ndarray)]
    found = 0
    for path, obj in mutables_of(mine):
        found += 1
        if isinstance(obj, np.ndarray):
            if obj.size == 0:
                continue  # holds nothing to share (a module's empty constant may be)
            for a in their_arrays:
                assert not np.may_share_memory(obj, a), f"{what}{path} shares memory with an array it came from"
        assert id(obj) not in theirs, f"{what}{path} is the very object {theirs[id(obj)][1]} of argument {theirs[id(obj)][0]}"
    assert found, "nothing found to compare"


def assert_writeable(restored, twin) -> None:
    """Every array of ``restored`` is writeable where the twin's is: the copy can learn in place."""
    mine = {p: a for p, a in mutables_of(restored) if isinstance(a, np.ndarray)}
    theirs = {p: a for p, a in mutables_of(twin) if isinstance(a, np.ndarray)}
    assert mine.keys() & theirs.keys(), "no array to compare"
    for path in mine.keys() & theirs.keys():  # (caches may differ)
        assert mine[path].flags.writeable or not theirs[path].flags.writeable, f"{path} is read-only after restoring"


# ----------------------------------------------------------------------------- what the copies go on to do


def probe(model, events) -> list:
    return [model.predict_and_proba_one(x) for x, _ in events]


def do_learn_one(model, rest, other):
    for x, y in rest:
        model.learn_one(x, y)
    return model, []


def do_learn_many(model, rest, other):
    if not model.learn_unlabeled:
        rest = [(x, y) for x, y in rest if y is not None]
    model.learn_many(*frame(rest))
    return model, []


def do_prequential_many(model, rest, other):
    return model, model.prequential_many([x for x, _ in rest], [y for _, y in rest])


def do_merge_into_copy(model, rest, other):
    model.merge(other())
    return do_learn_one(model, rest, other)


def do_merge_copy_into_other(model, rest, other):
    receiver = other()
    receiver.merge(model)
    out = model.prequential_many([x for x, _ in rest], [y for _, y in rest])  # the copy keeps learning too
    do_learn_one(receiver, rest, other)
    return receiver, out + probe(model, rest)


OPERATIONS = {
    "learn_one": do_learn_one,
    "learn_many": do_learn_many,
    "prequential_many": do_prequential_many,
    "merge_into_copy": do_merge_into_copy,
    "merge_copy_into_other": do_merge_copy_into_other,
}


def copy_by_file(model, tmp_path):
    path = tmp_path / "model.snb"
    stream_nb.save(model, path)
    return stream_nb.load(path), stream_nb.snapshots.read(path)


def copy_by_state(model, tmp_path):
    state = model.state()
    return type(model).from_state(*state), state


ROUTES = {"file": copy_by_file, "state": copy_by_state}


def results_equal(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        if isinstance(e, Exception):
            assert type(g) is type(e) and str(g) == str(e), i
        else:
            assert g == e, i


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("name", CONFIGS)
def test_a_restored_model_goes_on_as_its_twin(name, operation, route, tmp_path):
    cls, params, prefix, rest, probes, other = config(name)
    original = train(cls, params, prefix)
    twin = train(cls, params, prefix)
    if "em" in name:
        assert "obs_value_count" in original.state()[0]  # the observed-only counts are part of the copy
    if cls in (TAN, KDB) or (cls is SPODE and params["search"].parent is None):
        assert original.n_rebuilds  # a structure (super-parent) was built before the copy
    before = original.state()

    restored, source = ROUTES[route](original, tmp_path)
    assert_same_state(restored, twin, "the copy as restored")
    assert_writeable(restored, twin)
    assert_shares_nothing(restored, original, source)

    got_model, got = OPERATIONS[operation](restored, rest, other)
    want_model, want = OPERATIONS[operation](twin, rest, other)
    results_equal(got, want)
    assert probe(got_model, probes) == probe(want_model, probes)
    assert_same_state(got_model, want_model, f"after {operation}")
    assert_same_state(restored, twin, f"the copy after {operation}")
    # the model it was copied from did not learn along
    (oa, om), (ba, bm) = original.state(), before
    assert om == bm and sorted(oa) == sorted(ba)
    for k in ba:
        np.testing.assert_array_equal(oa[k], ba[k], err_msg=f"the original's {k} changed")


@pytest.mark.parametrize("name", CONFIGS)
def test_state_and_models_from_it_share_nothing(name):
    """``state()`` hands out copies, and ``from_state`` twice on one state gives two independent models:
    learning on one changes neither the other, nor the state, nor the model the state came from."""
    cls, params, prefix, rest, probes, other = config(name)
    original = train(cls, params, prefix)
    state = original.state()
    assert_shares_nothing(state, original, what="the state")
    kept = copy.deepcopy(state)
    first, second = cls.from_state(*state), cls.from_state(*state)
    assert_shares_nothing(first, second, state, original)
    first.prequential_many([x for x, _ in rest], [y for _, y in rest])
    for k, v in kept[0].items():
        np.testing.assert_array_equal(state[0][k], v, err_msg=f"the state's {k} changed")
    assert state[1] == kept[1]
    assert_same_state(second, original, "the second copy")
    assert_same_state(original, cls.from_state(*kept), "the original")


def test_spode_learns_after_load_as_in_the_report(tmp_path):
    """The reported case: SPODE(parent=None) saved after two events, loaded, then one more event."""
    m = SPODE()
    m.learn_one({"a": "x"}, "p")
    m.learn_one({"a": "y"}, "q")
    stream_nb.save(m, tmp_path / "m.snb")
    again = stream_nb.load(tmp_path / "m.snb")
    again.learn_one({"a": "y"}, "q")
    m.learn_one({"a": "y"}, "q")
    assert again.scores == m.scores and again.n_learned == 3
    assert_same_state(again, m)


# ----------------------------------------------------------------------------- the daemon

#: Flags per ``--model``: structures rebuilt and numeric bins placed (``w``) on a short stream; the
#: warm-up of the bins ends after the first restart, so the restored buffer of values is used.
DAEMON_FLAGS = {
    "aode": ["--bins", "3", "--warmup", "80"],
    "tan": ["--rebuild-every", "30", "--bins", "3", "--warmup", "80"],
    "spode": ["--rebuild-every", "30", "--bins", "3", "--warmup", "80"],
    "kdb": ["--rebuild-every", "30", "--bins", "3", "--warmup", "80"],
}
DAEMON_CASES = {name: (name, DAEMON_FLAGS.get(name, [])) for name in MODELS}
DAEMON_CASES["spode-parent"] = ("spode", DAEMON_FLAGS["spode"] + ["--parent", "a"])
#: The stream is read in three parts: the daemon stops at the end of each and restarts on the next.
PARTS = [(0, 60), (60, 110), (110, 150)]


def daemon_events() -> list[dict]:
    """JSON events with an id: some values null, some unlabeled, a float feature ``w``."""
    out = []
    for i, (x, y) in enumerate(make_events(PARTS[-1][1], 11, numeric=True, missing=0.08, unlabeled=0.1)):
        event = {"id": f"e{i}", **x}
        if y is not None:
            event["label"] = y
        out.append(event)
    return out


def run_daemon(directory, model: str, flags: list[str], tag: str) -> tuple[int, list[dict], bytes]:
    """``stream-nb run`` in-process over ``directory/in.jsonl``, snapshots in ``directory/snaps``;
    returns the exit status, this run's outputs and its dead letters."""
    out, dead = directory / f"out-{tag}.jsonl", directory / f"dead-{tag}.jsonl"
    status = main([
        "run", "--model", model, *flags,
        "--input", str(directory / "in.jsonl"), "--output", str(out), "--dead-letter", str(dead),
        "--snapshot-dir", str(directory / "snaps"), "--metrics-interval", "0", "--log-level", "ERROR",
    ])
    outputs = [json.loads(line) for line in out.read_bytes().splitlines()] if out.exists() else []
    return status, outputs, dead.read_bytes() if dead.exists() else b""


def newest_snapshot(directory):
    return stream_nb.snapshots.read(max((directory / "snaps").glob("snapshot-*.snb")))


def assert_close_state(got, expected, what: str) -> None:
    """:func:`assert_same_state`, float arrays up to rounding: a restart splits the daemon's batches
    elsewhere (a run of complete events is added in one step; EM's expected counts are fractional)."""
    (ga, gm), (ea, em) = got.state(), expected.state()
    assert type(got) is type(expected) and gm == em, f"{what}: metadata differ"
    assert sorted(ga) == sorted(ea), f"{what}: array names differ"
    for k in ea:
        assert ga[k].dtype == ea[k].dtype and ga[k].shape == ea[k].shape, f"{what}: array {k}"
        np.testing.assert_allclose(ga[k], ea[k], rtol=1e-9, atol=1e-12, err_msg=f"{what}: array {k}")


@pytest.mark.parametrize("case", DAEMON_CASES)
def test_every_daemon_model_restarts_from_its_snapshot_and_keeps_learning(case, tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("STREAM_NB_")]:
        monkeypatch.delenv(key)
    model, flags = DAEMON_CASES[case]
    events = daemon_events()
    lines = [json.dumps(e).encode() + b"\n" for e in events]
    labeled = np.cumsum([e.get("label") is not None for e in events])

    restarted = tmp_path / "restarted"
    restarted.mkdir()
    outputs, n_learned = [], []
    for part, (lo, hi) in enumerate(PARTS):
        with open(restarted / "in.jsonl", "ab") as f:  # more events arrive while the daemon is down
            f.write(b"".join(lines[lo:hi]))
        status, out, dead = run_daemon(restarted, model, flags, f"part{part}")
        assert status == 0, f"part {part}: exit {status}"
        assert dead == b"", f"part {part}: dead letters {dead[:500]!r}"
        assert [o["id"] for o in out] == [e["id"] for e in events[lo:hi]], f"part {part}: one output per event"
        # it went on from the snapshot: the count of learned events continues where the last run left it
        assert [o["n_learned"] for o in out] == labeled[lo:hi].tolist(), f"part {part}"
        snap = newest_snapshot(restarted)
        n_learned.append(snap.model().n_learned)
        outputs += out
    assert n_learned == [labeled[hi - 1] for _, hi in PARTS]  # and the snapshots grow with it

    once = tmp_path / "once"
    once.mkdir()
    (once / "in.jsonl").write_bytes(b"".join(lines))
    status, reference, dead = run_daemon(once, model, flags, "all")
    assert status == 0 and dead == b""
    assert len(outputs) == len(reference) == len(events)
    for got, want in zip(outputs, reference):
        assert (got["id"], got["prediction"], got["learned"], got["n_learned"]) == (
            want["id"], want["prediction"], want["learned"], want["n_learned"])
        assert got["proba"].keys() == want["proba"].keys()
        for label, p in want["proba"].items():
            assert got["proba"][label] == pytest.approx(p, rel=1e-9, abs=1e-12), got["id"]
    assert_close_state(newest_snapshot(restarted).model(), newest_snapshot(once).model(), "the restarted daemon's model")
