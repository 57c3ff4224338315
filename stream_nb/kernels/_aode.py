"""AODE and SPODE, compiled: each event of a block scored under the counts as they stand, then counted.

Both read the SPODE rooted at each observed value x_i of an event (``learners.aode.spode_terms``),

    P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i)
        = (|D_c,xi| + a) / (|D_i| + a N_i) · Π_{j≠i} (|D_c,xi,xj| + a) / (|D_c,xi; j| + a N_j),

straight from the store's count arrays. Each factor lies in [a / big, 1] (``big`` bounds every count
plus a N), so the product is taken in the linear domain, numerators and denominators apart, and logged
only after :func:`chunk` factors (never on LED-sized counts: there a SPODE costs no logarithm, AODE one
per class to sum its parents, SPODE's running scores two per candidate parent).

Denominators: for a row that observes every feature of the table, with no value never seen, the
product Π_{j≠i} (|D_c,xi; j| + a N_j) depends on (c, x_i) alone. Runs keep its inverse per class and
value in ``iden`` (:func:`den_table`), refreshing the cells of the class and values a learned row
touched, so a row's cost is one gather and multiply per (class, parent, child).

The arguments :func:`aode_block` and :func:`spode_block` share: ``D`` (rows, k), value columns of the
discrete features ``dfeats`` (-1: missing; 0: a value never seen, which counts nothing and one more value
of its feature); ``more`` (rows, F), the values each feature gained within the block by each row, its own
included, or (0, 0); ``yc``, class indices (-1: unlabelled); ``learn``: count each labelled row after
scoring it; ``C`` classes and Lidstone's ``a``; the store's ``class_count``, ``value_count``,
``feat_count``, ``n_values``, ``pair_count``, ``pair_feat`` and ``value_feature``; ``iden`` (C, V), when
``cached`` (a run, whose columns are every feature in order), the inverse denominators of the store's
counts (:func:`den_table`), kept up to date as the block is learned; ``out[r, :C]`` gets log P(c | x_r),
or with ``joint`` log P(c, x_r).
"""

from __future__ import annotations

import math

import numpy as np

from . import _common

__all__ = ["aode_block", "chunk", "count_rows", "den_table", "spode_block", "warm"]

#: Bound of every partial product (and of its inverse) in the linear domain.
_RANGE = 1e280


def chunk(total, a, most_values):
    """How many factors may be multiplied before a logarithm: every count is at most ``total`` (the
    weight learned, the block's included), so each factor ``(count + a) / (count' + a N)`` lies in
    [a / big, 1] with big = ``total`` + a ``most_values`` + 1, and numerators and denominators in
    [min(a, 1), big]; a product of that many of any of these stays within [1 / _RANGE, _RANGE]. At least 1."""
    big = total + a * most_values + 1.0
    return max(1, int(math.log(_RANGE) / math.log(big / min(a, 1.0))))


def _row(D, r, dfeats, more, grown, n_values, a, u, f, an):
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


def _rooted(value_count, pair_count, pair_feat, u, f, an, n, i, dsum, C, a, B, num, den, acc, val, lg):
    """The SPODE rooted at the row's value ``u[i]``, per class c: ``val[c, i]`` its value, or -1 with
    ``lg[c, i]`` its logarithm where the products had to be logged on the way (``num``, ``den``, ``acc``:
    scratch of C; ``dsum``: |D_i|, the events observing the root's feature)."""
    ui = u[i]
    cnt = 1
    logged = False
    for c in range(C):
        num[c] = value_count[c, ui] + a
        den[c] = dsum + an[i]
        acc[c] = 0.0
    for j in range(n):
        if j == i:
            continue
        if cnt == B:
            logged = True
            for c in range(C):
                acc[c] += math.log(num[c]) - math.log(den[c])
                num[c] = 1.0
                den[c] = 1.0
            cnt = 0
        uj, fj, anj = u[j], f[j], an[j]
        for c in range(C):
            num[c] *= pair_count[c, ui, uj] + a
            den[c] *= pair_feat[c, ui, fj] + anj
        cnt += 1
    for c in range(C):
        if logged:
            val[c, i] = -1.0
            lg[c, i] = acc[c] + math.log(num[c]) - math.log(den[c])
        else:
            val[c, i] = num[c] / den[c]


