"""Events a two-layer store keeps until a value of theirs can be counted (see :mod:`stream_nb.stats.store._fine`).

An entry is ``(cols, feats, vals, c, w, exp, key)``: the fine columns the event
was counted with (``feats``, their features, in feature order), the numeric
values ``vals`` (``[(feature, x)]``) it could not count yet, its class and
weight, and ``exp``, what EM added for it beside its observed values:

- ``None``: an event counted as observed (:meth:`Stats.add`);
- ``("expected", u, m, feats_u)``: EM's expected counts (:meth:`Stats.add_expected`),
  ``u`` the fine columns, ``m`` their expected indicators;
- ``("many", D, dfeats, p)``: EM's completions (KDB, :meth:`Stats.add_many`),
  the rows ``D`` over features ``dfeats``, row ``r`` of weight ``w * p[r]``;

and ``key``, None or the number a receipt (``learn_one_receipt``) knows the
entry by, so that ``unlearn_one`` can take back what counting its values
added since (:func:`uncount`), or drop it while it waits.

Counting a value ``b`` of feature ``f`` later (:func:`count_later`) adds to
the counts exactly what the event would have added with ``b`` observed, its
other values as they were counted: for an observed event, the event with
``b`` minus the event without it; under EM, ``b`` joins each completion with
the completion's weight (its pairs with a missing feature's values are
``w * m``, fractional as EM's counts are), and the observed-only twin takes
the observed event with ``b``, exactly as ``missing="ignore"`` counts it.

A promotion (a feature of integers that turns numeric) detaches the feature's
value columns; :func:`follow_promotion` rewrites the entries that hold one:
the value waits (``vals``) if the feature's fine edges do not exist yet, or
its bin's column replaces the old one. An event logged while such a feature
was young (see :attr:`Waiting.candidates`) thereby becomes exactly the
backlog entry it would be had the feature been numeric from the start.
"""

from __future__ import annotations

import math

import numpy as np

from ..._checks import is_integer
from ..values import BINNED, EMPTY_FLOAT, EMPTY_INT, Encoded

__all__ = ["Waiting", "check_backlog", "check_exp", "count_later", "entry", "entry_json", "exp_json", "follow_promotion",
           "map_entry"]

#: at most this many events per ``warmup`` wait in the backlog, and as many among the candidates
BACKLOG_PER_WARMUP = 10


def entry(cols: np.ndarray, feats: np.ndarray, vals, c: int, w: float, exp=None, key=None) -> tuple:
    """An entry, its columns in feature order (however the event listed them)."""
    order = np.argsort(feats, kind="stable")
    return cols[order], feats[order], sorted(vals), int(c), float(w), exp, key


def _enc(cols: np.ndarray, feats: np.ndarray) -> Encoded:
    return Encoded(cols, feats, EMPTY_INT, EMPTY_FLOAT)


def _certain_into_expected(fine, c: int, w: float, u, m, feats_u, b: int, f: int) -> None:
    """Add to ``fine``'s counts what value ``b`` (of feature ``f``) observed adds to an event whose
    other values are expected (``u``, ``m``): the difference between EM's expected counts with
    ``b`` and without it (see :meth:`Stats.add_expected`, ``b`` a block of its own, indicator 1)."""
    fine.tables.add_values("", c, b, w, f, w)
    if not fine.pairs:
        return
    fs = np.unique(feats_u)  # the pair tables dense or sparse (past the memory budget): both add at indices
    for name, idx, weights in (("pair_count", (c, b, u), w * m), ("pair_count", (c, u, b), w * m),
                               ("pair_count", (c, b, b), w), ("pair_feat", (c, b, fs), w), ("pair_feat", (c, b, f), w),
                               ("pair_feat", (c, u, f), w * m)):
        fine.tables.add_cells(name, idx, weights)


