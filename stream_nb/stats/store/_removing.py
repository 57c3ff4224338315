"""Taking back what learning added: the exact inverse of the additions of one event.

While :attr:`Stats.journal <stream_nb.stats.Stats.journal>` is a list, every
addition appends an entry saying exactly what it added:

==============================================  ==========================================
entry                                           added by
==============================================  ==========================================
``("count", enc, c, w)``                        :meth:`Stats.add` (class and discrete counts)
``("gauss", c, w, gslots, gx)``                 :meth:`Stats.add_gaussian` (Welford)
``("observed", enc, c, w)``                     :meth:`Stats.add_observed` (the observed-only twin)
``("expected", c, w, u, m, feats_u, J)``        :meth:`Stats.add_expected` (EM's M-step)
``("many", D, dfeats, G, gslots, yc, w, obs)``  :meth:`Stats.add_many` (KDB's M-step)
==============================================  ==========================================

:func:`remove_entries` (:meth:`Stats.remove <stream_nb.stats.Stats.remove>`) takes such entries back,
last first: the counts are
subtracted (integer counts come back exactly; EM's fractional ones within
floating-point rounding), and the Gaussian moments follow the reverse of the
weighted Welford update, back to exactly zero when a class loses its last
value. Everything is checked first: a count that would fall below zero means
the event was never learned (or was already taken back), and then nothing changes
(:func:`check_entry`). :func:`remove_rows` takes back rows of a run the same way.

These functions take the store as an argument and change it through its methods and its parts'
(the count tables', the Gaussian moments').
"""

from __future__ import annotations

import numpy as np

from ...exceptions import UnlearnError
from ..forgetting import follow_promotions
from ..selection import selected_tuple_cells

__all__ = ["check_entry", "remove_entries", "remove_rows"]

# a count may be short of the weight to remove by this much (relative) and still be taken: EM's
# fractional counts are sums of floats; integer counts are exact either way
_SLACK = 1e-9


def remove_entries(s, entries) -> None:
    """Take back ``entries`` (a journal, see the module notes) from store ``s``, last first;
    :class:`UnlearnError` and no change at all when some count would fall below zero."""
    s.check_pairs_whole()
    entries = follow_promotions(s, entries)  # a receipt of before a promotion names old columns
    for e in entries:
        check_entry(s, e)
    for e in reversed(entries):
        kind = e[0]
        if kind == "count":
            _, enc, c, w = e
            s.tables.add_class(c, -w)
            if len(enc.cols):
                for p in s.tables.sets():
                    s.count_values(p, enc.cols, enc.feats, c, -w)
        elif kind == "gauss":
            s.moments.remove(*e[1:])
        elif kind == "observed":
            _, enc, c, w = e
            s.count_values("obs_", enc.cols, enc.feats, c, -w)
        elif kind == "expected":
            _remove_expected(s, *e[1:])
        else:
            _remove_many(s, *e[1:])
    s.version += 1


# ------------------------------------------------------------------ checks


def _short(have, w, what: str) -> None:
    have = np.asarray(have, dtype=float)
    need = np.asarray(w, dtype=float)
    bad = have < need - _SLACK * np.maximum(1.0, np.abs(need))
    if np.any(bad):
        got = float(np.broadcast_to(have, bad.shape)[bad].flat[0])
        raise UnlearnError(f"{what}: the counts hold {got:g}, less than the weight to unlearn; "
                           f"this event was never learned (or was unlearned already); nothing was changed")


def _class_name(s, c: int) -> str:
    return f"class {s.classes[c]!r}"


def _value_name(s, col: int) -> str:
    f = int(s.value_feature[col])
    return f"feature {s.features[f]!r} value {s.value_keys[col]!r}"


def _check_count(s, p: str, enc, c: int, w: float) -> None:
    cols, feats = enc.cols, enc.feats
    vc = getattr(s, p + "value_count")[c, cols]
    for j, col in enumerate(cols.tolist()):
        _short(vc[j], w, f"{_value_name(s, col)} in {_class_name(s, c)}")
    _short(getattr(s, p + "feat_count")[c, feats], w, f"the features of the event in {_class_name(s, c)}")
    if s.pairs:
        held = getattr(s, p + "pair_count")[c, cols[:, None], cols[None, :]]
        if s.pairs_selected:  # the pairs still counted (stats/selection/_candidates.py)
            held = held[s.pair_mask(feats)]
        _short(held, w, f"the value pairs of the event in {_class_name(s, c)}")
    if s.tuples and s.tuples_selected:  # the candidate parents' tuples still counted
        r, cells, _ = selected_tuple_cells(s, cols[None, :], feats, np.ones((1, len(cols)), dtype=bool))
        held = getattr(s, p + "tuple_count")[(c, *cells)] if len(r) else np.empty(0)
        _short(np.ravel(held), w, f"the value tuples of the event in {_class_name(s, c)}")
    elif s.tuples:
        # every t-tuple of the event's values, gathered alike from a dense or a sparse table
        tuples = getattr(s, p + "tuple_count")[(c, *np.ix_(*([cols] * s.tuples)))]
        _short(np.ravel(tuples), w, f"the value tuples of the event in {_class_name(s, c)}")