def _rooted_fast(value_count, pair_flat, u, n, idx, m, dinv, iden, C, a, V, val):
    """:func:`_rooted` of the parents ``u[idx[:m]]`` of a row that observes every feature of ``iden``
    once, with no value never seen, and at most :func:`chunk` of them: the denominators are ``dinv``
    (1 / (|D_i| + a N_i), per position) and ``iden``; four parents at a time, so that their products
    run side by side. ``u``: the row's columns, as unsigned offsets, with room for three more."""
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
            for j in range(n):
                uj = u[j]
                x0 = pair_flat[b0 + uj] + a
                x1 = pair_flat[b1 + uj] + a
                x2 = pair_flat[b2 + uj] + a
                x3 = pair_flat[b3 + uj] + a
                if j == i0:  # P(x_i | c, x_i) = 1 (padding repeats i0: its products are not read)
                    x0 = 1.0
                elif j == i1:
                    x1 = 1.0
                elif j == i2:
                    x2 = 1.0
                elif j == i3:
                    x3 = 1.0
                n0 *= x0
                n1 *= x1
                n2 *= x2
                n3 *= x3
            val[c, i0] = (n0 * iden[c, u0]) * ((value_count[c, u0] + a) * dinv[i0])
            if q0 + 1 < m:
                val[c, i1] = (n1 * iden[c, u1]) * ((value_count[c, u1] + a) * dinv[i1])
            if q0 + 2 < m:
                val[c, i2] = (n2 * iden[c, u2]) * ((value_count[c, u2] + a) * dinv[i2])
            if q0 + 3 < m:
                val[c, i3] = (n3 * iden[c, u3]) * ((value_count[c, u3] + a) * dinv[i3])


def _den_cell(pair_feat, c, col, fu, anf):
    """1 / Π_{f≠fu} (|D_c,col; f| + a N_f) over the features of ``anf`` (a N_f per feature)."""
    p = 1.0
    for g in range(anf.shape[0]):
        if g != fu:
            p *= pair_feat[c, col, g] + anf[g]
    return 1.0 / p


def den_table(pair_feat, value_feature, anf, C, V, iden):
    """Fill ``iden[:C, :V]`` (see the module notes): for each class and value column, the inverse product
    over every other feature f of ``anf`` (a N_f, the features 0 .. F-1) of |D_c,x; f| + a N_f."""
    for c in range(C):
        for col in range(1, V):
            fu = value_feature[col]
            if fu >= 0:
                iden[c, col] = _den_cell(pair_feat, c, col, fu, anf)


def _log_sum(val, lg, c, idx, m):
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
        t = _log_of(val, lg, c, idx[q])
        if t > top:
            top = t
    s = 0.0
    for q in range(m):
        s += math.exp(_log_of(val, lg, c, idx[q]) - top)
    return top + math.log(s)


def _log_of(val, lg, c, i):
    """The logarithm of the SPODE value in ``val[c, i]`` (or ``lg[c, i]`` where it is -1)."""
    v = val[c, i]
    return lg[c, i] if v < 0 else math.log(v)


def _class_sum(val, lg, i, C):
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
        t = _log_of(val, lg, c, i)
        if t > top:
            top = t
    s = 0.0
    for c in range(C):
        s += math.exp(_log_of(val, lg, c, i) - top)
    return top + math.log(s)


def _naive(value_count, feat_count, u, f, an, n, C, a, B, prior, jll):
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


def _count(class_count, value_count, feat_count, pair_flat, feat_flat, V, F, u, f, n, c, classes):
    """Add one event of class ``c`` (its observed values ``u`` of features ``f``, all their pairs, the
    diagonal included) to a count set, its pair tables flat (``V`` columns, ``F`` features); ``classes``:
    to its class count too."""
    if classes:
        class_count[c] += 1.0
    vv, ff = np.uint64(V), np.uint64(F)
    for i in range(n):
        ui = u[i]
        value_count[c, ui] += 1.0
        feat_count[c, f[i]] += 1.0
        row = np.uint64(c * V + ui)
        pb, fb = row * vv, row * ff
        for j in range(n):
            pair_flat[pb + np.uint64(u[j])] += 1.0
            feat_flat[fb + np.uint64(f[j])] += 1.0


