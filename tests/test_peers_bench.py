"""bench/peers/: the ARFF files the Java peers read declare the streams as MOA does, and hold our events;
CapyMOA's worker builds from the Python values the instances the ARFF file holds; the timing protocol.

Pure Python (no JVM, no CapyMOA): the files are read back with scipy's independent ARFF reader.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest
from river.datasets import synth
from scipy.io import arff

ROOT = Path(__file__).resolve().parent.parent


def _load(name="bench_peers", path=ROOT / "bench" / "peers" / "__init__.py"):
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=[])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


peers = _load()
protocol = _load("bench_peers_protocol", ROOT / "bench" / "peers" / "protocol.py")
capymoa_host = _load("bench_peers_capymoa_host", ROOT / "bench" / "peers" / "capymoa_host.py")
capymoa_peer = _load("bench_peers_capymoa_peer", ROOT / "bench" / "peers" / "capymoa_peer.py")

STREAMS = {
    "LED": lambda: synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True),
    "Agrawal": lambda: synth.Agrawal(seed=1, classification_function=2, perturbation=0.05),
    "RandomTree": lambda: synth.RandomTree(
        seed_tree=1, seed_sample=1, n_classes=3, n_num_features=4, n_cat_features=4, n_categories_per_feature=3
    ),
}


def written(tmp_path, sname, n=300):
    events = list(STREAMS[sname]().take(n))
    attrs, target = peers.declare(events, peers.NOMINAL.get(sname))
    path = peers.write_arff(tmp_path / f"{sname}.arff", events, attrs, target, sname)
    data, meta = arff.loadarff(path)
    return events, attrs, target, data, meta


def kinds(meta):
    return {name: meta[name][0] for name in meta.names()}


def test_led_declares_24_binary_nominal_attributes_and_10_classes(tmp_path):
    events, attrs, target, data, meta = written(tmp_path, "LED")
    k = kinds(meta)
    assert meta.names() == [str(i) for i in range(24)] + ["class"]
    assert all(k[str(i)] == "nominal" for i in range(24))
    assert all(set(meta[str(i)][1]) == {"0", "1"} for i in range(24))
    assert k["class"] == "nominal" and set(meta["class"][1]) == {str(c) for c in range(10)}
    # classes in the order they first occur (the peers break ties towards the lower index)
    first_seen = list(dict.fromkeys(str(y) for _, y in events))
    assert list(meta["class"][1]) == first_seen
    assert [a.kind for a in attrs] == ["nominal"] * 24 and target.kind == "nominal"


def test_agrawal_declares_elevel_car_zipcode_nominal_and_the_rest_numeric_as_moa(tmp_path):
    events, attrs, _, data, meta = written(tmp_path, "Agrawal")
    k = kinds(meta)
    nominal = {"elevel", "car", "zipcode"}
    assert set(meta.names()) == {"salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears",
                                 "loan", "class"}
    assert {n for n, kind in k.items() if kind == "nominal"} == nominal | {"class"}
    # river yields age, hvalue and hyears as ints (and commission sometimes as int 0): numeric all the same
    assert any(isinstance(x["age"], int) for x, _ in events)
    assert {n for n, kind in k.items() if kind == "numeric"} == {
        "salary", "commission", "age", "hvalue", "hyears", "loan"}
    # our models get the same declaration
    types = peers.model_types(attrs)
    assert {n for n, t in types.items() if t == "categorical"} == nominal
    assert {n for n, t in types.items() if t == "numeric"} == set(types) - nominal


def test_random_tree_declares_its_4_numeric_and_4_nominal_attributes(tmp_path):
    _, _, _, _, meta = written(tmp_path, "RandomTree")
    k = kinds(meta)
    assert {n for n, kind in k.items() if kind == "numeric"} == {f"x_num_{i}" for i in range(4)}
    assert {n for n, kind in k.items() if kind == "nominal"} == {f"x_cat_{i}" for i in range(4)} | {"class"}


@pytest.mark.parametrize("sname", list(STREAMS))
def test_every_value_reads_back_exactly(tmp_path, sname):
    events, attrs, _, data, meta = written(tmp_path, sname)
    assert len(data) == len(events)
    for row, (x, y) in zip(data, events):
        for a in attrs:
            got = row[str(a.name)]
            if a.kind == "numeric":
                assert got == float(x[a.name])  # the same double, not a rounded one
            else:
                assert got.decode() == str(x[a.name])
        assert row["class"].decode() == str(y)


def test_missing_values_are_written_as_question_marks(tmp_path):
    events = [({"a": 1.5, "b": "x"}, 0), ({"a": None, "b": "y"}, 1), ({"a": math.nan}, 0), ({"a": 2.0, "b": "x"}, 1)]
    attrs, target = peers.declare(events)
    path = peers.write_arff(tmp_path / "m.arff", events, attrs, target)
    data, meta = arff.loadarff(path)
    assert kinds(meta) == {"a": "numeric", "b": "nominal", "class": "nominal"}
    assert math.isnan(data[1]["a"]) and math.isnan(data[2]["a"])
    assert path.read_text().splitlines()[-4:] == ["1.5,x,0", "?,y,1", "?,?,0", "2.0,x,1"]


def test_names_and_values_with_commas_and_spaces_survive(tmp_path):
    events = [({"two words": "a, b", "plain": "c d"}, "yes no"), ({"two words": "e", "plain": "f"}, "n")]
    attrs, target = peers.declare(events)
    data, meta = arff.loadarff(peers.write_arff(tmp_path / "q.arff", events, attrs, target))
    assert meta.names() == ["two words", "plain", "class"]
    assert data[0]["two words"].decode() == "a, b" and data[0]["plain"].decode() == "c d"
    assert data[0]["class"].decode() == "yes no" and data[1]["class"].decode() == "n"


def test_quotes_and_backslashes_are_escaped_as_weka_quotes_them(tmp_path):
    # Weka's Utils.quote: single quotes, a backslash before \ ' " % (scipy's reader does not unescape)
    events = [({"it's": 'say "hi"'}, "50%"), ({"it's": "a\\b"}, "?")]
    attrs, target = peers.declare(events)
    text = peers.write_arff(tmp_path / "e.arff", events, attrs, target).read_text()
    assert r"""@attribute 'it\'s' {'say \"hi\"','a\\b'}""" in text
    assert r"""@attribute class {'50\%','?'}""" in text  # a class named "?" must not read as missing
    assert text.splitlines()[-2:] == [r"""'say \"hi\"','50\%'""", r"""'a\\b','?'"""]


def test_declaration_errors_name_the_feature():
    with pytest.raises(ValueError, match="'nope'"):
        peers.declare([({"a": 1}, 0)], nominal=("nope",))
    with pytest.raises(ValueError, match="feature 'a': declared numeric but has the value 'x'"):
        peers.declare([({"a": 1.0}, 0), ({"a": "x"}, 1)], nominal=())
    with pytest.raises(TypeError, match="feature 'a': expected str, bool, int or float, got list"):
        peers.declare([({"a": [1]}, 0)])


def test_bins_follow_stream_nb_searchsorted_right():
    # stream_nb: bin = searchsorted(edges, x, side="right"); a value equal to an edge goes up
    events = [({"v": 0.5, "c": "p"}, 0), ({"v": 1.0, "c": "q"}, 1), ({"v": 2.5, "c": "p"}, 0), ({"v": 3.0}, 1)]
    attrs, _ = peers.declare(events)
    binned, battrs = peers.bin_events(events, attrs, {"v": [1.0, 3.0]})
    assert [x["v"] for x, _ in binned] == ["b0", "b1", "b1", "b2"]
    assert [x.get("c") for x, _ in binned] == ["p", "q", "p", None]
    assert {a.name: (a.kind, a.values) for a in battrs}["v"] == ("nominal", ("b0", "b1", "b2"))
    with pytest.raises(ValueError, match="no edges for the numeric features"):
        peers.bin_events(events, attrs, {})


def test_equal_frequency_edges_drop_duplicates_and_the_minimum():
    assert peers.equal_frequency_edges([1.0, 2.0, 3.0, 4.0], bins=2) == [2.5]
    # quartiles of 1,1,1,1,2,2,2,2 are 1, 1.5, 2: the edge at the minimum would leave bin 0 empty
    assert peers.equal_frequency_edges([1.0] * 4 + [2.0] * 4, bins=4) == [1.5, 2.0]
    assert peers.equal_frequency_edges([5.0] * 10, bins=5) == []


# --------------------------------------------------------------------------- CapyMOA's input


@pytest.mark.parametrize("sname", list(STREAMS))
def test_capymoa_python_values_build_the_instances_the_arff_file_holds(tmp_path, sname):
    # the worker's two per-event loops must see the same events: the one from Python values builds each
    # instance from the JSON lines; the other reads the ARFF file. scipy reads the ARFF file independently.
    events, attrs, target, data, meta = written(tmp_path, sname)
    path = capymoa_host.write_events(tmp_path / f"{sname}.jsonl", events, attrs, target)
    header, decoded = capymoa_peer.read_events(path)
    attributes, class_index = capymoa_peer.user_attributes(header)
    assert [name for name, _ in attributes] == meta.names()[:-1]
    for (x, y), row in zip(decoded, data):
        values = capymoa_peer.values_row(x, attributes)
        for j, name in enumerate(meta.names()[:-1]):
            kind, declared = meta[name]
            expected = row[name] if kind == "numeric" else declared.index(row[name].decode())
            assert values[j] == expected
        assert class_index[y] == meta["class"][1].index(row["class"].decode())


def test_capymoa_events_keep_missing_values_missing(tmp_path):
    events = [({"a": 1.5, "b": "x"}, 0), ({"a": None, "b": "y"}, 1), ({"a": math.nan}, 0)]
    attrs, target = peers.declare(events)
    header, decoded = capymoa_peer.read_events(capymoa_host.write_events(tmp_path / "m.jsonl", events, attrs, target))
    attributes, _ = capymoa_peer.user_attributes(header)
    rows = [capymoa_peer.values_row(x, attributes) for x, _ in decoded]
    assert rows[0].tolist() == [1.5, 0.0]
    assert math.isnan(rows[1][0]) and rows[1][1] == 1.0
    assert math.isnan(rows[2][0]) and math.isnan(rows[2][1])


def test_capymoa_is_skipped_in_one_line_without_java(monkeypatch):
    monkeypatch.setattr(capymoa_host.shutil, "which", lambda tool: None)
    reason = capymoa_host.unavailable()
    assert reason.startswith("CapyMOA skipped: `java` not found") and "\n" not in reason


def test_capymoa_venv_lives_under_the_peers_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("STREAM_NB_PEERS_CACHE", str(tmp_path))
    venv = capymoa_host.venv_dir(sys.executable)
    assert venv.parent == tmp_path
    assert venv.name == f"capymoa-{capymoa_host.VERSION}-py{sys.version_info[0]}.{sys.version_info[1]}"


# --------------------------------------------------------------------------- the timing protocol


class FakeClock:
    """A clock that each loop advances by a known amount."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_measure_leaves_the_warm_up_out_and_takes_the_median_of_interleaved_runs():
    clock = FakeClock()
    order = []
    durations = {"a": iter([100.0, 3.0, 1.0, 2.0]), "b": iter([50.0, 5.0, 7.0, 6.0])}

    def make(name):
        def build():
            clock.now += 1000.0  # building the model is not timed
            return name
        return build

    def loop(model):
        order.append(model)
        clock.now += next(durations[model])
        return f"{model} done"

    timings = protocol.measure({"a": (make("a"), loop), "b": (make("b"), loop)}, repeats=3, warmup=1, clock=clock)
    assert order == ["a", "b"] * 4  # interleaved rounds, the warm-up round first
    assert timings["a"].seconds == [3.0, 1.0, 2.0] and timings["b"].seconds == [5.0, 7.0, 6.0]
    assert timings["a"].median_rate(10) == 5.0 and timings["a"].best_rate(10) == 10.0
    assert timings["b"].median_rate(60) == 10.0
    assert timings["a"].result == "a done"
    with pytest.raises(ValueError, match="repeats: expected at least one timed run, got 0"):
        protocol.measure({}, repeats=0)