def check_entry(s, e) -> None:
    """:class:`UnlearnError` unless the counts of store ``s`` hold what journal entry ``e`` added; ValueError for
    an entry of no known kind."""
    kind = e[0]
    if kind == "count":
        _, enc, c, w = e
        _short(s.class_count[c], w, _class_name(s, c))
        if len(enc.cols):
            for p in s.tables.sets():
                _check_count(s, p, enc, c, w)
    elif kind == "gauss":
        _, c, w, gs, _gx = e
        _short(s.g_n[c, gs], w, f"the numeric features of the event in {_class_name(s, c)}")
    elif kind == "observed":
        _, enc, c, w = e
        if len(enc.cols):
            _check_count(s, "obs_", enc, c, w)
    elif kind == "expected":
        _, c, w, u, m, _f, _J = e
        _short(s.class_count[c], w, _class_name(s, c))
        _short(s.value_count[c, u], w * m, f"the expected counts of the event in {_class_name(s, c)}")
    elif kind == "many":
        yc, w = e[5], e[6]
        C = len(s.classes)
        w = np.ones(len(yc)) if w is None else np.asarray(w, dtype=float)
        _short(s.class_count[:C], np.bincount(yc, weights=w, minlength=C), "the class counts")
    else:
        raise ValueError(f"unknown journal entry {kind!r}")


# ------------------------------------------------------------------ the reverse updates


def _remove_expected(s, c, w, u, m, feats_u, J) -> None:
    """The reverse of :meth:`add_expected`."""
    s.tables.add_class(c, -w)
    starts = np.flatnonzero(np.r_[True, feats_u[1:] != feats_u[:-1]])
    fs = feats_u[starts]
    s.tables.add_values("", c, u, -(w * m), fs, -w)
    if s.pairs:
        s.tables.add_expected_pairs(c, u, fs, -(w * J), -(w * np.add.reduceat(J, starts, axis=1)))


def _remove_many(s, D, dfeats, G, gslots, yc, w, observed) -> None:
    """The reverse of :meth:`add_many`: the discrete counts with negated weights, the Gaussian
    moments by the inverse of the pairwise merge."""
    w = np.ones(len(yc)) if w is None else np.asarray(w, dtype=float)
    empty = np.empty((len(yc), 0))
    s.add_many(D, dfeats, empty, np.empty(0, dtype=np.int64), yc, -w, observed=observed)
    s.add_gaussian_rows(G, gslots, yc, w, remove=True)


def remove_rows(s, D: np.ndarray, G: np.ndarray, yc: np.ndarray) -> None:
    """Take back rows of events learned by plain counting, weight 1 each, as :meth:`encode_run` encodes
    them (``D`` a column per feature, -1 where missing or numeric; ``G`` a column per Gaussian slot, NaN
    where missing; ``yc`` their classes): the reverse of adding them (:meth:`add_many`).

    Checked first, all at once: the counts of each class, of each (class, value) and (class, feature),
    and the Gaussian weights, must hold the rows (UnlearnError naming the first that does not, and
    nothing changed). The pair and tuple cells are those of the same rows."""
    s.check_pairs_whole()
    need = np.bincount(yc)
    short = np.flatnonzero(s.class_count[: len(need)] < need - _SLACK * need)
    if len(short):
        _too_few(_class_name(s, int(short[0])), s.class_count[short[0]], need[short[0]])
    rr, jj = np.nonzero(D >= 0)
    cc = yc[rr]
    for p in s.tables.sets():
        for what, idx, name in (("value_count", D[rr, jj], lambda col: _value_name(s, col)),
                                ("feat_count", jj, lambda f: f"feature {s.features[f]!r}")):
            _hold_cells(s, getattr(s, p + what), cc, idx, name)
    r, j = np.nonzero(~np.isnan(G))
    _hold_cells(s, s.g_n, yc[r], j, lambda g: f"the numeric feature in slot {g}")
    _remove_many(s, D, np.arange(D.shape[1]), G, np.arange(G.shape[1]), yc, None, True)
    s.version += 1


def _hold_cells(s, table: np.ndarray, cc: np.ndarray, idx: np.ndarray, name) -> None:
    """UnlearnError unless ``table[c, i]`` holds as many as the pairs ``(cc, idx)`` name each cell."""
    if not len(cc):
        return
    width = table.shape[1]
    cells, need = np.unique(cc * width + idx, return_counts=True)
    have = table[cells // width, cells % width]
    short = np.flatnonzero(have < need - _SLACK * need)
    if len(short):
        k = int(short[0])
        c, i = divmod(int(cells[k]), width)
        _too_few(f"{name(i)} in {_class_name(s, c)}", have[k], need[k])


def _too_few(what: str, have, need) -> None:
    raise UnlearnError(f"{what}: the counts hold {float(have):g}, less than the {int(need)} events to unlearn; "
                       "they were never learned (or were unlearned already); nothing was changed")
