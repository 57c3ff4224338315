"""A journal (what learning an event added, see :mod:`stream_nb.stats.store._removing`) as plain data, and back.

A receipt (``learn_one_receipt``) holds the journal of its event; a daemon
that keeps receipts (a provisional label, see :mod:`stream_nb.engine.join._join`)
writes them into its snapshots, so that a restarted daemon takes back exactly
what the event added. :class:`JournalWriter` turns journals into JSON-able
lists whose numeric arrays go into two pools (one of integers, one of floats),
referred to as ``["i" or "f", start, *shape]`` (Gaussian slots as their
features: a restored store numbers its slots in feature order, which need not be
the order they were made in); :class:`JournalReader` reads
them back, checking each entry against the store it will be taken from
(indices in range, shapes that fit, finite weights): a malformed entry is a
:class:`ValueError` naming where it is and what was expected.

Entries as JSON (``a`` an array reference, ``enc`` the list ``[a cols, a feats,
a gslots, a gx, unseen]``):

====================================================  ==========================
``["count" or "observed", enc, c, w]``                 :meth:`Stats.add`, :meth:`Stats.add_observed`
``["gauss", c, w, a gslots, a gx]``                    :meth:`Stats.add_gaussian`
``["expected", c, w, a u, a m, a feats_u, a J|null]``  :meth:`Stats.add_expected`
``["many", a D, a dfeats, a G, a gslots, a yc, w, observed]``  :meth:`Stats.add_many` (``w``: null, a number or ``a``)
``["fine", entry]``                                    the fine layer's own entry (a two-layer store)
``["waiting", waiting entry]``                         an event the two-layer store keeps (:func:`entry_json`)
====================================================  ==========================
"""

from __future__ import annotations

import math

import numpy as np

from ..._checks import is_integer
from ..discretiser import check_backlog
from ..values import Encoded
from ..discretiser import entry_json

__all__ = ["JournalReader", "JournalWriter"]


class JournalWriter:
    """Journals to JSON-able lists, their arrays gathered in two pools (:meth:`pools`)."""

    def __init__(self, store):
        self.store = store
        self._parts: dict[str, list] = {"i": [], "f": []}
        self._size = {"i": 0, "f": 0}

    def array(self, a) -> list:
        a = np.asarray(a)
        pool = "f" if a.dtype.kind == "f" else "i"
        flat = np.ascontiguousarray(a, dtype=np.float64 if pool == "f" else np.int64).ravel()
        ref = [pool, self._size[pool], *a.shape]
        self._parts[pool].append(flat)
        self._size[pool] += len(flat)
        return ref

    def pools(self) -> tuple[np.ndarray, np.ndarray]:
        """``(integers, floats)``: every array referred to, one after another."""
        ints = np.concatenate(self._parts["i"]) if self._parts["i"] else np.empty(0, dtype=np.int64)
        floats = np.concatenate(self._parts["f"]) if self._parts["f"] else np.empty(0, dtype=np.float64)
        return ints, floats

    def entries(self, entries) -> list:
        return [self.entry(entries[i]) for i in _read_back(self.store, [e[0] for e in entries])]

    def _slots(self, gs) -> list:
        """Gaussian slots ``gs``, written as their features."""
        return self.array(np.asarray(self.store.gauss_feature, dtype=np.int64)[np.asarray(gs, dtype=np.int64)])

    def entry(self, e) -> list:
        kind, a = e[0], self.array
        if kind in ("count", "observed"):
            _, enc, c, w = e
            return [kind, [a(enc.cols), a(enc.feats), self._slots(enc.gslots), a(np.asarray(enc.gx, dtype=float)),
                           bool(enc.unseen)], int(c), float(w)]
        if kind == "gauss":
            _, c, w, gs, gx = e
            return [kind, int(c), float(w), self._slots(gs), a(np.asarray(gx, dtype=float))]
        if kind == "expected":
            _, c, w, u, m, feats_u, J = e
            return [kind, int(c), float(w), a(u), a(np.asarray(m, dtype=float)), a(feats_u),
                    None if J is None else a(np.asarray(J, dtype=float))]
        if kind == "many":
            _, D, dfeats, G, gslots, yc, w, observed = e
            w = None if w is None else float(w) if np.ndim(w) == 0 else a(np.asarray(w, dtype=float))
            return [kind, a(D), a(dfeats), a(np.asarray(G, dtype=float)), self._slots(gslots), a(yc), w, bool(observed)]
        if kind == "fine":
            fine = JournalWriter(self.store.fine)
            fine._parts, fine._size = self._parts, self._size  # one pool for both layers
            return [kind, fine.entry(e[1])]
        if kind == "waiting":
            return [kind, entry_json(e[1])]
        raise ValueError(f"unknown journal entry {kind!r}")