def _observed(feat_count, fi, C):
    """|D_i|: the events (of every class) that observed feature ``fi``."""
    s = 0.0
    for c in range(C):
        s += feat_count[c, fi]
    return s


def _setup(D, more, n_values, class_count, C, a):
    """The block's chunk length and its widest row (with room for a missing super-parent's values)."""
    grown = more.shape[0] > 0
    total = float(D.shape[0])
    for c in range(C):
        total += class_count[c]
    most = 0
    for g in range(n_values.shape[0]):
        nv = n_values[g] + (more[more.shape[0] - 1, g] if grown else 0)
        if nv > most:
            most = nv
    return chunk(total, a, most + 1.0), grown


def _refresh(anf, n_values, more, r, grown, a, u, f, n, vf):
    """Before row ``r`` of a cached block: a N_f of each feature at the row, and the feature of each of the
    row's columns in ``vf`` (a copy of the store's ``value_feature``: a value the block registers has none
    there yet); whether either changed, so that the denominators must be made again."""
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


def _dinv(feat_count, f, an, n, C, dinv):
    """1 / (|D_i| + a N_i) per position of the row."""
    for i in range(n):
        dinv[i] = 1.0 / (_observed(feat_count, f[i], C) + an[i])


def _relearn(pair_feat, u, f, n, y, anf, iden):
    """The cells of ``iden`` of class ``y`` and the row's values, after the row was counted."""
    for i in range(n):
        iden[y, u[i]] = _den_cell(pair_feat, y, u[i], f[i], anf)


def _log_counts(class_count, C, a, lcc):
    """``lcc[:C]`` = log(|D_c| + a); returns |D|."""
    total = 0.0
    for c in range(C):
        total += class_count[c]
        lcc[c] = math.log(class_count[c] + a)
    return total


def _prior(lcc, total, C, a, prior):
    """``prior[:C]`` = log P̂(c) = log(|D_c| + a) - log(|D| + a C) (``_common.log_prior_row``), from ``lcc``."""
    z = math.log(total + a * C)
    for c in range(C):
        prior[c] = lcc[c] - z


def _shares(val, idx, m, C, sums, out):
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


def _finish(jll, prior, C, joint, out):
    """``out[:C]``: the row's log posterior, or with ``joint`` its joint log-likelihood log P(c, x)."""
    if joint:
        for c in range(C):
            out[c] = jll[c]
    else:
        _common.normalise_row(jll, prior, C, out)


