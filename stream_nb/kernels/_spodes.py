"""The SPODE values that AODE's and SPODE's kernels (:mod:`stream_nb.kernels._aode`) read, row by row.

The SPODE rooted at each observed value x_i of an event,
(|D_c,xi| + a) / (|D_i| + a N_i) · Π_{j≠i} (|D_c,xi,xj| + a) / (|D_c,xi; j| + a N_j), straight from the
store's arrays: numerators and denominators multiplied apart and logged after :func:`chunk` factors, four
parents at a time. For a complete row the product of the children's denominators depends on (c, x_i)
alone: AODE and SPODE keep it (:func:`den_table`), refreshed for the cells a learned row touched
(:func:`relearn`), multiplied in the order :func:`rooted_direct` multiplies it, so that a row scored from it
gets the same value to the last digit as one scored without it (a model restored from its state keeps
none).
"""

from __future__ import annotations

import math

import numpy as np

from . import _common

__all__ = ["chunk", "count_rows", "den_table", "warm", "weigh_rows"]

#: Bound of every partial product (and of its inverse) in the linear domain.
_RANGE = 1e280


def chunk(total, a, most_values):
    """How many factors may be multiplied before a logarithm: every count is at most ``total`` (the
    weight learned, the block's included), so each factor ``(count + a) / (count' + a N)`` lies in
    [a / big, 1] with big = ``total`` + a ``most_values`` + 1, and numerators and denominators in
    [min(a, 1), big]; a product of that many of any of these stays within [1 / _RANGE, _RANGE]. At least 1."""
    big = total + a * most_values + 1.0
    return max(1, int(math.log(_RANGE) / math.log(big / min(a, 1.0))))


def row(D, r, dfeats, more, grown, n_values, a, u, f, an):
    """The observed columns of row ``r`` into ``u``, their features into ``f`` and a N_f into ``an``
    (N_f: the feature's values, those the block gained by this row, and one more for a value never seen,
    column 0); returns how many, negated when one is column 0."""
    n = 0
    zero = False
    for j in range(D.shape[1]):
        col = D[r, j]
        if col < 0:
            continue
        fj = dfeats[j]
        nv = n_values[fj]
        if col == 0:
            nv += 1
            zero = True
        if grown:
            nv += more[r, fj]
        u[n] = col
        f[n] = fj
        an[n] = a * nv
        n += 1
    return -n if zero else n


def rooted_kept(value_count, pair_flat, u, n, idx, m, dinv, dens, C, a, V, val):
    """:func:`rooted_direct` of a row that observes every feature of ``dens`` once, with no value never
    seen, and fewer than :func:`chunk` of them, to the last digit: the denominators are ``dinv``
    (1 / (|D_i| + a N_i), per position) and the kept products ``dens``; four parents at a time, so that
    their products run side by side. ``u``: the row's columns, as unsigned offsets; ``idx`` with room for
    three more."""
    vv = np.uint64(V)
    for q in range(m, m + 3):
        idx[q] = idx[0]
    for c in range(C):
        base = np.uint64(c) * vv * vv
        for q0 in range(0, m, 4):
            i0, i1, i2, i3 = idx[q0], idx[q0 + 1], idx[q0 + 2], idx[q0 + 3]
            u0, u1, u2, u3 = u[i0], u[i1], u[i2], u[i3]
            b0, b1, b2, b3 = base + u0 * vv, base + u1 * vv, base + u2 * vv, base + u3 * vv
            n0, n1, n2, n3 = 1.0, 1.0, 1.0, 1.0
            for j in range(n):  # P(x_i | c, x_i) = 1, chosen without a branch (padding repeats i0: not read)
                uj = u[j]
                n0 *= 1.0 if j == i0 else pair_flat[b0 + uj] + a
                n1 *= 1.0 if j == i1 else pair_flat[b1 + uj] + a
                n2 *= 1.0 if j == i2 else pair_flat[b2 + uj] + a
                n3 *= 1.0 if j == i3 else pair_flat[b3 + uj] + a
            val[c, i0] = (n0 * (value_count[c, u0] + a)) / (dens[c, u0] / dinv[i0])  # as _put divides
            if q0 + 1 < m:
                val[c, i1] = (n1 * (value_count[c, u1] + a)) / (dens[c, u1] / dinv[i1])  # as _put divides
            if q0 + 2 < m:
                val[c, i2] = (n2 * (value_count[c, u2] + a)) / (dens[c, u2] / dinv[i2])  # as _put divides
            if q0 + 3 < m:
                val[c, i3] = (n3 * (value_count[c, u3] + a)) / (dens[c, u3] / dinv[i3])  # as _put divides


