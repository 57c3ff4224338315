"""bench/peers/: the ARFF files the Java peers read declare the streams as MOA does, and hold our events.

Pure Python (no JVM): the files are read back with scipy's independent ARFF reader.
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


def _load():
    spec = importlib.util.spec_from_file_location(
        "bench_peers", ROOT / "bench" / "peers" / "__init__.py", submodule_search_locations=[]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


peers = _load()

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
