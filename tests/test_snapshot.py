"""The snapshot container (stream_nb.save / load), the snapshot directory, and recovery in-process.

Damage of every kind must be an error naming the file and the reason, never a
model; the store must never lose its newest good snapshot; the checkpointer
must commit only what a good snapshot covers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import struct
from pathlib import Path

import numpy as np
import pytest

import stream_nb
from stream_nb import AODE, TAN, NaiveBayes
from stream_nb.engine import Checkpointer, Engine, Record
from stream_nb.exceptions import ConfigError, SnapshotError
from stream_nb.snapshots import FaultHooks, SnapshotStore, install_fault_hooks
from stream_nb.snapshots import _format as _snapshot

MODELS = [NaiveBayes, AODE, TAN]


def events(n: int, seed: int = 0) -> list[tuple[dict, object]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        x = {"color": rng.choice(["red", "green", "blue"]), "size": rng.choice([1, 2, 3]),
             "flag": rng.random() < 0.3, "weight": round(rng.gauss(5, 2), 3)}
        if rng.random() < 0.1:
            x["color"] = None
        y = rng.choice(["maybe", "unsure"]) if i % 7 == 0 else rng.choice(["yes", "no"])
        out.append((x, y))
    return out


def trained(cls, n: int = 300, **params):
    model = cls(**params)
    for x, y in events(n):
        model.learn_one(x, y)
    return model


# ----------------------------------------------------------------- the container


@pytest.mark.parametrize("cls", MODELS)
def test_save_then_load_gives_the_same_model(cls, tmp_path):
    model = trained(cls, loss={"yes": {"no": 3.0}, 1: {0: 2.0}})
    if cls is TAN:
        model.rebuild()
    path = tmp_path / "m.snb"
    size = stream_nb.save(model, path)
    assert size == path.stat().st_size
    again = stream_nb.load(path)
    assert type(again) is cls
    assert again._get_params() == model._get_params()  # the loss keeps its integer labels
    assert again._stats.counts() == model._stats.counts()
    saved, loaded = model.state()[0], again.state()[0]  # EM's observed-only counts among them
    assert loaded.keys() == saved.keys() and "obs_value_count" in saved
    for k, v in saved.items():
        np.testing.assert_array_equal(loaded[k], v, err_msg=k)
    assert again.classes == model.classes
    for x, _ in events(50, seed=9):
        assert again.predict_proba_one(x) == model.predict_proba_one(x)
        assert again.predict_one(x) == model.predict_one(x)
    if cls is TAN:
        assert again.tree == model.tree and again.root == model.root
    # the loaded model keeps learning exactly like the original
    for x, y in events(100, seed=3):
        model.learn_one(x, y)
        again.learn_one(x, y)
    assert again._stats.counts() == model._stats.counts()
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left


def test_metadata_encoding_is_lossless():
    value = {"a": (1, 2.5, None), 3: {True: "x"}, "nan": float("nan"), "inf": [float("-inf")],
             "tricky": {"$tuple": [1]}, "big": 2**70}
    encoded = _snapshot.encode_meta(value)
    text = json.dumps(encoded, allow_nan=False)  # plain JSON, no NaN tokens
    back = _snapshot.decode_meta(json.loads(text))
    assert back["a"] == (1, 2.5, None) and back[3] == {True: "x"} and back["tricky"] == {"$tuple": [1]}
    assert np.isnan(back["nan"]) and back["inf"] == [float("-inf")] and back["big"] == 2**70
    with pytest.raises(SnapshotError, match=r"model state\['x'\]: a bytes value .* cannot be stored"):
        _snapshot.encode_meta({"x": b"raw"}, "model state")


def test_save_refuses_what_is_not_a_stream_nb_model(tmp_path):
    from river.naive_bayes import GaussianNB

    with pytest.raises(TypeError, match="GaussianNB"):
        stream_nb.save(GaussianNB(), tmp_path / "x.snb")


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "model.snb"
    stream_nb.save(trained(TAN), path)
    return path


def test_every_truncation_is_an_error_naming_the_file(saved):
    data = saved.read_bytes()
    rng = random.Random(5)
    cuts = sorted({0, 1, 7, 8, 23, 24, 25, len(data) // 2, len(data) - 33, len(data) - 32, len(data) - 1}
                  | {rng.randrange(len(data)) for _ in range(40)})
    for cut in cuts:
        saved.write_bytes(data[:cut])
        with pytest.raises(SnapshotError) as info:
            stream_nb.load(saved)
        message = str(info.value)
        assert message.startswith(f"{saved}: "), message
        assert "truncated" in message or "checksum mismatch" in message, (cut, message)


def test_every_bit_flip_is_an_error_naming_the_file(saved):
    data = bytearray(saved.read_bytes())
    rng = random.Random(6)
    for position in sorted({rng.randrange(len(data)) for _ in range(200)} | {0, 8, 16, len(data) - 1}):
        flipped = bytearray(data)
        flipped[position] ^= 1 << rng.randrange(8)
        saved.write_bytes(bytes(flipped))
        with pytest.raises(SnapshotError) as info:
            _snapshot.read(saved)
        assert str(info.value).startswith(f"{saved}: "), (position, info.value)


def test_trailing_bytes_are_damage(saved):
    saved.write_bytes(saved.read_bytes() + b"\0")
    with pytest.raises(SnapshotError, match="checksum mismatch.*1 bytes more than its header announces"):
        stream_nb.load(saved)


def test_unknown_version_not_a_snapshot_and_unreadable(saved, tmp_path):
    data = bytearray(saved.read_bytes())
    data[8:12] = struct.pack("<I", 3)
    saved.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match=r"model\.snb: unknown snapshot format version 3; .* reads versions 1 and 2"):
        stream_nb.load(saved)
    other = tmp_path / "notes.txt"
    other.write_text("hello, this is not a snapshot at all")
    with pytest.raises(SnapshotError, match=r"notes\.txt: not a stream_nb snapshot"):
        stream_nb.load(other)
    with pytest.raises(SnapshotError, match=r"missing\.snb: cannot read it: No such file"):
        stream_nb.load(tmp_path / "missing.snb")
    with pytest.raises(SnapshotError, match="cannot read it"):
        stream_nb.load(tmp_path)  # a directory


def _forge(path, header: dict, body: bytes) -> None:
    """A well-formed, correctly checksummed file with any header: what a malicious writer could make."""
    text = json.dumps(header).encode()
    start = _snapshot._PREFIX.pack(_snapshot.MAGIC, header.get("version", _snapshot.FORMAT_VERSION), 0, len(text)) + text
    start += bytes(_snapshot._align(len(start)) - len(start))
    content = start + body
    path.write_bytes(content + hashlib.sha256(content).digest())


def test_loading_never_builds_objects_from_the_file(saved, tmp_path):
    snap = _snapshot.read(saved)
    header = json.loads(json.dumps({**snap.header, "model": _snapshot.encode_meta(snap.meta)}))
    forged = tmp_path / "forged.snb"
    header["arrays"] = [{"name": "class_count", "dtype": "|O", "shape": [1], "offset": 0, "nbytes": 8}]
    _forge(forged, header, bytes(8))
    with pytest.raises(SnapshotError, match=r"forged\.snb: array 'class_count': dtype '\|O' is not"):
        _snapshot.read(forged)
    header["arrays"] = []
    header["model"]["model"] = "os.system"
    _forge(forged, header, b"")
    with pytest.raises(SnapshotError, match=r"holds a model of type 'os.system'; expected one of NaiveBayes"):
        stream_nb.load(forged)
    header["model"]["model"] = "TAN"
    _forge(forged, header, b"")  # a TAN without its arrays
    with pytest.raises(SnapshotError, match=r"forged\.snb: its TAN state does not rebuild a model: .*array 'class_count' is missing"):
        stream_nb.load(forged)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(saved, tmp_path):
    before = saved.read_bytes()
    with pytest.raises(SnapshotError, match=r"nowhere/m\.snb: cannot write the snapshot: No such file"):
        stream_nb.save(trained(NaiveBayes), tmp_path / "nowhere" / "m.snb")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SnapshotError, match="cannot write the snapshot: Not a directory"):
        stream_nb.save(trained(NaiveBayes), blocker / "m.snb")
    assert saved.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "model.snb"]


# ----------------------------------------------------------------- the directory


def _write(store: SnapshotStore, n: int = 1) -> list[int]:
    model = trained(NaiveBayes, 20)
    arrays, meta = model.state()
    return [store.write(arrays, meta, {"positions": {}})[0] for _ in range(n)]


def test_store_keeps_the_newest_valid_snapshots(tmp_path):
    store = SnapshotStore(tmp_path, keep=2)
    store.open()
    assert _write(store, 4) == [1, 2, 3, 4]
    assert store.prune() == [2, 1]
    # damage the newest: it no longer counts, the two before it stay
    fresh = SnapshotStore(tmp_path, keep=2)  # a restarted daemon knows nothing yet
    path = fresh.path(4)
    path_bytes = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(path_bytes[:-5])
    _write(fresh, 1)  # number 5, after the damaged 4
    assert fresh.sequences() == [5, 4, 3]
    assert fresh.prune(protect=5) == []  # 4 is damaged: 5 and 3 are the two valid ones
    _write(fresh, 1)
    assert fresh.prune(protect=6) == [4, 3]
    assert fresh.sequences() == [6, 5]
    store.close()


def test_store_is_locked_and_cleans_half_written_files(tmp_path):
    (tmp_path / ".snapshot-000000000007.snb.tmp-123-abcd").write_bytes(b"partial")
    store = SnapshotStore(tmp_path)
    store.open()
    assert not list(tmp_path.glob(".snapshot-*"))
    with pytest.raises(ConfigError, match=f"snapshot directory {tmp_path} is in use by another stream-nb process"):
        SnapshotStore(tmp_path).open()
    store.close()
    SnapshotStore(tmp_path).open()


def test_fault_hooks_run_between_a_snapshots_write_and_its_rename(tmp_path):
    seen = []

    class Watching(FaultHooks):
        def before_rename(self, temporary, path):
            # the whole file is written and fsynced, and not yet a snapshot
            seen.append((os.path.getsize(temporary), os.path.exists(path), SnapshotStore(tmp_path).sequences()))

    previous = install_fault_hooks(Watching())
    try:
        store = SnapshotStore(tmp_path)  # takes the installed hooks
    finally:
        install_fault_hooks(previous)
    store.open()
    seq, path, size = store.write(*trained(NaiveBayes, 20).state(), {"positions": {}})
    assert seen == [(size, False, [])]
    # hooks given to a store win over the installed ones, and the default hooks do nothing
    seen.clear()
    SnapshotStore(tmp_path, faults=Watching()).write(*trained(NaiveBayes, 20).state(), {"positions": {}})
    assert len(seen) == 1 and seen[0][2] == [seq]
    _write(SnapshotStore(tmp_path), 1)  # built after the hooks were uninstalled: the no-op default
    assert len(seen) == 1 and store.sequences() == [3, 2, 1]


def test_production_code_has_no_test_switches():
    """Fault injection goes through FaultHooks objects, never environment variables read by the daemon."""
    root = Path(stream_nb.__file__).resolve().parent.parent
    offending = [str(p.relative_to(root)) for folder in ("stream_nb", "connectors") for p in (root / folder).rglob("*.py")
                 if "STREAM_NB_TEST" in p.read_text()]
    assert offending == []


def test_store_keep_must_be_positive(tmp_path):
    with pytest.raises(ConfigError, match="snapshot keep must be an integer >= 1, got 0"):
        SnapshotStore(tmp_path, keep=0)


# ----------------------------------------------------------------- recovery in-process


class ListSource:
    """A finite source of JSON lines in memory, seekable by index."""

    partition = "mem"
    exhausted = False

    def __init__(self, lines: list[bytes]):
        self.lines = lines
        self.next = 0
        self.committed: dict = {}

    def poll(self, max_records, timeout):
        batch = []
        while self.next < len(self.lines) and len(batch) < max_records:
            i = self.next
            batch.append(Record(self.lines[i], None, "mem", {"line": i + 1}, i + 1))
            self.next += 1
        self.exhausted = not batch
        return batch

    def commit(self, positions):
        self.committed = dict(positions)

    def seek(self, positions):
        self.next = positions["mem"]

    def close(self):
        pass


class ListSink:
    def __init__(self):
        self.values = []

    def send(self, value, key=None):
        self.values.append(value)

    def flush(self):
        pass

    def close(self):
        pass


def lines(n: int, seed: int = 1) -> list[bytes]:
    out = []
    for i, (x, y) in enumerate(events(n, seed)):
        x = {k: v for k, v in x.items() if k != "weight"}
        out.append(json.dumps({"id": i, **x, "label": y}).encode())
    return out


def make_engine(tmp_path, data, every=50, keep=3):
    store = SnapshotStore(tmp_path / "snaps", keep=keep)
    store.open()
    cp = Checkpointer(store, every_events=every, interval_s=3600.0, source_info={"kind": "mem"})
    engine = Engine(TAN(), ListSource(data), ListSink(), ListSink(),
                    config={"commit_every_records": 10_000, "poll_max_records": 7}, checkpointer=cp)
    return engine, cp


def reference_counts(data):
    model = TAN()
    for raw in data:
        obj = json.loads(raw)
        model.learn_one({k: v for k, v in obj.items() if k not in ("id", "label") and v is not None}, obj["label"])
    return model._stats.counts()


def test_commits_follow_snapshots_and_a_restart_resumes_after_the_newest(tmp_path):
    data = lines(400)
    engine, cp = make_engine(tmp_path, data[:230])
    engine.run()
    assert cp.snapshot_positions == {"mem": 230} and engine.source.committed == {"mem": 230}
    engine.checkpointer.store.close()
    engine, cp = make_engine(tmp_path, data)
    assert cp.recover().daemon["positions"] == {"mem": 230}
    assert engine.source.next == 230 and engine.metrics.events == 230
    engine.run()
    assert stream_nb.load(cp.last_path)._stats.counts() == reference_counts(data)


def test_a_damaged_newest_snapshot_falls_back_to_the_previous_one(tmp_path, caplog):
    data = lines(300)
    engine, cp = make_engine(tmp_path, data[:200], every=60)
    engine.run()
    newest = cp.last_path
    with open(newest, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0x10]))
    cp.store.close()
    engine, cp = make_engine(tmp_path, data)
    with caplog.at_level(logging.ERROR, logger="stream_nb.snapshot"):
        restored = cp.recover()
    assert f"unusable snapshot, trying the previous one: {newest}: checksum mismatch" in caplog.text
    assert restored.path != newest and restored.daemon["positions"]["mem"] < 200
    engine.run()
    assert stream_nb.load(cp.last_path)._stats.counts() == reference_counts(data)


def test_while_snapshots_fail_nothing_is_committed_past_the_last_good_one(tmp_path):
    data = lines(300)
    engine, cp = make_engine(tmp_path, data, every=40)
    snaps = tmp_path / "snaps"
    real_write = cp.store.write
    broken = {"on": False}

    def write(*args, **kwargs):
        if broken["on"]:
            raise SnapshotError(f"{snaps}: cannot write the snapshot: No space left on device")
        return real_write(*args, **kwargs)

    cp.store.write = write
    # process 100 events, then break the disk for the next 120
    for record in engine.source.poll(100, 0):
        engine.process(record)
    engine.checkpoint()
    assert engine.source.committed == {"mem": 100} and cp.status()["healthy"]
    broken["on"] = True
    for record in engine.source.poll(120, 0):
        engine.process(record)
        if engine.metrics.events % 40 == 0:
            engine.checkpoint()
    status = cp.status()
    assert not status["healthy"] and not status["last_snapshot_ok"]
    assert "No space left on device" in status["snapshot_error"]
    assert engine.source.committed == {"mem": 100}  # not a record further
    assert engine.status()["healthy"] is False
    broken["on"] = False
    engine.checkpoint()  # retried at the very next checkpoint
    assert cp.status()["healthy"] and engine.source.committed == {"mem": 220}


def test_snapshots_of_another_model_are_refused(tmp_path):
    data = lines(100)
    engine, cp = make_engine(tmp_path, data)
    engine.run()
    cp.store.close()
    store = SnapshotStore(tmp_path / "snaps")
    store.open()
    cp = Checkpointer(store, source_info={"kind": "mem"})
    Engine(TAN(alpha=0.5), ListSource(data), ListSink(), ListSink(), checkpointer=cp)
    with pytest.raises(ConfigError, match=r"does not fit the settings: its model parameters differ: "
                                          r"alpha=1\.0 \(settings: 0\.5\)"):
        cp.recover()


def test_no_usable_snapshot_refuses_to_start_from_nothing(tmp_path):
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    (snaps / "snapshot-000000000003.snb").write_bytes(b"\x89SNB\r\n\x1a\nrest")
    store = SnapshotStore(snaps)
    store.open()
    cp = Checkpointer(store)
    Engine(TAN(), ListSource([]), ListSink(), ListSink(), checkpointer=cp)
    with pytest.raises(SnapshotError, match=r"no usable snapshot in .*snaps among 1 file\(s\): .*truncated"):
        cp.recover()