def count_later(fine, e: tuple, add_cols: list, add_feats: list) -> tuple:
    """Count the event of entry ``e`` with its values at fine columns ``add_cols`` (features
    ``add_feats``) as well; returns the entry as it now stands (those columns counted)."""
    cols, feats, vals, c, w, exp, key = e
    new_cols = np.concatenate([cols, np.array(add_cols, dtype=np.int64)])
    new_feats = np.concatenate([feats, np.array(add_feats, dtype=np.int64)])
    if exp is None:
        fine.add(_enc(new_cols, new_feats), c, w)
        fine.add(_enc(cols, feats), c, -w)
        return new_cols, new_feats, vals, c, w, None, key
    fine.add_observed(_enc(new_cols, new_feats), c, w)
    fine.add_observed(_enc(cols, feats), c, -w)
    fine.version += 1
    if exp[0] == "expected":
        _, u, m, feats_u = exp
        for b, f in zip(add_cols, add_feats):
            _certain_into_expected(fine, c, w, u, m, feats_u, b, f)
            u, m, feats_u = np.r_[u, b], np.r_[m, 1.0], np.r_[feats_u, f]
        exp = ("expected", u.astype(np.int64), m, feats_u.astype(np.int64))
    else:
        _, D, dfeats, p = exp
        none = np.empty((len(D), 0))
        yc = np.full(len(D), c, dtype=np.int64)
        wide = np.hstack([D, np.tile(np.array(add_cols, dtype=np.int64), (len(D), 1))])
        wfeats = np.r_[dfeats, np.array(add_feats, dtype=np.int64)]
        fine.add_many(wide, wfeats, none, EMPTY_INT, yc, w * p, observed=False)
        fine.add_many(D, dfeats, none, EMPTY_INT, yc, -w * p, observed=False)
        exp = ("many", wide, wfeats, p)
    return new_cols, new_feats, vals, c, w, exp, key


def uncount(fine, then: tuple, now: tuple) -> None:
    """Take back what counting values of an entry added since it was ``then`` (it is ``now``): a
    receipt's journal holds the event as it was first counted, ``then``."""
    added = np.isin(now[1], then[1], invert=True)
    if added.any():
        count_later(fine, (*then[:4], -then[4], *then[5:]), now[0][added].tolist(), now[1][added].tolist())


def follow_promotion(entries: list, fine) -> tuple[list, list]:
    """Rewrite ``entries`` after a promotion of the fine layer (see the module notes). Returns
    ``(entries whose values all count, entries with values waiting)``, each as it now stands."""
    counted, waiting = [], []
    for e in entries:
        cols, feats, vals, c, w, exp, key = e
        moved = fine.value_feature[cols] != feats
        if exp is not None:
            e = (cols, feats, vals, c, w, _follow_exp(exp, fine), key)
        if moved.any():
            keep = ~moved
            vals = list(vals)
            new_cols = cols.copy()
            for i in np.flatnonzero(moved).tolist():
                f = int(feats[i])
                col, x, binned = _rebin(fine, f, cols[i])
                if col is not None:
                    new_cols[i] = col
                    keep[i] = True
                elif binned:
                    vals.append((f, x))
            e = entry(new_cols[keep], feats[keep], vals, c, w, e[5], key)
        (waiting if e[2] else counted).append(e)
    return counted, waiting


def _rebin(fine, f: int, col) -> tuple:
    """Value column ``col`` of feature ``f``, which a promotion made numeric: ``(the fine column of its bin
    or None while the feature has no edges yet, the value as a number, whether the feature is binned)``."""
    x = float(fine.value_keys[col])
    d = fine.disc[f] if fine.kinds[f] == BINNED else None
    if d is not None and d.edges is not None:
        b = d.bin(x)
        return fine.values[f].get(b) or fine.schema.add_value(f, b), x, True
    return None, x, d is not None


