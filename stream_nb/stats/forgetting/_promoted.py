"""A journal of before a promotion, in the store's columns of now: receipts follow promotions.

A receipt (``learn_one_receipt``) journals the value columns of its time. A
promotion (a feature of integers turned numeric by its first fraction, see
:meth:`stream_nb.stats.schema.Schema.promote`) detaches the feature's value columns and
moves their counts, by one of three rules the store records per feature in
:attr:`promoted`:

- ``"bins"``: each value's counts (pairs and tuples too) into its bin's column;
- ``"drop"``: dropped, the values becoming warm-up values of the feature's
  discretiser (fewer than ``warmup`` were seen), never counted again by this
  store (a two-layer store counts a logged event's value later, from its
  backlog: the receipt's ``waiting`` entry takes that back, see :func:`follow_waiting`);
- ``"gauss"``: into Gaussian moments (naive Bayes), each value ``x`` with its weight.

So a column of an entry is detached when the store no longer files it under
the entry's feature, and :func:`follow_promotions` rewrites it by its
feature's rule: the bin's column (the feature's edges never move once chosen,
so the bin is the one the promotion moved it to; EM's fractions for several
values of one bin are summed into one column), gone, or a Gaussian entry of
its value. Entries of after the promotion are left as they are. This needs no
version in the receipt and no log of moves: the detached columns keep their
values, and each feature is promoted at most once.
"""

from __future__ import annotations

import numpy as np

__all__ = ["follow_promotions", "follow_waiting"]


def follow_promotions(s, entries) -> list:
    """``entries`` (a journal of store ``s``) in its columns of now (see the module notes)."""
    if not s.promoted:
        return list(entries)
    out: list = []
    for e in entries:
        out.extend(_follow(s, e))
    return out


def follow_waiting(s, e: tuple) -> tuple:
    """A waiting entry (:mod:`stream_nb.stats.discretiser._waiting`) a receipt logged, in the columns of now: its
    counted columns and its EM part follow the promotions."""
    if not s.promoted:
        return e
    cols, feats, vals, c, w, exp, key = e
    new, _ = _map(s, cols, feats)
    new = cols if new is None else new
    keep = new >= 0
    if exp is not None and exp[0] == "expected":
        u, m, fu, _J, _g = _map_block(s, exp[1], exp[2], exp[3], None)
        exp = ("expected", u, m, fu)
    elif exp is not None:
        D, dfeats, _G = _map_columns(s, exp[1], exp[2])
        exp = ("many", D, dfeats, exp[3])
    return new[keep], feats[keep], vals, c, w, exp, key


def _map(s, cols: np.ndarray, feats: np.ndarray) -> tuple[np.ndarray | None, list]:
    """Columns ``cols`` (of features ``feats``) of now (None: as they are): -1 where dropped or turned
    Gaussian; and the ``(feature, value)`` of each turned Gaussian."""
    cols = np.asarray(cols, dtype=np.int64)
    moved = s.value_feature[cols] != feats
    if not moved.any():
        return None, []
    new, gauss = cols.copy(), []
    for i in np.flatnonzero(moved).tolist():
        f = int(feats[i])
        rule = s.promoted.get(f)
        if rule is None:
            continue  # not a promotion's: the removal's checks say what is wrong
        x = float(s.value_keys[cols[i]])
        if rule == "bins":
            b = s.disc[f].bin(x)
            new[i] = s.values[f].get(b) or s.schema.add_value(f, b)
        else:
            new[i] = -1
            if rule == "gauss":
                gauss.append((f, x))
    return new, gauss


def _gauss(s, c: int, w: float, f: int, x: float) -> tuple:
    return ("gauss", c, w, np.array([s.gslot[f]], dtype=np.int64), np.array([x]))


def _follow(s, e) -> list:
    kind = e[0]
    if kind in ("count", "observed"):
        _, enc, c, w = e
        new, gauss = _map(s, enc.cols, enc.feats)
        if new is None:
            return [e]
        keep = new >= 0
        out = [(kind, enc._replace(cols=new[keep], feats=enc.feats[keep]), c, w)]
        if kind == "count":  # the observed-only twin keeps no moments
            out += [_gauss(s, c, w, f, x) for f, x in gauss]
        return out
    if kind == "expected":
        _, c, w, u, m, feats_u, J = e
        u, m, feats_u, J, gauss = _map_block(s, u, m, feats_u, J)
        return [(kind, c, w, u, m, feats_u, J)] + [_gauss(s, c, w * p, f, x) for f, x, p in gauss if p > 0]
    if kind == "many":
        _, D, dfeats, G, gslots, yc, w, observed = e
        D, dfeats, extra = _map_columns(s, D, dfeats)
        if extra:  # values turned Gaussian: more columns of values for the reverse Welford updates
            G = np.hstack([np.asarray(G, dtype=float).reshape(len(yc), -1), np.column_stack([x for _, x in extra])])
            gslots = np.r_[np.asarray(gslots, dtype=np.int64), [s.gslot[f] for f, _ in extra]]
        return [(kind, D, dfeats, G, gslots, yc, w, observed)]
    return [e]


def _map_block(s, u, m, feats_u, J):
    """EM's expected columns ``u`` (indicators ``m``, features ``feats_u``, pair indicators ``J`` or None)
    of now: several values of one bin summed into one column, dropped ones gone; and the
    ``(feature, value, indicator)`` of each turned Gaussian."""
    new, gauss = _map(s, u, feats_u)
    if new is None:
        return u, m, feats_u, J, []
    gauss = [(f, x, float(m[i])) for (f, x), i in zip(gauss, np.flatnonzero(
        (new < 0) & np.array([s.promoted.get(int(f)) == "gauss" for f in feats_u])).tolist())]
    keep = np.flatnonzero(new >= 0)
    uniq, first = [], {}
    for i in keep.tolist():  # in order: each feature's columns stay together
        if int(new[i]) not in first:
            first[int(new[i])] = len(uniq)
            uniq.append(i)
    P = np.zeros((len(uniq), len(u)))
    P[[first[int(new[i])] for i in keep.tolist()], keep] = 1.0
    at = np.array(uniq, dtype=np.int64)
    return (new[at], P @ np.asarray(m, dtype=float), np.asarray(feats_u)[at],
            None if J is None else P @ np.asarray(J, dtype=float) @ P.T, gauss)


def _map_columns(s, D, dfeats) -> tuple:
    """Rows ``D`` over features ``dfeats`` in the columns of now: a dropped or Gaussian feature's column
    gone; and ``(feature, its values)`` of each turned Gaussian."""
    D = np.asarray(D, dtype=np.int64)
    keep, extra, out = [], [], D.copy()
    for j, f in enumerate(np.asarray(dfeats).tolist()):
        new, _ = _map(s, D[:, j], np.full(len(D), f))
        if new is None or (new >= 0).all():
            out[:, j] = D[:, j] if new is None else new
            keep.append(j)
        elif s.promoted.get(f) == "gauss":
            extra.append((f, np.array([float(s.value_keys[col]) for col in D[:, j].tolist()])))
    return out[:, keep], np.asarray(dfeats)[keep], extra
