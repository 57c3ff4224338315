"""The pending store against a dict, and its memory per event."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import orjson

from stream_nb.engine.join._pending import JOINED, LABEL, PENDING, PendingStore


def random_event(rng):
    x = {}
    for f in range(6):
        r = rng.random()
        if r < 0.15:
            continue  # absent
        if f < 3:
            x[f"c{f}"] = rng.choice(["a", "b", 3, True, 0, False, 2.5])  # odd kinds too: 2.5 in a categorical column
        else:
            x[f"n{f}"] = rng.choice([rng.gauss(0, 1e3), -0.0, 0.0, 1e-300, 7, "x"])  # ints and strings in numeric ones
    return x


def test_the_store_is_a_dict_of_events():
    """Random adds and removes (a small table: long probe chains, wrap-around, backward-shift deletion)
    against a plain dict: every event comes back as it went in, types included."""
    rng = random.Random(7)
    store = PendingStore(64)
    ref: dict = {}
    rows: dict = {}
    for step in range(6000):
        if ref and (rng.random() < 0.45 or store.full):
            key = rng.choice(list(ref))
            assert store.find(key) == rows[key]
            store.remove(rows.pop(key))
            del ref[key]
            assert store.find(key) == -1
        else:
            key = orjson.dumps(rng.choice([rng.randrange(10**6), f"id-{rng.randrange(10**6)}", "é" * rng.randrange(40)]))
            if key in ref:
                continue
            x = random_event(rng)
            rows[key] = store.add(key, x, t=float(step), prediction=rng.choice([None, "yes", 1]))
            ref[key] = (x, float(step))
        assert len(store) == len(ref)
        if step % 500 == 0:
            for key, (x, t) in ref.items():
                row = store.find(key)
                got = store.features(row)
                assert got == x and {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in x.items()}
                assert {k: str(v) for k, v in got.items()} == {k: str(v) for k, v in x.items()}  # -0.0 stays -0.0
                assert store.time[row] == t and store.id_of(row) == key


def test_due_and_oldest():
    store = PendingStore(8)
    for i, t in enumerate([5.0, 1.0, 3.0, 9.0]):
        store.add(orjson.dumps(i), {"a": "x"}, t=t, state=JOINED if i == 3 else PENDING)
    assert store.due(3.0).tolist() == [1, 2]  # rows, oldest first
    assert [store.id_of(r) for r in store.oldest(2)] == [b"3", b"1"]  # joined ones (duplicate spotters) first


def test_an_event_of_20_features_takes_under_200_bytes():
    """Measured: the bytes the store allocates (tracemalloc sees numpy's arrays) per event held, for 20,000
    events of 10 categorical and 10 numeric features with string ids, in a child process so the figure
    is the store's alone (``bench/delayed.py --memory`` measures a million)."""
    code = r'''
import tracemalloc
import numpy as np, orjson
from stream_nb.engine.join._pending import PendingStore
n = 20_000
rng = np.random.default_rng(0)
cats, nums = rng.integers(0, 50, size=(n, 10)).tolist(), rng.normal(size=(n, 10)).tolist()
names = [f"c{j}" for j in range(10)] + [f"n{j}" for j in range(10)]
xs = [dict(zip(names, [f"v{k}" for k in c] + v)) for c, v in zip(cats, nums)]
keys = [orjson.dumps(f"ev-{i:09d}") for i in range(n)]
tracemalloc.start()
store = PendingStore(n)
for i in range(n):
    store.add(keys[i], xs[i], t=float(i), prediction="yes", partition="in.jsonl", offset=i)
used = tracemalloc.get_traced_memory()[0]
assert len(store) == n and store.features(store.find(keys[1234])) == xs[1234]
print(used / n)
'''
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    per_event = float(run.stdout.split()[-1])
    assert per_event <= 200, per_event


def test_a_batch_is_the_same_as_one_event_at_a_time():
    """add_many (column by column, vectorised table inserts) against add one by one on a twin store: the
    same rows, ids, cells, times and predictions, in a small table (collisions within the batch and with
    the table), with uniform batches (the column path) and mixed ones (value by value); features_many,
    forget_features_many and absent against their one-row forms."""
    rng = random.Random(11)
    one, many = PendingStore(96), PendingStore(96)
    held: list[bytes] = []
    for step in range(300):
        if held and (rng.random() < 0.4 or many.n_free < 12):
            for key in rng.sample(held, min(len(held), rng.randrange(1, 8))):
                held.remove(key)
                for store in (one, many):
                    store.remove(store.find(key))
            continue
        n = rng.randrange(1, 12)
        keys = list({orjson.dumps(rng.choice([rng.randrange(10**5), f"k{rng.randrange(10**5)}"])) for _ in range(n)})
        probe = keys + held[:3]
        assert many.absent(probe) == [one.find(k) < 0 for k in probe]
        keys = [k for k in keys if k not in held]
        if rng.random() < 0.5:  # the same features in every event: the column path
            xs = [{"c": rng.choice(["a", "b", 4, False]), "n": rng.gauss(0, 1), "m": rng.choice(["x", "y"])}
                  for _ in keys]
        else:
            xs = [random_event(rng) for _ in keys]
        preds = [rng.choice([None, "yes", 1]) for _ in keys]
        offsets = [rng.randrange(1000) for _ in keys]
        rows = many.add_many(keys, xs, t=float(step), predictions=preds, partition="p", offsets=offsets)
        for key, x, p, o, row in zip(keys, xs, preds, offsets, rows.tolist()):
            assert one.add(key, x, t=float(step), prediction=p, partition="p", offset=o) == row
        held += keys
        live = [many.find(k) for k in held]
        assert live == [one.find(k) for k in held] and min(live, default=0) >= 0
        assert many.features_many(live) == [one.features(r) for r in live]
        if many.columns_many(live) is not None:  # None only for rows with a value of the other kind
            assert [list(x.items()) for x in many.columns_many(live)] == \
                [list(x.items()) for x in many.features_many(live)]
        else:
            assert not many.odd.keys().isdisjoint(live)
        for name in ("time", "prediction", "offset", "state", "hashes"):
            assert getattr(many, name)[live].tolist() == getattr(one, name)[live].tolist(), name
        assert [many.id_of(r) for r in live] == held and [many.predicted(r) for r in live] == [one.predicted(r) for r in live]
    gone = [many.find(k) for k in held[:5]]
    many.forget_features_many(gone)
    for r in gone:
        one.forget_features(r)
    assert many.features_many(gone) == [one.features(r) for r in gone] == [{}] * len(gone)


def test_find_many_is_find_of_each():
    """In a crowded small table (probe chains, wrap-around, removals): held ids, removed ones and unknown ones."""
    rng = random.Random(3)
    store = PendingStore(40)
    keys = [orjson.dumps(f"id{i}") for i in range(40)]
    for k in keys:
        store.add(k, {"a": "x"}, t=0.0)
    for k in rng.sample(keys, 15):
        store.remove(store.find(k))
    probe = keys + [orjson.dumps(i) for i in range(30)]
    rng.shuffle(probe)
    assert store.find_many(probe).tolist() == [store.find(k) for k in probe]
    assert sum(r >= 0 for r in store.find_many(probe)) == 25


def test_find_many_compares_the_bytes_when_the_hashes_agree():
    """A row at another id's home slot with that id's hash (a collision) is not that id: its bytes differ."""
    store = PendingStore(8)
    row = store.add(b'"a"', {"s": "x"}, t=0.0)
    other = b'"b"'  # the same length as the held id: compared byte by byte
    store.table[:] = 0
    store.table[hash(other) & store.mask] = row + 1
    store.hashes[row] = hash(other)
    assert store.find_many([other, b'"a"', b'"bb"']).tolist() == [store.find(k) for k in (other, b'"a"', b'"bb"')] == [-1] * 3
    store.hashes[row] = hash(b'"a"')
    store.table[:] = 0
    store.table[hash(b'"a"') & store.mask] = row + 1
    assert store.find_many([other, b'"a"']).tolist() == [-1, row]


def test_rows_holding_every_feature_come_back_whole_and_in_order():
    """features_many's path for rows that hold every feature (the usual stream) against features(), key
    order included (the order a model meets a new feature in), beside rows with a cell absent or odd."""
    rng = random.Random(5)
    store = PendingStore(64)
    xs = [{"c": rng.choice(["a", "b", 4, True]), "n": rng.gauss(0, 1), "m": rng.choice(["x", "y"]),
           "z": rng.gauss(0, 1)} for _ in range(20)]
    rows = store.add_many([orjson.dumps(i) for i in range(20)], xs, t=0.0, predictions=[None] * 20).tolist()
    got = store.features_many(rows)
    assert got == xs and [list(x) for x in got] == [list(store.features(r)) for r in rows] == [["c", "m", "n", "z"]] * 20
    odd = store.add(b'"odd"', {"c": 2.5, "n": 1.0, "m": "x", "z": 0.5}, t=0.0)  # a float in a categorical column
    part = store.add(b'"part"', {"c": "a", "n": 1.0}, t=0.0)
    for some in (rows[:3] + [odd], [part] + rows[:3]):
        assert [list(x.items()) for x in store.features_many(some)] == [list(store.features(r).items()) for r in some]
    assert store.columns_many(rows[:3] + [odd]) is None  # a value of the other kind: features_many gives it
    columns = store.columns_many([part] + rows[:3])
    # numpy columns (the runs encode them with numpy): an absent numeric cell is NaN, an absent categorical one None
    assert columns.arrays and np.isnan(columns.columns["z"][0]) and columns.columns["c"][0] == "a"
    assert columns.columns["m"][0] is None and columns.columns["z"].dtype == np.float64
    assert [list(x.items()) for x in columns] == [list(store.features(r).items()) for r in [part] + rows[:3]]


def test_due_skips_its_scan_only_while_no_live_row_can_be_due():
    """``due`` against a brute-force scan of every live row, through adds (one and many, older times too),
    removals, joins in place (a later time) and times written directly (a snapshot loaded)."""
    rng = random.Random(11)
    store = PendingStore(64)
    held, n = {}, 0

    def brute(cutoff):
        rows = [r for r in held.values() if store.time[r] <= cutoff]
        return sorted(rows, key=lambda r: (store.time[r], r))

    for step in range(400):
        op = rng.random()
        if op < 0.3 and len(held) < 60:
            key = orjson.dumps(n)
            n += 1
            held[key] = store.add(key, {"a": "x"}, t=rng.uniform(0, 100))
        elif op < 0.45 and len(held) < 50:
            keys = [orjson.dumps(n + i) for i in range(5)]
            n += 5
            rows = store.add_many(keys, [{}] * 5, t=[rng.uniform(0, 100) for _ in keys], predictions=[None] * 5,
                                  state=LABEL, labels=[1] * 5, notes=[b"note"] * 5)  # early labels
            held.update(zip(keys, rows.tolist()))
        elif op < 0.6 and held:
            key = rng.choice(list(held))
            store.remove(held.pop(key))
        elif op < 0.7 and held:
            row = held[rng.choice(list(held))]
            if store.state[row] == LABEL:
                store.joined_in_place([row], store.time[row] + rng.uniform(0, 50))
        elif op < 0.75 and held:
            row = held[rng.choice(list(held))]
            store.time[row] = rng.uniform(-20, 0)  # older than any held so far
            store.times_changed()
        cutoff = rng.uniform(-30, 120)
        due = store.due(cutoff).tolist()
        assert sorted(due, key=lambda r: (store.time[r], r)) == brute(cutoff), step
        for row in due[: rng.randrange(len(due) + 1)]:  # some callers remove what is due, some not yet
            key = next(k for k, r in held.items() if r == row)
            store.remove(held.pop(key))


def test_ids_and_notes_survive_the_arena_compacting_under_churn():
    """Early labels keep a note after their id in the arena; ids and notes read back as written while rows
    come and go and the arena is rewritten (compacted, grown) many times."""
    rng = random.Random(13)
    store = PendingStore(50)
    held, n, compactions, size = {}, 0, 0, len(store.arena)
    for step in range(600):
        if held and (len(held) >= 45 or rng.random() < 0.45):
            key = rng.choice(list(held))
            row = held.pop(key)[0]
            if rng.random() < 0.3 and store.state[row] == LABEL:  # joined in place: the note goes, the id stays
                store.joined_in_place([row], 1.0)
                held[key] = (row, b"")
            else:
                store.remove(row)
            continue
        keys = [orjson.dumps(f"id-{n + i}" * rng.randrange(1, 4)) for i in range(rng.randrange(1, 4))]
        n += len(keys)
        notes = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))) for _ in keys]
        before, added = store.arena_used, sum(map(len, keys + notes))
        if rng.random() < 0.5:
            rows = store.add_many(keys, [{}] * len(keys), t=0.0, predictions=[None] * len(keys), state=LABEL,
                                  labels=["y"] * len(keys), notes=notes).tolist()
        else:
            rows = [store.add(k, {}, t=0.0, state=LABEL, label="y", note=note) for k, note in zip(keys, notes)]
        held.update((k, (r, note)) for k, r, note in zip(keys, rows, notes))
        compactions += store.arena_used < before + added or len(store.arena) != size
        size = len(store.arena)
        for key, (row, note) in held.items():
            assert store.id_of(row) == key and store.find(key) == row
            assert store.note_of(row) == note
    assert compactions >= 5 and store.n_labels == sum(store.state[r] == LABEL for r, _ in held.values())
