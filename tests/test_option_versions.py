"""Snapshots and model-topic states written with the flat parameters of earlier releases (version 1) load
with those parameters mapped to today's option objects, and a group of members of both versions interoperates.

The files are the committed fixtures of ``tests/data/snapshots`` (written by the code before the options
existed, never rewritten); the raw parameters are read from their headers' bytes, not through the reader
under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
from pathlib import Path

import pytest

import stream_nb
from stream_nb import EM, MDL, TAN, Decay, Edges, EqualFrequency, Gaussian, Ignore, SuperParent, Tree, Window
from stream_nb.engine import GroupCheckpointer, StateLog, merge_states, state_records
from stream_nb.exceptions import SnapshotError
from stream_nb.snapshots import decode_meta, decode_state, encode_state, read
from stream_nb.snapshots import _wire
from test_snapshot_compat import ReplayedTopic, group_records

DATA = Path(__file__).resolve().parent / "data" / "snapshots"
EXPECTED = json.loads((DATA / "expected.json").read_text())
PREFIX = struct.Struct("<8sIIQ")


def raw_header(path: Path) -> tuple[int, dict]:
    """``(format version, header)`` of a snapshot file, read from its bytes alone."""
    data = path.read_bytes()
    _, version, _, hlen = PREFIX.unpack_from(data)
    return version, json.loads(data[PREFIX.size:PREFIX.size + hlen])


def raw_group_states() -> list[tuple[int, dict]]:
    """``(encoding version, model metadata as written)`` of each state of the committed model-topic records."""
    doc = json.loads((DATA / EXPECTED["group"]["file"]).read_text())
    log, out = StateLog(), []
    for record in doc["records"]:
        for _, payload, _ in log.feed(record["key"], base64.b64decode(record["value"])):
            raw = zlib.decompress(payload[5:])
            (hlen,) = struct.unpack_from("<I", raw)
            out.append((payload[4], json.loads(raw[4:4 + hlen])["model"]))
    return out


#: Each fixture's options as its flat parameters say, written out by hand from the mapping's rules.
def expected_options(params: dict) -> dict:
    p = params
    out = {}
    if p.get("window") is not None:
        out["forgetting"] = Window(p["window"], panes=p["panes"])
    elif p.get("half_life") is not None:
        out["forgetting"] = Decay(p["half_life"], time_field=p.get("time_field"))
    else:
        out["forgetting"] = None
    if p["missing"] == "em":
        out["missing"] = EM(unlabeled=p["learn_unlabeled"], unlabeled_weight=p["unlabeled_weight"])
    else:
        out["missing"] = EM(False, p["learn_unlabeled"], p["unlabeled_weight"]) if p["learn_unlabeled"] else Ignore()
    if p.get("numeric", "bins") == "gaussian":
        out["numeric"] = Gaussian(p["var_smoothing"])
    elif p["discretiser"] == "mdl":
        out["numeric"] = MDL(p["bins"], p["fine_bins"], p["warmup"])
    else:
        out["numeric"] = EqualFrequency(p["bins"], p["warmup"])
    if p.get("bin_edges") and not isinstance(out["numeric"], Gaussian):
        out["numeric"] = Edges(p["bin_edges"], out["numeric"])
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_a_version_1_snapshot_loads_with_its_flat_parameters_mapped(name):
    path = DATA / EXPECTED["models"][name]["file"]
    version, header = raw_header(path)
    assert version == 1 and header["version"] == 1
    params = decode_meta(header["model"])["params"]  # the JSON's tags ($dict: a loss matrix of int labels) undone
    assert "window" in params and "forgetting" not in params  # written flat, before the options
    model = stream_nb.load(path)
    for option, value in expected_options(params).items():
        assert getattr(model, option) == value, option
    for plain in ("alpha", "types", "loss", "memory_budget", "m", "k", "max_table_cells", "max_completions"):
        if plain in params:
            assert getattr(model, plain) == params[plain], plain
    if "tree_score" in params:
        assert model.search == Tree(params["tree_score"], params["rebuild_every"])
    if "parent" in params:
        assert model.search == SuperParent(params["parent"], params["rebuild_every"])
    if "k" in params:
        assert model.rebuild_every == params["rebuild_every"]
    # the same values under the names the learning code reads
    assert (model.window, model.half_life, model.warmup) == (params["window"], params["half_life"], params["warmup"])
    assert model.learn_unlabeled is params["learn_unlabeled"]


def test_a_loaded_version_1_model_is_saved_as_version_2_and_reads_back_the_same(tmp_path):
    for name, spec in sorted(EXPECTED["models"].items()):
        model = stream_nb.load(DATA / spec["file"])
        path = tmp_path / f"{name}.snb"
        stream_nb.save(model, path)
        version, header = raw_header(path)
        assert version == header["version"] == 2
        assert "window" not in header["model"]["params"] and "forgetting" in header["model"]["params"]
        again = stream_nb.load(path)
        assert again.state_params() == model.state_params()
        x = EXPECTED["streams"][spec["stream"]]["probes"][0]
        assert again.predict_proba_one(x) == model.predict_proba_one(x)


def test_model_topic_states_written_flat_decode_with_their_parameters_mapped():
    states = raw_group_states()
    assert [v for v, _ in states] == [1, 1]  # the committed records: the encoding before the options
    for _, meta in states:
        assert meta["model"] == "TAN" and "bin_edges" in meta["params"]
    doc = json.loads((DATA / EXPECTED["group"]["file"]).read_text())
    log = StateLog()
    for record in doc["records"]:
        for partition, payload, _ in log.feed(record["key"], base64.b64decode(record["value"])):
            model, info = decode_state(payload)
            raw = dict(states)[1]["params"]
            assert model.search == Tree(raw["tree_score"], raw["rebuild_every"])
            assert model.numeric.edges == raw["bin_edges"] and model.numeric.rest == MDL(raw["bins"],
                                                                                         raw["fine_bins"], raw["warmup"])


class Topic(ReplayedTopic):
    """A model topic in memory: what is published is there to be read, in order."""

    def publish(self, key, value):
        self.records.append((key, value))


def test_a_group_of_both_versions_interoperates():
    """Members of today read what a member of the earlier release published (version 1) beside what a
    member of today published (version 2), and merge them into one view: the merge of the same models."""
    log = StateLog()
    parts = {p: decode_state(payload)[0] for key, value in group_records() for p, payload, _ in log.feed(key, value)}
    template = next(iter(parts.values())).clone()  # today's TAN with the group's edges, as a new member builds it
    assert isinstance(template.numeric, type(parts["events-0"].numeric))
    new = template.clone()
    stream = [({"a": "x", "b": "y", "t": 1.5}, "p"), ({"a": "y", "b": "y", "t": 7.0}, "q")] * 20
    for x, y in stream:
        new.learn_one(x, y)
    info = {"partition": "events-2", "offset": 40, "learned": 40, "member": "new", "time": 0.0,
            "rebuild_every": new.rebuild_every}
    payload = encode_state(*new.state(), info=info)
    assert payload[4] == 2
    records = group_records() + state_records("events-2", payload, info, limit=1_000_000, version="40.new")
    reader = GroupCheckpointer(Topic(records), template.clone(), member="reader", sync_every=1)
    reader.sync()
    assert sorted(reader.known) == ["events-0", "events-1", "events-2"]
    view = reader.build_view()
    assert int(view.n_learned) == EXPECTED["group"]["view_learned"] + 40
    merged = merge_states(template, [("events-0", parts["events-0"]), ("events-1", parts["events-1"]), ("events-2", new)])
    for x in EXPECTED["group"]["probes"] + [x for x, _ in stream[:2]]:
        assert view.predict_proba_one(x) == pytest.approx(merged.predict_proba_one(x), rel=1e-12)


def test_a_member_that_reads_only_version_1_refuses_a_version_2_state_naming_both(monkeypatch):
    """The other side of a rolling upgrade: a member reading version 1 only (as the earlier release does)
    refuses today's states, and says which version it found and which it reads."""
    model = TAN(numeric=MDL())
    model.learn_one({"a": "x"}, "p")
    payload = encode_state(*model.state(), info={"partition": "events-0"})
    monkeypatch.setattr(_wire, "READS", (1,))
    with pytest.raises(SnapshotError) as refused:
        decode_state(payload, "state of events-0")
    assert str(refused.value).startswith("state of events-0: unknown model state encoding version 2; this "
                                         "stream_nb")
    assert "reads version 1 only. Version 2 is newer" in str(refused.value)


def test_a_version_1_state_whose_flat_parameters_do_not_map_is_refused_naming_the_parameter(tmp_path):
    """A version-1 file whose parameters are out of range (e.g. written by hand) is refused, naming the one at fault."""
    data = (DATA / "models" / "nb_window.snb").read_bytes()
    _, version, flags, hlen = PREFIX.unpack_from(data)
    header = json.loads(data[PREFIX.size:PREFIX.size + hlen])
    header["model"]["params"]["panes"] = 0
    text = json.dumps(header).encode()
    start = PREFIX.pack(data[:8], version, flags, len(text)) + text
    old_start = (PREFIX.size + hlen + 63) // 64 * 64
    new_start = (len(start) + 63) // 64 * 64
    body = start + bytes(new_start - len(start)) + data[old_start:len(data) - 32]
    path = tmp_path / "bad.snb"
    path.write_bytes(body + hashlib.sha256(body).digest())
    with pytest.raises(SnapshotError, match=r"its version-1 model parameters do not convert: panes: expected an "
                                            r"integer >= 1, got 0"):
        read(path)