def aode_block(D, dfeats, more, yc, learn, C, a, m_limit, class_count, value_count, feat_count, n_values,
               pair_count, pair_feat, value_feature, iden, cached, joint, out):
    """AODE: score each row of a block, then count it, in order (the arguments: the module notes).

    A value seen at least ``m_limit`` times is a parent (a value never seen only if ``m_limit`` <= 0);
    with none, the row is scored by naive Bayes over the same counts.
    """
    R, k = D.shape
    B, grown = _setup(D, more, n_values, class_count, C, a)
    u = np.empty(k + 4, dtype=np.int64)
    uu = np.empty(k + 4, dtype=np.uint64)
    f = np.empty(k + 1, dtype=np.int64)
    an = np.empty(k + 1)
    idx = np.empty(k + 4, dtype=np.int64)
    dinv = np.empty(k + 1)
    anf = np.empty(k if cached else 0)  # a N_f per feature, as iden was made
    for g in range(anf.shape[0]):
        anf[g] = a * n_values[g]
    vf = value_feature.copy() if cached else value_feature
    val = np.empty((C, k + 1))
    lg = np.empty((C, k + 1))
    num, den, acc = np.empty(C), np.empty(C), np.empty(C)
    jll = np.empty(C)
    prior = np.empty(C)
    lcc = np.empty(C)
    total = _log_counts(class_count, C, a, lcc)
    pair_flat = pair_count.reshape(-1)
    feat_flat = pair_feat.reshape(-1)
    V = pair_count.shape[1]
    for r in range(R):
        n = _row(D, r, dfeats, more, grown, n_values, a, u, f, an)
        fast = cached and n == k and k <= B
        n = abs(n)
        if cached and _refresh(anf, n_values, more, r, grown, a, u, f, n, vf):
            den_table(pair_feat, vf, anf, C, V, iden)
        _prior(lcc, total, C, a, prior)
        m = 0
        for i in range(n):
            seen = 0.0
            for c in range(C):
                seen += value_count[c, u[i]]
            if seen >= m_limit:
                idx[m] = i
                m += 1
        if m == 0:
            _naive(value_count, feat_count, u, f, an, n, C, a, B, prior, jll)
        elif fast:
            for i in range(n):
                uu[i] = u[i]
            _dinv(feat_count, f, an, n, C, dinv)
            _rooted_fast(value_count, pair_flat, uu, n, idx, m, dinv, iden, C, a, V, val)
            if not joint:  # linear values throughout: the posterior is their share, one log a class
                _shares(val, idx, m, C, jll, out[r])
            else:
                for c in range(C):
                    jll[c] = _log_sum(val, lg, c, idx, m)
        else:
            for q in range(m):
                i = idx[q]
                _rooted(value_count, pair_count, pair_feat, u, f, an, n, i, _observed(feat_count, f[i], C), C, a,
                        B, num, den, acc, val, lg)
            for c in range(C):
                jll[c] = _log_sum(val, lg, c, idx, m)
        if joint or not (fast and m > 0):
            _finish(jll, prior, C, joint, out[r])
        y = yc[r]
        if learn and y >= 0:
            _count(class_count, value_count, feat_count, pair_flat, feat_flat, V, pair_feat.shape[2], u, f, n, y, True)
            lcc[y] = math.log(class_count[y] + a)
            total += 1.0
            if cached:
                _relearn(pair_feat, u, f, n, y, anf, iden)


