"""Snapshots and model-topic records written by an earlier stream_nb still load, answer and learn alike.

The files under ``tests/data/snapshots/`` were written once, by the code of
the commit that added them (``make_fixtures.py`` says how), and are never
rewritten: thirteen models saved with ``stream_nb.save``, the records a
member of a ``--model-topic`` group published, and a ``stream-nb run
--snapshot-dir`` directory with the files it wrote. ``expected.json`` holds
what that code answered on them: the probabilities of fixed probe events,
then the same after the loaded model learned 50 more events, the group's
merged view, and the outputs of the daemon resumed on 30 more events.

Today's code must read the same files to the same answers (to 1e-9, the
fixtures keep 12 significant digits), and a loaded model's state must be the
file's state: a change of the state's layout is a new format version, with a
converter, not a silent reinterpretation. A file of another version is refused
with the version found, the version read, and what to do.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stream_nb
from stream_nb.engine import GroupCheckpointer, StateLog
from stream_nb.exceptions import SnapshotError
from stream_nb.snapshots import SnapshotStore, decode_state, read

DATA = Path(__file__).resolve().parent / "data" / "snapshots"
EXPECTED = json.loads((DATA / "expected.json").read_text())
MODELS = sorted(EXPECTED["models"])
PREFIX = struct.Struct("<8sIIQ")  # the snapshot's magic, version, flags, header length (format version 1)


def same_answers(model, xs: list[dict], expected: dict, where: str) -> None:
    """``model``'s ``predict_proba_one`` and ``predict_one`` on ``xs`` are the fixture's, to 1e-9."""
    for i, x in enumerate(xs):
        want = {label: p for label, p in expected["proba"][i]}
        got = model.predict_proba_one(x)
        assert got.keys() == want.keys(), f"{where}, probe {i} {x}: classes {list(got)}, expected {list(want)}"
        assert got == pytest.approx(want, rel=1e-9, abs=0), f"{where}, probe {i} {x}"
        assert model.predict_one(x) == expected["predict"][i], f"{where}, probe {i} {x}"


# ----------------------------------------------------------------- models saved with stream_nb.save


@pytest.mark.parametrize("name", MODELS)
def test_a_saved_model_loads_and_answers_as_when_it_was_saved(name):
    spec = EXPECTED["models"][name]
    model = stream_nb.load(DATA / spec["file"])
    assert type(model).__name__ == spec["model"]
    assert int(model.n_learned) == spec["n_learned"]
    same_answers(model, EXPECTED["streams"][spec["stream"]]["probes"], spec["answers"], name)


@pytest.mark.parametrize("name", MODELS)
def test_a_loaded_model_learns_on_as_it_did(name):
    """Learning goes on from the loaded counts, structure, forgetting and detector state: the next 50 events
    (values missing among them: EM from the loaded counts) give the answers the saving code gave."""
    spec = EXPECTED["models"][name]
    stream = EXPECTED["streams"][spec["stream"]]
    model = stream_nb.load(DATA / spec["file"])
    for x, y in stream["continue"]:
        model.learn_one(x, y)
    assert int(model.n_learned) == spec["n_learned_after"]
    same_answers(model, stream["probes"], spec["answers_after"], f"{name} after 50 more events")


def key_order(doc) -> list:
    """The keys of every mapping in the JSON document ``doc``, in order, each with its path."""
    out = []
    if isinstance(doc, dict):
        out.append(list(doc))
        for k, v in doc.items():
            out += [(k, inner) for inner in key_order(v)]
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += [(i, inner) for inner in key_order(v)]
    return out


@pytest.mark.parametrize("name", MODELS)
def test_a_loaded_models_state_is_the_files_state(name):
    """The state's layout is unchanged: the loaded model gives back the file's arrays (names, dtypes, shapes,
    values) and metadata. A change here needs a new format version (and a converter), not a new reading."""
    snap = read(DATA / EXPECTED["models"][name]["file"])
    arrays, meta = snap.model().state()
    assert meta == snap.meta
    assert key_order(meta) == key_order(snap.meta)  # the keys in the file's order too: the same bytes
    assert list(arrays) == list(snap.arrays)
    for key, saved in snap.arrays.items():
        again = np.asarray(arrays[key])
        assert (again.dtype.str, again.shape) == (saved.dtype.str, saved.shape), key
        np.testing.assert_array_equal(again, saved, err_msg=key)


def test_the_fixtures_cover_what_they_claim():
    """The models hold what they were written to hold: EM's observed-only twin, a window's panes, decay, a
    detector's state after a drift, sparse tables, a structure, the fine layer under the bins."""
    def snap(name):
        return read(DATA / EXPECTED["models"][name]["file"])

    assert "obs_pair_count" in snap("tan_em").arrays and "obs_pair_count" not in snap("tan").arrays
    assert "fine.value_count" in snap("nb_bins_mdl").arrays
    assert snap("nb_window").meta["forget"]["panes_kept"] == 3
    assert float.fromhex(snap("aode_half_life").meta["forget"]["inflation"]) > 1.0
    ddm = snap("nb_ddm").meta["forget"]
    assert ddm["drifts"] and ddm["detector"]["o"] == "river.drift.binary.ddm:DDM"
    assert "tuple_count_cells" in snap("kdb2_sparse").arrays and "tuple_count" in snap("kdb2").arrays
    assert snap("tan").model().tree
    assert snap("nb_unlabeled").meta["params"]["missing"]["unlabeled"] is True  # the file's learn_unlabeled=True
    assert snap("nb_ignore_int_labels_loss").model().classes == [0, 1, 2]