def _follow_exp(exp, fine):
    """The EM part of an entry after a promotion: a detached feature's columns to its bins, or
    dropped (its counts were dropped with the columns, as a feature in warm-up has none)."""
    if exp is None:
        return None

    if exp[0] == "expected":
        _, u, m, feats_u = exp
        vf = fine.value_feature[u]
        moved = vf != feats_u
        if not moved.any():
            return exp
        keep = ~moved
        u = u.copy()
        for i in np.flatnonzero(moved).tolist():
            col = _rebin(fine, int(feats_u[i]), u[i])[0]
            if col is not None:
                u[i] = col
                keep[i] = True
        return ("expected", u[keep], m[keep], feats_u[keep])
    _, D, dfeats, p = exp
    moved = (fine.value_feature[D] != dfeats[None, :]).any(0)
    if not moved.any():
        return exp
    keep = ~moved
    D = D.copy()
    for j in np.flatnonzero(moved).tolist():
        f = int(dfeats[j])
        d = fine.disc[f] if fine.kinds[f] == BINNED else None
        if d is not None and d.edges is not None:
            D[:, j] = [fine.values[f].get(d.bin(float(fine.value_keys[col])))
                       or fine.schema.add_value(f, d.bin(float(fine.value_keys[col]))) for col in D[:, j].tolist()]
            keep[j] = True
    return ("many", D[:, keep], dfeats[keep], p)


def map_entry(e: tuple, vmap: np.ndarray, fmap: np.ndarray, cmap: list) -> tuple:
    """Entry ``e`` of another store, in this store's columns, features and classes (a merge)."""
    cols, feats, vals, c, w, exp, _ = e  # a receipt of the other store is no receipt here
    if exp is not None and exp[0] == "expected":
        exp = ("expected", vmap[exp[1]], exp[2], fmap[exp[3]])
    elif exp is not None:
        exp = ("many", vmap[exp[1]], fmap[exp[2]], exp[3])
    return entry(vmap[cols], fmap[feats], [(int(fmap[f]), x) for f, x in vals], cmap[c], w, exp)


def entry_json(e: tuple) -> list:
    """Entry ``e`` as JSON (see :func:`check_exp` for its EM part), with the key a receipt knows it by, if any
    (receipts are kept in snapshots too, see :mod:`stream_nb.stats.forgetting._journal`)."""
    cols, feats, vals, c, w, exp, key = e
    out = [cols.tolist(), feats.tolist(), [[f, x] for f, x in vals], c, w, exp_json(exp)]
    return out if key is None else [*out, key]


def exp_json(exp):
    """The EM part of an entry as JSON (see :func:`check_exp`)."""
    if exp is None:
        return None
    if exp[0] == "expected":
        return ["expected", exp[1].tolist(), exp[2].tolist(), exp[3].tolist()]
    return ["many", exp[1].tolist(), exp[2].tolist(), exp[3].tolist()]


def check_exp(exp, fine, where: str):
    """The EM part of an entry read from a state; ValueError naming ``where`` when it does not fit."""
    if exp is None:
        return None
    V, F = len(fine.value_keys), len(fine.features)

    def ints(a, hi):
        return isinstance(a, list) and all(is_integer(v) and 0 <= v < hi for v in a)

    def weights(a):
        return isinstance(a, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                           and math.isfinite(v) and v >= 0 for v in a)

    if isinstance(exp, list) and len(exp) == 4 and exp[0] == "expected":
        _, u, m, fu = exp
        if ints(u, V) and ints(fu, F) and weights(m) and len(u) == len(m) == len(fu):
            return ("expected", np.array(u, dtype=np.int64), np.array(m, dtype=float), np.array(fu, dtype=np.int64))
    if isinstance(exp, list) and len(exp) == 4 and exp[0] == "many":
        _, D, dfeats, p = exp
        if (isinstance(D, list) and ints(dfeats, F) and weights(p) and len(D) == len(p)
                and all(ints(row, V) and len(row) == len(dfeats) for row in D)):
            return ("many", np.array(D, dtype=np.int64).reshape(len(D), len(dfeats)),
                    np.array(dfeats, dtype=np.int64), np.array(p, dtype=float))
    raise ValueError(f"{where}: expected null, [\"expected\", columns, indicators, features] or "
                     "[\"many\", rows, features, weights] of the fine layer")