def spode_block(D, dfeats, more, yc, learn, C, a, p, tcols, score, loss_sum, loss_n, class_count, value_count,
                feat_count, n_values, pair_count, pair_feat, value_feature, iden, cached, joint, out):
    """SPODE: score each row of a block under the super-parent ``p`` (-1: none, naive Bayes), then count
    it, in order (the other arguments: the module notes). With ``score``, a labelled row first adds each
    candidate parent's log loss to the running scores ``loss_sum`` and ``loss_n`` (per feature), under
    the counts as they stand, as ``SPODE._score`` does before learning it. A row whose super-parent is
    missing sums it out over its values ``tcols``.
    """
    R, k = D.shape
    B, grown = _setup(D, more, n_values, class_count, C, a)
    u = np.empty(k + 4, dtype=np.int64)
    uu = np.empty(k + 4, dtype=np.uint64)
    f = np.empty(k + 1, dtype=np.int64)
    an = np.empty(k + 1)
    idx = np.empty(k + 4, dtype=np.int64)
    dinv = np.empty(k + 1)
    anf = np.empty(k if cached else 0)  # a N_f per feature, as iden was made
    for g in range(anf.shape[0]):
        anf[g] = a * n_values[g]
    vf = value_feature.copy() if cached else value_feature
    val = np.empty((C, k + 1))
    lg = np.empty((C, k + 1))
    tl = np.empty((C, tcols.shape[0]))  # a missing super-parent: the log SPODE of each of its values
    num, den, acc = np.empty(C), np.empty(C), np.empty(C)
    jll = np.empty(C)
    prior = np.empty(C)
    lcc = np.empty(C)
    total = _log_counts(class_count, C, a, lcc)
    pair_flat = pair_count.reshape(-1)
    feat_flat = pair_feat.reshape(-1)
    V = pair_count.shape[1]
    for r in range(R):
        n = _row(D, r, dfeats, more, grown, n_values, a, u, f, an)
        fast = cached and n == k and k <= B
        n = abs(n)
        if cached and _refresh(anf, n_values, more, r, grown, a, u, f, n, vf):
            den_table(pair_feat, vf, anf, C, V, iden)
        _prior(lcc, total, C, a, prior)
        y = yc[r]
        at = -1
        for i in range(n):
            if f[i] == p:
                at = i
        scored = score and y >= 0 and n > 0
        if scored:  # every candidate's SPODE; its log loss on the true class
            for i in range(n):
                idx[i] = i
            if fast:
                for i in range(n):
                    uu[i] = u[i]
                _dinv(feat_count, f, an, n, C, dinv)
                _rooted_fast(value_count, pair_flat, uu, n, idx, n, dinv, iden, C, a, V, val)
            else:
                for i in range(n):
                    _rooted(value_count, pair_count, pair_feat, u, f, an, n, i, _observed(feat_count, f[i], C), C,
                            a, B, num, den, acc, val, lg)
            for i in range(n):
                loss_sum[f[i]] -= _log_of(val, lg, y, i) - _class_sum(val, lg, i, C)
                loss_n[f[i]] += 1.0
        if p < 0:
            _naive(value_count, feat_count, u, f, an, n, C, a, B, prior, jll)
        elif at >= 0:
            if not scored:
                _rooted(value_count, pair_count, pair_feat, u, f, an, n, at, _observed(feat_count, p, C), C, a, B,
                        num, den, acc, val, lg)
            for c in range(C):
                jll[c] = _log_of(val, lg, c, at)
        else:  # the super-parent missing: summed out over its values, each a root after the row's values
            anp = a * n_values[p]
            dsum = _observed(feat_count, p, C)
            for q in range(tcols.shape[0]):
                u[n] = tcols[q]
                f[n] = p
                an[n] = anp
                _rooted(value_count, pair_count, pair_feat, u, f, an, n + 1, n, dsum, C, a, B, num, den, acc, val, lg)
                for c in range(C):
                    tl[c, q] = _log_of(val, lg, c, n)
            for c in range(C):
                top = -math.inf
                for q in range(tcols.shape[0]):
                    if tl[c, q] > top:
                        top = tl[c, q]
                s = 0.0
                for q in range(tcols.shape[0]):
                    s += math.exp(tl[c, q] - top)
                jll[c] = top + math.log(s)
        _finish(jll, prior, C, joint, out[r])
        if learn and y >= 0:
            _count(class_count, value_count, feat_count, pair_flat, feat_flat, V, pair_feat.shape[2], u, f, n, y, True)
            lcc[y] = math.log(class_count[y] + a)
            total += 1.0
            if cached:
                _relearn(pair_feat, u, f, n, y, anf, iden)


def count_rows(D, dfeats, yc, classes, class_count, value_count, feat_count, pair_count, pair_feat):
    """Add each labelled row of a block to another count set (the observed-only twin, a two-layer store's
    fine layer), as the kernels add it to the counts they read; ``classes``: its class count too."""
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
        _count(class_count, value_count, feat_count, pair_count.reshape(-1), pair_feat.reshape(-1), pair_count.shape[1],
               pair_feat.shape[2], u, f, n, yc[r], classes)


def warm(k) -> None:
    """Compile the kernels for the types the models pass."""
    C, V, F = 2, 5, 2
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    nv, vf = np.array([2, 2], dtype=np.int64), np.array([-1, 0, 0, 1, 1], dtype=np.int64)
    D = np.array([[1, 3], [2, 4]], dtype=np.int64)
    feats, yc = np.array([0, 1], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    out, iden = np.empty((2, C)), np.ones((C, V))
    k.den_table(pf, vf, np.ones(F), C, V, iden)
    for more in (np.zeros((0, 0), dtype=np.int64), np.zeros((2, F), dtype=np.int64)):
        k.aode_block(D, feats, more, yc, True, C, 1.0, 1.0, cc, vc, fc, nv, pc, pf, vf, iden, True, False, out)
        k.spode_block(D, feats, more, yc, True, C, 1.0, 0, np.array([1, 2], dtype=np.int64), True, np.zeros(F),
                      np.zeros(F), cc, vc, fc, nv, pc, pf, vf, iden, True, False, out)
    k.count_rows(D, feats, yc, False, cc, vc, fc, pc, pf)