# ----------------------------------------------------------------- a model topic's records


class ReplayedTopic:
    """A model topic whose records are the fixture's, read once in order."""

    topic = "model"
    max_record_bytes = 1_000_000

    def __init__(self, records: list[tuple[str, bytes]]):
        self.records = list(records)

    def publish(self, key, value):
        raise AssertionError("a reader of the fixture publishes nothing")

    def flush(self):
        return None

    def poll(self, timeout):
        out, self.records = self.records, []
        return out

    def catch_up(self, timeout):
        return self.poll(timeout)

    def close(self):
        return None


def group_records() -> list[tuple[str, bytes]]:
    doc = json.loads((DATA / EXPECTED["group"]["file"]).read_text())
    return [(r["key"], base64.b64decode(r["value"])) for r in doc["records"]]


def test_model_topic_records_are_read_decoded_and_merged_as_they_were():
    spec = EXPECTED["group"]
    records = group_records()
    assert [value[4:5] for _, value in records] == [b"S"] + [b"C"] * (len(records) - 2) + [b"M"]
    log = StateLog()
    states = [state for key, value in records for state in log.feed(key, value)]
    assert [(p, info["offset"], info["learned"]) for p, _, info in states] == [
        (p, s["offset"], s["learned"]) for p, s in spec["partitions"].items()]
    parts = []
    for partition, payload, _ in states:
        model, info = decode_state(payload)
        assert info["partition"] == partition
        same_answers(model, spec["probes"], spec["parts"][partition], f"state of {partition}")
        parts.append(model)
    # a member of today reading the topic: the same partitions at the same offsets, the same merged view
    member = GroupCheckpointer(ReplayedTopic(records), parts[0].clone(), member="reader", sync_every=1)
    member.sync()
    assert {p: s.offset for p, s in member.known.items()} == {p: s["offset"] for p, s in spec["partitions"].items()}
    assert member.views_built == 1 and member.group_learned() == spec["view_learned"]
    view = member.build_view()
    assert int(view.n_learned) == spec["view_learned"]
    same_answers(view, spec["probes"], spec["view"], "the group's view")