def check_backlog(backlog, fine, name: str = "backlog", prefix: str = "stats.two_layer.") -> list:
    """The backlog (or the candidates) of a two-layer state as :class:`Waiting` keeps it (entries, each with
    the key a receipt knows it by, if any); ValueError naming what does not fit (``prefix + name``)."""
    if not isinstance(backlog, list):
        raise ValueError(f"{prefix}{name}: expected a list, got {type(backlog).__name__}")
    V, F, C = len(fine.value_keys), len(fine.features), fine.n_classes
    out = []
    for i, entry in enumerate(backlog):
        where = f"{prefix}{name}[{i}]" if prefix else name
        if not isinstance(entry, list) or len(entry) not in (5, 6, 7):
            raise ValueError(f"{where}: expected [columns, features, values, class, weight, EM part, receipt key]")
        cols, feats, vals, c, w = entry[:5]
        if not (isinstance(cols, list) and isinstance(feats, list) and len(cols) == len(feats)
                and all(is_integer(v) and 0 < v < V for v in cols) and all(is_integer(f) and 0 <= f < F for f in feats)):
            raise ValueError(f"{where}: expected columns and features of the fine layer, one each")
        if not isinstance(vals, list) or not all(
                isinstance(e, list) and len(e) == 2 and is_integer(e[0]) and 0 <= e[0] < F and fine.kinds[e[0]] == BINNED
                and isinstance(e[1], (int, float)) and not isinstance(e[1], bool) and math.isfinite(e[1]) for e in vals):
            raise ValueError(f"{where}: expected [binned feature, finite number] pairs")
        if not (is_integer(c) and 0 <= c < C) or not (isinstance(w, (int, float)) and math.isfinite(w) and w >= 0):
            raise ValueError(f"{where}: expected a class index and a weight >= 0")
        out.append((np.array(cols, dtype=np.int64), np.array(feats, dtype=np.int64),
                    [(int(f), float(x)) for f, x in vals], int(c), float(w),
                    check_exp(entry[5] if len(entry) >= 6 else None, fine, where + "[5]"), _key(entry, where)))
    return out


def _key(entry: list, where: str):
    """The receipt key of a waiting entry read from a state: None, or an integer >= 1."""
    key = entry[6] if len(entry) == 7 else None
    if key is not None and not (is_integer(key) and key >= 1):
        raise ValueError(f"{where}[6]: expected null or the key a receipt knows the event by (an integer >= 1)")
    return None if key is None else int(key)