def _read_back(store, kinds: list) -> list[int]:
    """The indices of the entries (of these ``kinds``) of a receipt that taking it back reads: all of them,
    but for a two-layer store's receipt with fine entries only those and the waiting ones (the coarse layer
    is derived again from the fine one, and a coarse entry names columns that a derivation since may have
    renumbered)."""
    if getattr(store, "fine", None) is None or "fine" not in kinds:
        return list(range(len(kinds)))
    return [i for i, kind in enumerate(kinds) if kind in ("fine", "waiting")]


class JournalReader:
    """Journals back from :class:`JournalWriter`'s lists and pools, checked against ``store``."""

    def __init__(self, ints, floats):
        ints, floats = np.asarray(ints), np.asarray(floats)
        if ints.ndim != 1 or ints.dtype.kind not in "iu":
            raise ValueError(f"the integer pool: expected a 1-d array of integers, got {ints.dtype} of {ints.ndim} dims")
        if floats.ndim != 1 or floats.dtype.kind != "f":
            raise ValueError(f"the float pool: expected a 1-d array of floats, got {floats.dtype} of {floats.ndim} dims")
        self._pools = {"i": ints.astype(np.int64), "f": floats.astype(np.float64)}

    def array(self, ref, where: str, pool: str, ndim: int, hi: int | None = None) -> np.ndarray:
        """The array ``ref`` names: of ``pool`` ("i" or "f"), ``ndim`` dimensions, integers in [0, ``hi``),
        floats finite."""
        kind = "integers" if pool == "i" else "floats"
        if not (type(ref) is list and len(ref) == 2 + ndim and ref[0] == pool  # JSON's: ints, not bools
                and all(type(v) is int and v >= 0 for v in ref[1:])):
            raise ValueError(f"{where}: expected a reference [\"{pool}\", start, {ndim} dimension(s)] to the {kind}, "
                             f"got {ref!r:.60}")
        data, start, shape = self._pools[pool], ref[1], tuple(ref[2:])
        n = math.prod(shape)
        if start + n > len(data):
            raise ValueError(f"{where}: it refers past the end of the {kind} ({start + n:,} > {len(data):,})")
        out = data[start : start + n].reshape(shape).copy()
        if pool == "i" and hi is not None and n and not (0 <= out.min() and out.max() < hi):
            raise ValueError(f"{where}: expected indices in [0, {hi}), got {int(out.min())}..{int(out.max())}")
        if pool == "f" and n and not np.isfinite(out).all():
            raise ValueError(f"{where}: expected finite numbers")
        return out

    def slots(self, ref, store, where: str) -> np.ndarray:
        """Gaussian slots written as their features (:class:`JournalWriter`), in ``store``'s numbering."""
        feats = self.array(ref, where, "i", 1, len(store.features))
        slots = np.asarray(store.gslot, dtype=np.int64)[feats] if len(feats) else feats
        if np.any(slots < 0):
            raise ValueError(f"{where}: expected Gaussian features, got {[store.features[f] for f in feats[slots < 0]]}")
        return slots

    def entries(self, js, store, where: str) -> tuple:
        if not isinstance(js, list):
            raise ValueError(f"{where}: expected a list of journal entries, got {type(js).__name__}")
        kinds = [e[0] if isinstance(e, list) and e else None for e in js]
        return tuple(self.entry(js[i], store, f"{where}[{i}]") for i in _read_back(store, kinds))

    def entry(self, e, store, where: str) -> tuple:
        kinds = ("count", "observed", "gauss", "expected", "many", "fine", "waiting")
        if not isinstance(e, list) or not e or e[0] not in kinds:
            raise ValueError(f"{where}: expected a journal entry [kind, ...], kind one of {', '.join(kinds)}")
        kind = e[0]
        C, V, F = store.n_classes, len(store.value_keys), len(store.features)
        sizes = {"count": 4, "observed": 4, "gauss": 5, "expected": 7, "many": 8, "fine": 2, "waiting": 2}
        if len(e) != sizes[kind]:
            raise ValueError(f"{where}: expected a {kind!r} entry of {sizes[kind]} items, got {len(e)}")
        if kind == "fine":
            fine = getattr(store, "fine", None)
            if fine is None:
                raise ValueError(f"{where}: a fine layer's entry, but the model's store has no fine layer")
            return ("fine", self.entry(e[1], fine, where + "[1]"))
        if kind == "waiting":
            fine = getattr(store, "fine", None)
            if fine is None:
                raise ValueError(f"{where}: a waiting event's entry, but the model's store has no fine layer")
            (got,) = check_backlog([e[1]], fine, f"{where}[1]", prefix="")
            if got[6] is None:
                raise ValueError(f"{where}[1]: expected the key a receipt knows the waiting event by (a 7th item)")
            return ("waiting", got)
        a = self.array
        if kind in ("count", "observed"):
            enc = e[1]
            if not isinstance(enc, list) or len(enc) != 5 or not isinstance(enc[4], bool):
                raise ValueError(f"{where}[1]: expected an encoding [columns, features, slots, values, unseen]")
            cols, feats = a(enc[0], f"{where}[1][0]", "i", 1, V), a(enc[1], f"{where}[1][1]", "i", 1, F)
            gs, gx = self.slots(enc[2], store, f"{where}[1][2]"), a(enc[3], f"{where}[1][3]", "f", 1)
            if len(cols) != len(feats) or len(gs) != len(gx):
                raise ValueError(f"{where}[1]: expected one feature per column and one value per slot")
            if kind == "observed" and len(cols) and not store.keeps_observed:
                raise ValueError(f"{where}: an observed-only entry, but the model's store keeps no observed-only counts")
            return (kind, Encoded(cols, feats, gs, gx, enc[4]), _class(e[2], C, where), _weight(e[3], where))
        if kind == "gauss":
            gs, gx = self.slots(e[3], store, f"{where}[3]"), a(e[4], f"{where}[4]", "f", 1)
            if len(gs) != len(gx):
                raise ValueError(f"{where}: expected one value per slot")
            return (kind, _class(e[1], C, where), _weight(e[2], where), gs, gx)
        if kind == "expected":
            u, m, fu = a(e[3], f"{where}[3]", "i", 1, V), a(e[4], f"{where}[4]", "f", 1), a(e[5], f"{where}[5]", "i", 1, F)
            if not len(u) == len(m) == len(fu):
                raise ValueError(f"{where}: expected as many indicators and features as columns")
            J = None if e[6] is None else a(e[6], f"{where}[6]", "f", 2)
            if store.pairs and (J is None or J.shape != (len(u), len(u))):
                raise ValueError(f"{where}[6]: the store keeps pairs: expected the pair indicators, "
                                 f"{len(u)} x {len(u)}")
            return (kind, _class(e[1], C, where), _weight(e[2], where), u, m, fu, J)
        D, dfeats = a(e[1], f"{where}[1]", "i", 2, V), a(e[2], f"{where}[2]", "i", 1, F)
        Gm, gslots, yc = a(e[3], f"{where}[3]", "f", 2), self.slots(e[4], store, f"{where}[4]"), a(e[5], f"{where}[5]", "i", 1, C)
        n = len(yc)
        if D.shape != (n, len(dfeats)) or Gm.shape != (n, len(gslots)):
            raise ValueError(f"{where}: expected one row of columns and of values per class, of its features and slots")
        w = e[6]
        if isinstance(w, list):
            w = a(w, f"{where}[6]", "f", 1)
            if len(w) != n:
                raise ValueError(f"{where}[6]: expected one weight per row")
        elif w is not None:
            w = _weight(w, f"{where}[6]")
        if not isinstance(e[7], bool):
            raise ValueError(f"{where}[7]: expected true or false (observed)")
        return (kind, D, dfeats, Gm, gslots, yc, w, e[7])


def _class(c, C: int, where: str) -> int:
    if not (is_integer(c) and 0 <= c < C):
        raise ValueError(f"{where}: expected a class index in [0, {C}), got {c!r:.60}")
    return int(c)


def _weight(w, where: str) -> float:
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
        raise ValueError(f"{where}: expected a finite weight, got {w!r:.60}")
    return float(w)