def test_a_model_state_of_another_encoding_version_is_refused_saying_what_to_do():
    key, value = group_records()[0]
    envelope = 9 + struct.unpack_from("<I", value, 5)[0]  # SNBG, kind, header length, header
    payload = bytearray(value[envelope:])
    payload[4] = 3  # SNBW, then the encoding's version
    with pytest.raises(SnapshotError) as refused:
        decode_state(bytes(payload), f"state of {key}")
    message = str(refused.value)
    assert message.startswith(f"state of {key}: unknown model state encoding version 3; this stream_nb")
    assert "reads versions 1 and 2. Version 3 is newer: read it with the stream_nb that wrote it or a later " \
           "release; no release converts it to an older version" in message


# ----------------------------------------------------------------- a daemon's snapshot directory


def daemon_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stream_nb.cli", *args], cwd=cwd, env=daemon_env(),
                          capture_output=True, timeout=300)


def repacked(data: bytes, header: dict) -> bytes:
    """A version-1 snapshot ``data`` with another header: the arrays' bytes as they are, the SHA-256 redone."""
    magic, version, flags, hlen = PREFIX.unpack_from(data)
    text = json.dumps(header, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    old_start = -(-(PREFIX.size + hlen) // 64) * 64
    start = PREFIX.pack(magic, version, flags, len(text)) + text
    body = start + bytes(-len(start) % 64) + data[old_start:len(data) - 32]
    return body + hashlib.sha256(body).digest()


def as_if_in_place(snapshot: Path, here: Path) -> None:
    """Make ``snapshot`` name the copies in ``here`` as its files (paths and inodes), as if the daemon's
    directory had stayed where it ran: the input's position and the output files' commits then apply to them.
    The model, positions, metrics and everything else stay byte for byte."""
    data = snapshot.read_bytes()
    header = json.loads(data[PREFIX.size:PREFIX.size + PREFIX.unpack_from(data)[3]])
    daemon = header["daemon"]
    daemon["source"]["realpath"] = os.path.realpath(here / daemon["source"]["path"])
    for name, entry in daemon["files"].items():
        info = os.stat(here / name)
        entry["dev"], entry["ino"] = info.st_dev, info.st_ino
    for sink in daemon["sinks"].values():
        info = os.stat(here / sink["path"])
        sink["realpath"], sink["file"] = os.path.realpath(here / sink["path"]), [info.st_dev, info.st_ino]
    snapshot.write_bytes(repacked(data, header))


def test_a_daemons_snapshot_directory_is_read_as_written():
    store = SnapshotStore(DATA / "daemon" / "snaps")
    assert store.sequences() == [4, 3, 2]
    snap = store.read(4)
    lines = (DATA / "daemon" / "events.jsonl").read_bytes().splitlines()
    dead = [json.loads(line) for line in (DATA / "daemon" / "dead.jsonl").read_text().splitlines()]
    assert snap.daemon["positions"] == {"events.jsonl": (DATA / "daemon" / "events.jsonl").stat().st_size}
    metrics = snap.daemon["metrics"]
    assert metrics["events"] == len(lines) == EXPECTED["daemon"]["outputs"] + len(dead)
    assert metrics["dead_letters_by_reason"] == {"invalid_json": 1, "nested_value": 1} == {
        d["reason"]: 1 for d in dead}
    labeled = sum(b'"label"' in line for line in lines) - 1  # the bad-type line has one too
    assert snap.model().n_learned == metrics["learned"] == labeled
    inspected = cli("snapshot", "inspect", str(DATA / "daemon" / "snaps"), cwd=DATA)
    assert inspected.returncode == 0, inspected.stderr.decode()
    text = inspected.stdout.decode()
    assert "snapshot 4 of store" in text and f"events.jsonl: {snap.daemon['positions']['events.jsonl']}" in text


def test_the_daemon_resumes_from_a_snapshot_directory_as_written(tmp_path):
    """``stream-nb run`` with the same settings resumes from the directory the earlier code left: the input
    at the snapshot's byte, the outputs appended once, the metrics and the model carried on."""
    spec = EXPECTED["daemon"]
    here = tmp_path / "daemon"
    shutil.copytree(DATA / "daemon", here)
    output_before = (here / "out.jsonl").read_bytes()
    dead_before = (here / "dead.jsonl").read_bytes()
    with open(here / "events.jsonl", "ab") as f:
        f.write((here / "more.jsonl").read_bytes())
    as_if_in_place(here / "snaps" / "snapshot-000000000004.snb", here)
    run = cli(*spec["args"], cwd=here)
    log = run.stderr.decode(errors="replace")
    assert run.returncode == 0, log
    assert "Traceback" not in log and "restored snapshot snaps/snapshot-000000000004.snb" in log
    output = (here / "out.jsonl").read_bytes()
    assert output.startswith(output_before)  # nothing written again: the input resumed at the position
    new = [json.loads(line) for line in output[len(output_before):].splitlines()]
    assert [r["id"] for r in new] == [r["id"] for r in spec["resumed"]] == list(range(120, 150))
    for got, want in zip(new, map(dict, spec["resumed"])):
        assert got["proba"] == pytest.approx(want.pop("proba"), rel=1e-9, abs=0), got["id"]
        assert {k: got[k] for k in want} == want
    assert (here / "dead.jsonl").read_bytes() == dead_before
    newest = read(here / "snaps" / f"snapshot-{max(SnapshotStore(here / 'snaps').sequences()):012d}.snb")
    assert newest.daemon["metrics"]["events"] == len((here / "events.jsonl").read_bytes().splitlines())
    assert newest.daemon["positions"] == {"events.jsonl": (here / "events.jsonl").stat().st_size}
    assert newest.daemon["store_id"] == read(DATA / "daemon" / "snaps" / "snapshot-000000000004.snb").daemon["store_id"]


# ----------------------------------------------------------------- another format version


def with_version(data: bytes, version: int) -> bytes:
    """``data`` with the format version of its first bytes changed, the SHA-256 trailer redone (as
    ``_format.write`` computes it: over every byte before it), so that only the version differs."""
    body = bytearray(data[:-32])
    body[8:12] = struct.pack("<I", version)
    return bytes(body) + hashlib.sha256(body).digest()


def test_a_snapshot_of_a_newer_format_is_refused_saying_which_release_reads_it(tmp_path):
    path = tmp_path / "model.snb"
    path.write_bytes(with_version((DATA / "models" / "tan.snb").read_bytes(), 3))
    with pytest.raises(SnapshotError) as refused:
        stream_nb.load(path)
    message = str(refused.value)
    release = stream_nb.__version__
    assert message == (
        f"{path}: unknown snapshot format version 3; this stream_nb ({release}) reads versions 1 and 2. Version 3 is "
        f"newer: read it with the stream_nb that wrote it or a later release; no release converts it to an older "
        f"version"
    )
    # the header names the release that wrote it: the message names it, when it is another one
    data = path.read_bytes()
    header = json.loads(data[PREFIX.size:PREFIX.size + PREFIX.unpack_from(data)[3]])
    path.write_bytes(repacked(data, {**header, "stream_nb": "9.1.0"}))
    with pytest.raises(SnapshotError, match=r"Version 3 is newer: read it with stream_nb 9\.1\.0 \(which wrote it\) "
                                            r"or a later release"):
        stream_nb.load(path)
    inspected = cli("snapshot", "inspect", str(path), cwd=tmp_path)
    assert inspected.returncode == 2
    assert inspected.stderr.decode().strip() == f"stream-nb: error: {path}: " + message[len(f"{path}: "):].replace(
        "the stream_nb that wrote it", "stream_nb 9.1.0 (which wrote it)")


def test_a_snapshot_of_an_older_format_is_refused_saying_no_release_converts_it(tmp_path):
    path = tmp_path / "model.snb"
    path.write_bytes(with_version((DATA / "models" / "nb_gaussian.snb").read_bytes(), 0))
    with pytest.raises(SnapshotError, match=r"unknown snapshot format version 0; this stream_nb \(.*\) reads versions 1 "
                                            r"and 2\. Version 0 is older, and this release has no converter from it: "
                                            r"read it with the stream_nb that wrote it$"):
        stream_nb.load(path)