def rooted_direct(value_count, pair_flat, feat_flat, u, f, an, n, idx, m, dinv, C, a, V, F, B, val, lg):
    """The SPODEs rooted at the row's values ``u[idx[:m]]``, four at a time (so that their products run side
    by side), numerators and denominators multiplied as they go: per class c, ``val[c, i]`` the value of the
    one rooted at ``u[i]``, or -1 with ``lg[c, i]`` its logarithm where the products were logged every
    ``B`` factors (:func:`chunk`; a row of fewer than ``B`` values never is). ``u`` and ``f``: the row's
    columns and features as unsigned offsets; ``idx`` with room for three more."""
    vv, ff = np.uint64(V), np.uint64(F)
    for q in range(m, m + 3):
        idx[q] = idx[0]
    for c in range(C):
        row = np.uint64(c) * vv
        for q0 in range(0, m, 4):
            i0, i1, i2, i3 = idx[q0], idx[q0 + 1], idx[q0 + 2], idx[q0 + 3]
            u0, u1, u2, u3 = u[i0], u[i1], u[i2], u[i3]
            r0, r1, r2, r3 = row + u0, row + u1, row + u2, row + u3
            b0, b1, b2, b3 = r0 * vv, r1 * vv, r2 * vv, r3 * vv
            e0, e1, e2, e3 = r0 * ff, r1 * ff, r2 * ff, r3 * ff
            n0, n1, n2, n3 = 1.0, 1.0, 1.0, 1.0
            d0, d1, d2, d3 = 1.0, 1.0, 1.0, 1.0
            l0, l1, l2, l3 = 0.0, 0.0, 0.0, 0.0
            cnt = 1  # the joint factor, multiplied in last
            for j in range(n):
                if cnt == B:  # products as long as a double holds: logged, and begun again
                    l0 += math.log(n0) - math.log(d0)
                    l1 += math.log(n1) - math.log(d1)
                    l2 += math.log(n2) - math.log(d2)
                    l3 += math.log(n3) - math.log(d3)
                    n0, n1, n2, n3 = 1.0, 1.0, 1.0, 1.0
                    d0, d1, d2, d3 = 1.0, 1.0, 1.0, 1.0
                    cnt = 1
                uj, fj, anj = u[j], f[j], an[j]
                x0, y0 = pair_flat[b0 + uj] + a, feat_flat[e0 + fj] + anj
                x1, y1 = pair_flat[b1 + uj] + a, feat_flat[e1 + fj] + anj
                x2, y2 = pair_flat[b2 + uj] + a, feat_flat[e2 + fj] + anj
                x3, y3 = pair_flat[b3 + uj] + a, feat_flat[e3 + fj] + anj
                if j == i0:  # P(x_i | c, x_i) = 1 (padding repeats i0: its products are not read)
                    x0, y0 = 1.0, 1.0
                elif j == i1:
                    x1, y1 = 1.0, 1.0
                elif j == i2:
                    x2, y2 = 1.0, 1.0
                elif j == i3:
                    x3, y3 = 1.0, 1.0
                n0 *= x0
                n1 *= x1
                n2 *= x2
                n3 *= x3
                d0 *= y0
                d1 *= y1
                d2 *= y2
                d3 *= y3
                cnt += 1
            logged = n >= B
            _put(val, lg, c, i0, n0 * (value_count[c, u0] + a), d0 / dinv[i0], l0, logged)
            if q0 + 1 < m:
                _put(val, lg, c, i1, n1 * (value_count[c, u1] + a), d1 / dinv[i1], l1, logged)
            if q0 + 2 < m:
                _put(val, lg, c, i2, n2 * (value_count[c, u2] + a), d2 / dinv[i2], l2, logged)
            if q0 + 3 < m:
                _put(val, lg, c, i3, n3 * (value_count[c, u3] + a), d3 / dinv[i3], l3, logged)