def test_frame_batches_hand_over_every_row_once_with_its_label():
    pd = pytest.importorskip("pandas")
    events = list(STREAMS["LED"]().take(1234))
    frame, ys = pd.DataFrame([x for x, _ in events]), [y for _, y in events]
    parts = list(protocol.frame_batches(frame, ys, 500))
    assert [len(X) for X, _ in parts] == [500, 500, 234]
    assert [len(y) for _, y in parts] == [500, 500, 234]
    # the rows as dicts, in order, are the events (native Python values: what prequential_many gets from dicts)
    records = [r for X, _ in parts for r in X.to_dict("records")]
    assert records == [x for x, _ in events] and [type(v) for v in records[0].values()] == [int] * 24
    assert [y for _, part in parts for y in part] == ys
    with pytest.raises(ValueError, match="3 rows but 2 labels"):
        list(protocol.frame_batches(frame.iloc[:3], ys[:2]))
    with pytest.raises(ValueError, match="size: expected a positive number of events per batch, got 0"):
        list(protocol.batches(10, 0))


def test_thread_variables_names_those_set():
    env = {"OMP_NUM_THREADS": "1", "PATH": "/bin", "NUMBA_NUM_THREADS": "2"}
    assert protocol.thread_variables(env) == {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "2"}
    assert protocol.thread_variables({"PATH": "/bin"}) == {}


def test_first_call_keeps_the_result_or_the_error():
    ok = protocol.first_call(lambda: sum(range(1000)))
    assert ok.result == 499500 and ok.error is None and ok.cpu >= 0 and ok.wall >= 0
    refused = protocol.first_call(lambda: {}["frame"])
    assert isinstance(refused.error, KeyError) and refused.result is None
