"""Shared by the join tests: in-memory sources and sinks, and counts compared by name."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from stream_nb.engine import Record


class ListSource:
    def __init__(self, values, partition="in"):
        self.records = [Record(orjson.dumps(v) if not isinstance(v, bytes) else v, None, partition,
                               {"line": i + 1}, i + 1) for i, v in enumerate(values)]
        self.exhausted = False

    def poll(self, max_records, timeout):
        batch, self.records = self.records[:max_records], self.records[max_records:]
        self.exhausted = not batch
        return batch

    def commit(self, positions):
        self.committed = positions

    def seek(self, positions):
        pass

    def close(self):
        pass


class ListSink:
    def __init__(self):
        self.values = []

    def send(self, value, key=None):
        self.values.append(orjson.loads(value))

    def flush(self):
        pass

    def close(self):
        pass


def named_counts(model) -> dict:
    """Every nonzero count of the model's store keyed by names (classes, features, values; pairs too)."""
    s = model._stats
    C = s.n_classes
    name = {col: (s.features[s.value_feature[col]], s.value_keys[col])
            for col in range(1, len(s.value_keys)) if s.value_feature[col] >= 0}
    out = {("class", s.classes[c]): float(s.class_count[c]) for c in range(C)}
    for c in range(C):
        for col, nm in name.items():
            out[("value", s.classes[c], nm)] = float(s.value_count[c, col])
        if s.pairs:
            for a, na in name.items():
                for b, nb in name.items():
                    out[("pair", s.classes[c], na, nb)] = float(s.pair_count[c, a, b])
    for f, fname in enumerate(s.features):
        if s.gslot[f] >= 0:
            g = s.gslot[f]
            for c in range(C):
                out[("gauss", s.classes[c], fname)] = (float(s.g_n[c, g]), float(s.g_mean[c, g]), float(s.g_m2[c, g]))
    return {k: v for k, v in out.items() if v != 0.0 and v != (0.0, 0.0, 0.0)}


def assert_same_counts(got, want):
    a, b = named_counts(got), named_counts(want)
    assert set(a) == set(b), sorted(set(a) ^ set(b), key=repr)[:6]
    for k in b:
        assert np.allclose(a[k], b[k], rtol=1e-9, atol=1e-9), (k, a[k], b[k])
    assert got.n_learned == pytest.approx(want.n_learned)