def rooted_chosen(value_count, pair_flat, feat_flat, feat_count, u, f, an, n, idx, m, dinv, children, C, a, V, F, B,
                  val, lg):
    """:func:`rooted_direct` where each SPODE conditions on its super-parent only the children it was chosen
    for: ``children[g, h]`` (K, K), nonzero where feature h is a child of super-parent g given its value;
    any other attribute (a feature of both below K) is estimated given the class alone,
    (|D_c,xj| + a) / (|D_c; j| + a N_j), as naive Bayes does. One SPODE at a time, logged every ``B`` factors
    as :func:`rooted_direct` logs them."""
    K = children.shape[0]
    for c in range(C):
        for q in range(m):
            i = idx[q]
            ui, fi = u[i], f[i]
            prow = (c * V + ui) * V
            frow = (c * V + ui) * F
            num, den, logs = 1.0, 1.0, 0.0
            cnt = 1  # the joint factor, multiplied in last
            for j in range(n):
                if j == i:
                    continue
                if cnt == B:
                    logs += math.log(num) - math.log(den)
                    num, den, cnt = 1.0, 1.0, 1
                uj, fj = u[j], f[j]
                if fi < K and fj < K and children[fi, fj] == 0:
                    num *= value_count[c, uj] + a
                    den *= feat_count[c, fj] + an[j]
                else:
                    num *= pair_flat[prow + uj] + a
                    den *= feat_flat[frow + fj] + an[j]
                cnt += 1
            _put(val, lg, c, i, num * (value_count[c, ui] + a), den / dinv[i], logs, n >= B)


def _put(val, lg, c, i, num, den, logs, logged):
    """``val[c, i]`` = num / den, or (``logged``) -1 with ``lg[c, i]`` = ``logs`` + log num - log den."""
    if logged:
        val[c, i] = -1.0
        lg[c, i] = logs + math.log(num) - math.log(den)
    else:
        val[c, i] = num / den


def spodes(value_count, pair_flat, feat_flat, u, f, an, n, idx, m, C, a, V, F, B, feat_count, fast, dens, uu, fu,
           dinv, val, lg):
    """``val[:C, idx[:m]]`` (and ``lg``): the SPODEs rooted at the row's values ``idx[:m]``, from the kept
    denominators ``dens`` when ``fast`` (a complete row of fewer than ``B`` values), else
    :func:`rooted_direct`."""
    for i in range(n):
        uu[i] = u[i]
        fu[i] = f[i]
    inverse_dens(feat_count, f, an, n, C, dinv)
    if fast:
        rooted_kept(value_count, pair_flat, uu, n, idx, m, dinv, dens, C, a, V, val)
    else:
        rooted_direct(value_count, pair_flat, feat_flat, uu, fu, an, n, idx, m, dinv, C, a, V, F, B, val, lg)


def den_cell(pair_feat, c, col, fu, anf):
    """Π_{f≠fu} (|D_c,col; f| + a N_f) over the features of ``anf`` (a N_f per feature), in feature order
    from 1.0, as :func:`rooted_direct` multiplies a complete row's denominators (its factor 1.0 at fu is
    exact)."""
    p = 1.0
    for g in range(anf.shape[0]):
        if g != fu:
            p *= pair_feat[c, col, g] + anf[g]
    return p


def den_table(pair_feat, value_feature, anf, C, V, dens):
    """Fill ``dens[:C, :V]`` (see the module notes): for each class and value column, the product over
    every other feature f of ``anf`` (a N_f, the features 0 .. F-1) of |D_c,x; f| + a N_f."""
    for c in range(C):
        for col in range(1, V):
            fu = value_feature[col]
            if fu >= 0:
                dens[c, col] = den_cell(pair_feat, c, col, fu, anf)