class Waiting:
    """The events a two-layer store keeps until a value of theirs can be counted (see the module notes).

    It keeps entries (:func:`entry`) and the keys receipts know them by; the fine layer the
    entries are counted into is an argument of each call that reads or counts it:

    - ``backlog``: entries with values waiting for their fine edges (at most ``10 * warmup``);
    - ``candidates``: entries holding a value of a young fine feature of integers, one a
      promotion could still make wait (as many);
    - ``grown``: the fine features of integers past that point (a promotion keeps their counts);
    - ``receipts``: the last key given to an entry a receipt knows; ``counted``: ``{key: entry}``,
      the receipted entries whose values all count now (a receipt may yet take them back).

    The store calls :meth:`young` and :meth:`wait` as it learns an event, :meth:`count_ready`
    when fine edges may exist, :meth:`follow_promotion` after a promotion, :meth:`unwait` to
    take an event back, :meth:`scale` when decay scales its counts, :meth:`absorb` to merge,
    and :meth:`state` / :meth:`from_state` for its snapshots.

    Examples
    --------
    An event whose value of ``t`` the fine layer could not bin yet (its warm-up) waits, counted
    without it; once the edges exist its value is counted after all:

    >>> from stream_nb.stats import Stats
    >>> fine = Stats(pairs=False, numeric="bins", bins=4, warmup=3)
    >>> fine.bin_floats_at_once()  # t is binned from its first value on
    >>> waiting, t = Waiting(warmup=3), 0
    >>> enc = fine.encode_learn({"t": 1.0, "c": "u"}, "a")  # t has no edges yet: c alone is encoded
    >>> fine.add(enc, fine.class_of("a"))
    >>> waiting.wait(enc, [(t, 1.0)], False, 0, 1.0) is None  # kept, with no key (no receipt)
    True
    >>> len(waiting.backlog), waiting.count_ready(fine)
    (1, False)
    >>> for v in (2.0, 3.0):  # the warm-up's other values: the edges exist now
    ...     fine.add(fine.encode_learn({"t": v, "c": "u"}, "a"), 0)
    >>> waiting.count_ready(fine), waiting.backlog, float(fine.feat_count[0, t])
    (True, [], 1.0)
    """

    def __init__(self, warmup: int):
        self.warmup = int(warmup)  # the fine layer's: a young feature has fewer values than this
        self.backlog: list = []
        self.candidates: list = []
        self.grown: set = set()
        self.receipts = 0
        self.counted: dict = {}

    def young(self, fine, fenc: Encoded) -> bool:
        """Whether event ``fenc`` (in ``fine``'s columns) holds a value of a fine feature of integers that a
        promotion would now turn into warm-up values (fewer than ``warmup`` values, as :meth:`Stats.promote`
        counts them)."""
        if fine.from_int <= self.grown:
            return False  # every feature of integers past that point (once a stream is warm, every event)
        fs = [f for f in fenc.feats.tolist() if f in fine.from_int and f not in self.grown]
        if not fs:
            return False
        # each feature's values seen, summed: one read of the counts for every feature still young (a wide
        # stream's first events have hundreds), the sums of integers exact in any order
        cols = [fine.columns_of(f) for f in fs]
        lens = np.array([len(c) for c in cols], dtype=np.int64)
        seen = np.concatenate(([0], np.cumsum(fine.times_seen(np.concatenate(cols)))))
        sums = seen[np.cumsum(lens)] - seen[np.cumsum(lens) - lens]
        self.grown.update(f for f, n in zip(fs, sums.tolist()) if n >= self.warmup)
        return bool((sums < self.warmup).any())

    def has_young(self, fine) -> bool:
        """Whether a fine feature of integers may still be young (its events are logged one at a time)."""
        return bool(fine.from_int - self.grown)

    def wait(self, fenc: Encoded, unready, young: bool, c: int, w: float, exp=None, keyed: bool = False):
        """Keep event ``fenc`` (of class ``c``, weight ``w``, EM part ``exp``) if a value of it waits for
        its fine edges (``unready``, ``[(feature, value)]``: the backlog) or a promotion could make one
        wait (``young``: the candidates). ``keyed``: a receipt will know the entry, which gets the next
        key. Returns the entry kept with a key (for the receipt's journal), else None."""
        cap = BACKLOG_PER_WARMUP * self.warmup
        into = (self.backlog if unready and len(self.backlog) < cap
                else self.candidates if young and not unready and len(self.candidates) < cap else None)
        if into is None:
            return None
        key = None
        if keyed:
            self.receipts += 1
            key = self.receipts
        e = entry(fenc.cols, fenc.feats, unready, c, w, exp, key)
        into.append(e)
        return None if key is None else e

    def count_ready(self, fine) -> bool:
        """Count in ``fine`` the backlog's values whose fine edges now exist (see the module notes);
        returns whether it counted any."""
        if not self.backlog:
            return False
        keep, changed = [], False
        for e in self.backlog:
            add_c, add_f, rest = [], [], []
            for f, x in e[2]:
                d = fine.disc[f] if fine.kinds[f] == BINNED else None
                if d is None:
                    continue  # the feature is no longer binned
                if d.edges is None:
                    rest.append((f, x))
                    continue
                key = d.bin(x)
                col = fine.values[f].get(key)
                add_c.append(col if col is not None else fine.schema.add_value(f, key))
                add_f.append(f)
            if add_c:
                e = count_later(fine, e, add_c, add_f)
                changed = True
            if rest:
                keep.append(entry(e[0], e[1], rest, *e[3:]))
            elif e[6] is not None:
                self.counted[e[6]] = e  # a receipt may yet take it back
        self.backlog = keep
        return changed

    def follow_promotion(self, fine) -> None:
        """A fine feature of integers turned numeric: the waiting entries follow (:func:`follow_promotion`)."""
        counted, waiting = follow_promotion(self.backlog + self.candidates, fine)
        self.backlog = waiting
        self.candidates = counted if self.has_young(fine) else []

    def unwait(self, fine, then: tuple) -> None:
        """Unlearning the event a receipt logged as entry ``then`` (in ``fine``'s columns of now): it stops
        waiting, and what counting its values added to ``fine`` since is taken back (its first counts
        are in the receipt's journal)."""
        key = then[6]
        for lst in (self.backlog, self.candidates):
            for i, e in enumerate(lst):
                if e[6] == key:
                    del lst[i]
                    uncount(fine, then, e)
                    return
        now = self.counted.pop(key, None)
        if now is not None:
            uncount(fine, then, now)

    def scale(self, factor: float) -> None:
        """Decay scaled the counts by ``factor``: the weights of the events still waiting are scaled alike."""
        self.backlog = [(*e[:4], e[4] * factor, *e[5:]) for e in self.backlog]
        self.candidates = [(*e[:4], e[4] * factor, *e[5:]) for e in self.candidates]

    def absorb(self, other: "Waiting", fine, vmap: np.ndarray, fmap: np.ndarray, cmap: list) -> None:
        """Merge: take ``other``'s waiting entries, mapped to ``fine``'s columns, features and classes
        (:func:`map_entry`; its receipts are none here), and follow a promotion the merge made."""
        self.backlog += [map_entry(e, vmap, fmap, cmap) for e in other.backlog]
        self.candidates += [map_entry(e, vmap, fmap, cmap) for e in other.candidates]
        self.grown |= {int(fmap[f]) for f in other.grown}
        if self.candidates or self.backlog:
            self.follow_promotion(fine)  # the merge may have promoted a feature of integers

    def state(self) -> dict:
        """The entries (backlog, candidates, the features past them) and what receipts know them by (the
        last key given, the receipted entries counted since), as JSON for a store's state."""
        out = {"backlog": [entry_json(e) for e in self.backlog],
               "candidates": [entry_json(e) for e in self.candidates], "grown": sorted(self.grown)}
        if self.receipts:  # a store that gave no receipt writes the state it always wrote
            out["receipts"] = self.receipts
            out["counted"] = [entry_json(e) for e in self.counted.values()]
        return out

    @classmethod
    def from_state(cls, tl: dict, fine, warmup: int) -> "Waiting":
        """The waiting events :meth:`state` wrote (``tl``), checked against ``fine``, the fine layer they
        count into; ValueError naming what does not fit (as ``stats.two_layer.*``)."""
        out = cls(warmup)
        out.backlog = check_backlog(tl.get("backlog"), fine)
        out.candidates = check_backlog(tl.get("candidates", []), fine, "candidates")
        grown = tl.get("grown", [])
        if not isinstance(grown, list) or not all(is_integer(f) and 0 <= f < len(fine.features) for f in grown):
            raise ValueError(f"stats.two_layer.grown: expected a list of feature indices, got {grown!r:.60}")
        out.grown = set(grown)
        receipts = tl.get("receipts", 0)
        if not is_integer(receipts) or receipts < 0:
            raise ValueError(f"stats.two_layer.receipts: expected an integer >= 0, got {receipts!r:.60}")
        counted = check_backlog(tl.get("counted", []), fine, "counted")
        keys = [e[6] for e in out.backlog + out.candidates + counted if e[6] is not None]
        if any(k > receipts for k in keys) or len(set(keys)) != len(keys) or any(e[6] is None for e in counted):
            raise ValueError(f"stats.two_layer: expected receipt keys of the waiting and counted events distinct, each "
                             f"in 1..{receipts} (stats.two_layer.receipts), and one for every counted event")
        out.receipts, out.counted = int(receipts), {e[6]: e for e in counted}
        return out
