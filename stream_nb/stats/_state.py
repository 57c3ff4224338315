"""The store as plain data: ``(arrays, meta)``, numpy arrays and JSON-able metadata; no pickle.

:meth:`State.state` and :meth:`State.from_state` are exact inverses; the
snapshot format (:mod:`stream_nb.snapshots`) writes and reads them.
"""

from __future__ import annotations

import typing

from ._discretise import Discretiser
from ._values import BINNED, CAT, GAUSS, VALUE_GROUPS, json_type

__all__ = ["State"]


class State:
    """Plain-data state of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    def counts(self) -> dict:
        """The counts as nested dicts keyed by names (for people and tests)."""
        out = {
            "class_count": {y: float(self.class_count[c]) for c, y in enumerate(self.classes)},
            "value_count": {},
            "gaussian": {},
        }
        for f, name in enumerate(self.features):
            if self.kinds[f] == GAUSS:
                g = self.gslot[f]
                out["gaussian"][name] = {
                    y: (float(self.g_n[c, g]), float(self.g_mean[c, g]), float(self.g_m2[c, g]))
                    for c, y in enumerate(self.classes)
                }
            else:
                out["value_count"][name] = {
                    v: {y: float(self.value_count[c, col]) for c, y in enumerate(self.classes)}
                    for v, col in self.values[f].items()
                }
        return out

    def state(self) -> tuple[dict, dict]:
        """``(arrays, meta)``: numpy arrays and JSON-able metadata, the whole store."""
        C, V, F, G = len(self.classes), len(self.value_keys), len(self.features), self.n_gauss
        arrays = {
            "class_count": self.class_count[:C].copy(),
            "value_count": self.value_count[:C, :V].copy(),
            "feat_count": self.feat_count[:C, :F].copy(),
            "g_n": self.g_n[:C, :G].copy(),
            "g_mean": self.g_mean[:C, :G].copy(),
            "g_m2": self.g_m2[:C, :G].copy(),
        }
        for p in self._sets():
            if p:
                arrays[p + "value_count"] = getattr(self, p + "value_count")[:C, :V].copy()
                arrays[p + "feat_count"] = getattr(self, p + "feat_count")[:C, :F].copy()
            if self.pairs:
                arrays[p + "pair_count"] = getattr(self, p + "pair_count")[:C, :V, :V].copy()
                arrays[p + "pair_feat"] = getattr(self, p + "pair_feat")[:C, :V, :F].copy()
            if self.tuples:
                t = self.tuples
                arrays[p + "tuple_count"] = getattr(self, p + "tuple_count")[(slice(0, C),) + (slice(0, V),) * t].copy()
                arrays[p + "tuple_feat"] = getattr(self, p + "tuple_feat")[
                    (slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)
                ].copy()
        meta = {
            "pairs": self.pairs,
            "observed": self.wants_observed,
            "tuples": self.tuples,
            "max_table_cells": self.max_table_cells,
            "numeric": self.numeric,
            "types": dict(self.types),
            "bins": self.bins,
            "warmup": self.warmup,
            "bin_edges": {k: list(map(float, v)) for k, v in self.bin_edges.items()},
            "classes": list(self.classes),
            "label_type": self.label_type,
            "features": [
                {
                    "name": name,
                    "kind": ["categorical", "gaussian", "binned"][self.kinds[f]],
                    "value_type": self.vtypes[f],
                    "values": list(self.values[f]) if self.values[f] is not None else None,
                    "discretiser": self.disc[f].state() if self.disc[f] is not None else None,
                }
                for f, name in enumerate(self.features)
            ],
            # [feature, value] per column; [-1, null] for the columns a promotion detached
            "columns": [
                [int(self.value_feature[col]), self.value_keys[col] if self.value_feature[col] >= 0 else None]
                for col in range(1, V)
            ],
            "from_int": sorted(self.from_int),
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict, meta: dict) -> typing.Self:
        s = cls(
            pairs=meta["pairs"], numeric=meta["numeric"], types=meta["types"],
            bins=meta["bins"], warmup=meta["warmup"], bin_edges=meta["bin_edges"],
            tuples=meta.get("tuples", 0), max_table_cells=meta.get("max_table_cells"),
            observed=meta.get("observed", False),
        )
        kinds = {"categorical": CAT, "gaussian": GAUSS, "binned": BINNED}
        for y in meta["classes"]:
            s._add_class(y)
        for feat in meta["features"]:
            f = s._add_feature(feat["name"], kinds[feat["kind"]])
            if feat["discretiser"] is not None:
                s._set_discretiser(f, Discretiser.from_state(feat["discretiser"]))
        for f, v in meta["columns"]:
            if f >= 0:
                s._add_value(f, v)
            else:  # a detached column: kept so that the later ones keep their place
                s._reserve(v=1)
                s.value_keys.append(None)
        s.from_int = set(meta.get("from_int", []))
        # the types of the labels and of each categorical feature's values; a state written before
        # they were kept has them from its first class and each feature's first value (_add_class, _add_value)
        if meta.get("label_type") is not None:
            if not isinstance(meta["label_type"], str):
                raise ValueError(f"label_type: expected a JSON type name, got {meta['label_type']!r}")
            s.label_type = meta["label_type"]
            s._label_ok = {type(y) for y in s.classes if json_type(y) == s.label_type}
        for f, feat in enumerate(meta["features"]):
            vt = feat.get("value_type")
            if vt is not None and s.kinds[f] == CAT:
                if vt not in VALUE_GROUPS:
                    raise ValueError(f"feature {feat['name']!r}: unknown value type {vt!r}")
                s._set_vtype(f, vt)
        C, V, F, G = len(s.classes), len(s.value_keys), len(s.features), s.n_gauss
        s.class_count[:C] = arrays["class_count"]
        if "obs_value_count" in arrays:
            s.keep_observed()
        for k in ("g_n", "g_mean", "g_m2"):
            getattr(s, k)[:C, :G] = arrays[k]
        for p in s._sets():
            getattr(s, p + "value_count")[:C, :V] = arrays[p + "value_count"]
            getattr(s, p + "feat_count")[:C, :F] = arrays[p + "feat_count"]
            if s.pairs:
                getattr(s, p + "pair_count")[:C, :V, :V] = arrays[p + "pair_count"]
                getattr(s, p + "pair_feat")[:C, :V, :F] = arrays[p + "pair_feat"]
            if s.tuples:
                t = s.tuples
                getattr(s, p + "tuple_count")[(slice(0, C),) + (slice(0, V),) * t] = arrays[p + "tuple_count"]
                getattr(s, p + "tuple_feat")[(slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)] = arrays[
                    p + "tuple_feat"
                ]
        return s