def log_sum(val, lg, c, idx, m):
    """log Σ over the columns ``idx[:m]`` of row ``c`` of the values ``val`` (or, where -1, exp ``lg``)."""
    s = 0.0
    linear = True
    for q in range(m):
        v = val[c, idx[q]]
        if v < 0:
            linear = False
            break
        s += v
    if linear:
        return math.log(s)
    top = -math.inf
    for q in range(m):
        t = log_of(val, lg, c, idx[q])
        if t > top:
            top = t
    s = 0.0
    for q in range(m):
        s += math.exp(log_of(val, lg, c, idx[q]) - top)
    return top + math.log(s)


def log_of(val, lg, c, i):
    """The logarithm of the SPODE value in ``val[c, i]`` (or ``lg[c, i]`` where it is -1)."""
    v = val[c, i]
    return lg[c, i] if v < 0 else math.log(v)


def class_sum(val, lg, i, C):
    """log Σ_c of the SPODE values of column ``i`` (the normaliser of the SPODE rooted at ``u[i]``)."""
    s = 0.0
    linear = True
    for c in range(C):
        v = val[c, i]
        if v < 0:
            linear = False
            break
        s += v
    if linear:
        return math.log(s)
    top = -math.inf
    for c in range(C):
        t = log_of(val, lg, c, i)
        if t > top:
            top = t
    s = 0.0
    for c in range(C):
        s += math.exp(log_of(val, lg, c, i) - top)
    return top + math.log(s)


def naive_row(value_count, feat_count, u, f, an, n, C, a, B, prior, jll):
    """``jll[:C]`` = log P̂(c) + Σ_i log (|D_c,xi| + a) / (|D_c; i| + a N_i) (naive Bayes over the same counts)."""
    for c in range(C):
        num = 1.0
        den = 1.0
        acc = prior[c]
        cnt = 0
        for i in range(n):
            if cnt == B:
                acc += math.log(num) - math.log(den)
                num = 1.0
                den = 1.0
                cnt = 0
            num *= value_count[c, u[i]] + a
            den *= feat_count[c, f[i]] + an[i]
            cnt += 1
        jll[c] = acc + math.log(num) - math.log(den)


def count_event(class_count, value_count, feat_count, pair_flat, feat_flat, V, F, u, f, n, c, w, classes):
    """Add one event of class ``c`` with weight ``w`` (its observed values ``u`` of features ``f``, all their
    pairs, the diagonal included) to a count set, its pair tables flat (``V`` columns, ``F`` features);
    ``classes``: to its class count too. Empty pair tables (a fine layer whose pairs are its coarse layer's):
    no pairs."""
    if classes:
        class_count[c] += w
    vv, ff = np.uint64(V), np.uint64(F)
    pairs = pair_flat.shape[0] > 0
    for i in range(n):
        ui = u[i]
        value_count[c, ui] += w
        feat_count[c, f[i]] += w
        if not pairs:
            continue
        row = np.uint64(c * V + ui)
        pb, fb = row * vv, row * ff
        for j in range(n):
            pair_flat[pb + np.uint64(u[j])] += w
            feat_flat[fb + np.uint64(f[j])] += w


def observed(feat_count, fi, C):
    """|D_i|: the events (of every class) that observed feature ``fi``."""
    s = 0.0
    for c in range(C):
        s += feat_count[c, fi]
    return s


def block_setup(D, more, n_values, class_count, C, a, weights, a_hi):
    """The block's chunk length and its widest row (with room for a missing super-parent's values). Under
    decay the rows add ``weights`` (else 1 each) and their smoothing runs from ``a`` up to ``a_hi``."""
    grown = more.shape[0] > 0
    total = float(D.shape[0])
    if weights.shape[0]:
        total = 0.0
        for r in range(weights.shape[0]):
            total += weights[r]
    for c in range(C):
        total += class_count[c]
    most = 0
    for g in range(n_values.shape[0]):
        nv = n_values[g] + (more[more.shape[0] - 1, g] if grown and g < more.shape[1] else 0)  # (spare room)
        if nv > most:
            most = nv
    return chunk(total + (a_hi - a) * (most + 1.0), a, most + 1.0), grown


def refresh(anf, n_values, more, r, grown, a, u, f, n, vf):
    """Before row ``r`` of a cached block that registers values: a N_f of each feature at the row, and the
    feature of each of the row's columns in ``vf`` (a copy of the store's ``value_feature``: a value the
    block registers has none there yet); whether either changed, so that the denominators must be made
    again. (A block that registers none meets only values the store holds, as ``dens`` was made.)"""
    changed = False
    for g in range(anf.shape[0]):
        v = a * (n_values[g] + (more[r, g] if grown else 0))
        if v != anf[g]:
            anf[g] = v
            changed = True
    for i in range(n):
        if u[i] > 0 and vf[u[i]] != f[i]:
            vf[u[i]] = f[i]
            changed = True
    return changed


def inverse_dens(feat_count, f, an, n, C, dinv):
    """1 / (|D_i| + a N_i) per position of the row."""
    for i in range(n):
        dinv[i] = 1.0 / (observed(feat_count, f[i], C) + an[i])


def relearn(pair_feat, u, f, n, y, anf, dens):
    """The cells of ``dens`` of class ``y`` and the row's values, after the row was counted."""
    for i in range(n):
        dens[y, u[i]] = den_cell(pair_feat, y, u[i], f[i], anf)


def log_counts(class_count, C, a, lcc):
    """``lcc[:C]`` = log(|D_c| + a); returns |D|."""
    total = 0.0
    for c in range(C):
        total += class_count[c]
        lcc[c] = math.log(class_count[c] + a)
    return total


def prior_row(lcc, total, C, a, prior):
    """``prior[:C]`` = log P̂(c) = log(|D_c| + a) - log(|D| + a C) (``_common.log_prior_row``), from ``lcc``."""
    z = math.log(total + a * C)
    for c in range(C):
        prior[c] = lcc[c] - z


def shares(val, idx, m, C, sums, out):
    """``out[:C]`` = log of each class's share of Σ over the parents ``idx[:m]`` of ``val`` (all linear)."""
    z = 0.0
    for c in range(C):
        t = 0.0
        for q in range(m):
            t += val[c, idx[q]]
        sums[c] = t
        z += t
    lz = math.log(z)
    for c in range(C):
        out[c] = math.log(sums[c]) - lz


def finish(jll, prior, C, joint, out):
    """``out[:C]``: the row's log posterior, or with ``joint`` its joint log-likelihood log P(c, x)."""
    if joint:
        for c in range(C):
            out[c] = jll[c]
    else:
        _common.normalise_row(jll, prior, C, out)


def count_rows(D, dfeats, yc, classes, class_count, value_count, feat_count, pair_count, pair_feat):
    """Add each labelled row of a block to another count set (the observed-only twin, a two-layer store's
    fine layer), as the kernels add it to the counts they read; ``classes``: its class count too."""
    weigh_rows(D, dfeats, yc, np.zeros(0), classes, class_count, value_count, feat_count, pair_count, pair_feat)


def weigh_rows(D, dfeats, yc, w, classes, class_count, value_count, feat_count, pair_count, pair_feat):
    """:func:`count_rows` with weight ``w[r]`` for row ``r`` (empty: 1 each; decay)."""
    k = D.shape[1]
    u = np.empty(k, dtype=np.int64)
    f = np.empty(k, dtype=np.int64)
    for r in range(D.shape[0]):
        if yc[r] < 0:
            continue
        n = 0
        for j in range(k):
            if D[r, j] >= 0:
                u[n] = D[r, j]
                f[n] = dfeats[j]
                n += 1
        count_event(class_count, value_count, feat_count, pair_count.reshape(-1), pair_feat.reshape(-1),
                    pair_count.shape[1], pair_feat.shape[2], u, f, n, yc[r], 1.0 if w.shape[0] == 0 else w[r],
                    classes)


def warm(k) -> None:
    """The helpers compile with the kernels that call them (``_aode.warm`` calls ``den_table`` and
    ``count_rows``, which the models call directly)."""
