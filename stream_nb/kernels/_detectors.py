"""River's named drift detectors, compiled: twins whose outputs equal river's on the same inputs.

A detector is five values, so that a model's kernel can feed it each error in its own loop
(:func:`detector_update`) and a block of errors at once (:func:`detector_feed`):

``kind``
    the detector (:data:`DETECTOR_KINDS`);
``params``
    float64, fixed at creation: river's parameters and the numbers river derives from them,
    computed in Python as river computes them (``stream_nb.learners`` builds them from a river detector);
``state``
    float64: ``state[DRIFT]`` and ``state[WARNING]`` are river's ``drift_detected`` and
    ``warning_detected`` after the last update (1.0 or 0.0), then the detector's own numbers;
``fbuf``, ``ibuf``
    float64 and int64 buffers of a size fixed by the parameters (empty where none is needed).

:func:`detector_new` makes ``state``, ``fbuf`` and ``ibuf`` of a fresh detector. As in river, a drift
resets the detector at its next update. ``params`` by kind:

- ADWIN: ``delta, clock, max_buckets, min_window_length, grace_period``; buckets in ``fbuf``
  (:data:`LEVELS` levels of ``max_buckets + 1`` totals, then as many variances), their fill in ``ibuf``;
- DDM: ``warm_start, warning_threshold, drift_threshold``;
- EDDM: ``warm_start, alpha, beta, 0.5`` (the exponent of river's ``var ** 0.5``, so that it is libm's ``pow``);
- HDDM_A: ``two_sided_test, log(1/drift_confidence), log(2/drift_confidence), log(2/warning_confidence)``;
- HDDM_W: ``two_sided_test, lambda_val, 1 - lambda_val, lambda_val**2, (1 - lambda_val)**2,
  log(1/drift_confidence), log(1/warning_confidence)``;
- FHDDM: ``sliding_window_size, epsilon, short_window_size (0: none), epsilon_s``; the window in ``fbuf``;
- PageHinkley: ``min_instances, delta, threshold, alpha, mode`` (0 both, 1 up, 2 down);
- KSWIN: ``alpha, window_size, stat_size, reseed (1: river reseeds its generator after a drift), pool``
  (1: ``random.sample`` draws from a pool, 0: from a set), the p-values of scipy's ``ks_2samp`` for the
  statistic ``h / stat_size``, ``h = 0 .. stat_size``, and the 625 words of a ``random.Random`` state
  (``getstate()[1]``); the window and two samples in ``fbuf``; the generator and ``random.sample``'s
  pool in ``ibuf`` (CPython's Mersenne Twister and ``random.sample``: river's samples).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["DETECTOR_KINDS", "DRIFT", "LEVELS", "WARNING", "detector_feed", "detector_new", "detector_update",
           "warm"]

ADWIN, DDM, EDDM, HDDM_A, HDDM_W, FHDDM, PAGE_HINKLEY, KSWIN = range(8)

#: The detectors by the names ``drift_detector=`` takes, as ``kind``.
DETECTOR_KINDS = {"adwin": ADWIN, "ddm": DDM, "eddm": EDDM, "hddm_a": HDDM_A, "hddm_w": HDDM_W, "fhddm": FHDDM,
                  "page_hinkley": PAGE_HINKLEY, "kswin": KSWIN}

DRIFT, WARNING = 0, 1

#: ADWIN's bucket levels (level i holds buckets of 2**i values): more than any stream fills.
LEVELS = 62

_MT = 625  # Mersenne Twister: 624 words and the position
_KS_P = 5  # KSWIN: where its p-values start in params


def detector_new(kind, params):
    """``(state, fbuf, ibuf)`` of a fresh detector ``kind`` with ``params``."""
    ns, nf, ni = 2, 0, 0
    if kind == ADWIN:
        ns, nf, ni = 7, 2 * LEVELS * (int(params[2]) + 1), LEVELS
    elif kind == DDM:
        ns = 7
    elif kind == EDDM:
        ns = 9
    elif kind == HDDM_A:
        ns = 8
    elif kind == HDDM_W:
        ns = 19
    elif kind == FHDDM:
        ns, nf = 7, int(params[0])
    elif kind == PAGE_HINKLEY:
        ns = 8
    elif kind == KSWIN:
        W, r = int(params[1]), int(params[2])
        ns, nf, ni = 6, W + 2 * r, _MT + W - r
    state, fbuf, ibuf = np.zeros(ns), np.zeros(nf), np.zeros(ni, dtype=np.int64)
    if kind == KSWIN:
        _kswin_seed(params, ibuf)
    _reset(kind, params, state, fbuf, ibuf)
    return state, fbuf, ibuf


def detector_update(kind, params, state, fbuf, ibuf, x):
    """Feed the detector one value ``x`` (an error: 0.0 or 1.0); whether it detects a drift
    (``state[DRIFT]``; ``state[WARNING]``: a warning)."""
    if state[DRIFT] != 0.0:  # river resets a detector that drifted on its next update
        _reset(kind, params, state, fbuf, ibuf)
    if kind == ADWIN:
        _adwin(params, state, fbuf, ibuf, x)
    elif kind == DDM:
        _ddm(params, state, x)
    elif kind == EDDM:
        _eddm(params, state, x)
    elif kind == HDDM_A:
        _hddm_a(params, state, x)
    elif kind == HDDM_W:
        _hddm_w(params, state, x)
    elif kind == FHDDM:
        _fhddm(params, state, fbuf, x)
    elif kind == PAGE_HINKLEY:
        _page_hinkley(params, state, x)
    else:
        _kswin(params, state, fbuf, ibuf, x)
    return state[DRIFT] != 0.0


def detector_feed(kind, params, state, fbuf, ibuf, xs):
    """Feed the values ``xs`` in order up to the first drift: its index in ``xs`` (-1: none)."""
    for i in range(xs.shape[0]):
        if detector_update(kind, params, state, fbuf, ibuf, xs[i]):
            return i
    return -1


def _reset(kind, params, state, fbuf, ibuf):
    """The state of a fresh detector (river's ``_reset``)."""
    state[:] = 0.0
    if kind == ADWIN:
        fbuf[:] = 0.0
        ibuf[:] = 0
        state[6] = 1.0  # levels in use
    elif kind == DDM:
        state[6] = math.inf
    elif kind == EDDM:
        state[8] = -1.0
    elif kind == HDDM_W:
        state[2], state[3] = math.inf, -math.inf
        for s in range(4, 19, 3):
            _sample_clear(state, s)
    elif kind == PAGE_HINKLEY:
        state[6], state[7] = math.inf, -1.0
    elif kind == KSWIN and params[3] != 0.0:
        _kswin_seed(params, ibuf)


def _mean_add(state, i, x):
    """river's ``stats.Mean.update(x)`` of the mean whose count is ``state[i]`` and value ``state[i + 1]``."""
    n = state[i] + 1.0
    state[i] = n
    state[i + 1] += (1.0 / n) * (x - state[i + 1])


# ------------------------------------------------------------------ DDM, EDDM, PageHinkley


def _ddm(params, state, x):
    """river.drift.binary.DDM; state: n, mean, p_min, s_min, ps_min."""
    _mean_add(state, 2, x)
    n, p = state[2], state[3]
    s = math.sqrt(p * (1 - p) / n)
    if n > params[0]:
        if p + s <= state[6]:
            state[4], state[5] = p, s
            state[6] = state[4] + state[5]
        state[WARNING] = 1.0 if p + s > state[4] + params[1] * state[5] else 0.0
        if p + s > state[4] + params[2] * state[5]:
            state[DRIFT], state[WARNING] = 1.0, 0.0


def _eddm(params, state, x):
    """river.drift.binary.EDDM; state: n, last error, errors, the distances' count, mean and sum of squares,
    the largest mean + 2 sd."""
    n = state[2] + 1.0
    state[2] = n
    if x == 1:
        state[4] += 1.0
        d, old = n - state[3], state[6]
        _mean_add(state, 5, d)
        state[7] += 1.0 * (d - old) * (d - state[6])
        if n > params[0]:
            var = state[7] / (state[5] - 1) if state[5] > 1 else 0.0
            p2s = state[6] + 2 * var ** params[3]
            if p2s > state[8]:
                state[8] = p2s
            elif state[4] > params[0]:
                level = p2s / state[8]
                if level < params[2]:
                    state[DRIFT] = 1.0
                elif level < params[1]:
                    state[WARNING] = 1.0
                else:
                    state[WARNING] = 0.0
        state[3] = n


def _page_hinkley(params, state, x):
    """river.drift.PageHinkley; state: n, mean, the two sums, their extremes."""
    _mean_add(state, 2, x)
    dev = x - state[3]
    state[4] = params[3] * state[4] + dev - params[1]
    state[5] = params[3] * state[5] + dev + params[1]
    if state[4] < state[6]:
        state[6] = state[4]
    if state[5] > state[7]:
        state[7] = state[5]
    if state[2] >= params[0]:
        up, down = state[4] - state[6] > params[2], state[7] - state[5] > params[2]
        mode = params[4]
        state[DRIFT] = 1.0 if (up if mode == 1 else down if mode == 2 else up or down) else 0.0


# ------------------------------------------------------------------ HDDM_A, HDDM_W


def _hddm_a(params, state, x):
    """river.drift.binary.HDDMA; state: the global mean, the cut points for an increase and a decrease
    (count and mean each)."""
    _mean_add(state, 2, x)
    if state[4] == 0:
        state[4], state[5] = state[2], state[3]
    if state[6] == 0:
        state[6], state[7] = state[2], state[3]
    eps_z = math.sqrt(1.0 / (2 * state[2]) * params[1])
    eps_x = math.sqrt(1.0 / (2 * state[4]) * params[1])
    if state[5] + eps_x >= state[3] + eps_z:
        state[4], state[5] = state[2], state[3]
    eps_x = math.sqrt(1.0 / (2 * state[6]) * params[1])
    if state[7] - eps_x <= state[3] - eps_z:
        state[6], state[7] = state[2], state[3]
    if _hddm_a_moved(state, 4, params[2]):
        state[WARNING], state[DRIFT] = 0.0, 1.0
    elif _hddm_a_moved(state, 4, params[3]):
        state[WARNING], state[DRIFT] = 1.0, 0.0
    else:
        state[WARNING], state[DRIFT] = 0.0, 0.0
    if params[0] != 0.0:
        if _hddm_a_moved(state, 6, params[2]):
            state[DRIFT] = 1.0
        elif _hddm_a_moved(state, 6, params[3]):
            state[WARNING] = 1.0


def _hddm_a_moved(state, cut, log_conf):
    """Whether the mean moved away from the cut point at ``state[cut]`` (up from the increase's, down from
    the decrease's) by more than the bound at ``log(2 / confidence)``."""
    n, m = state[cut], state[cut + 1]
    if n == state[2]:
        return False
    b = (state[2] - n) / n * (1.0 / state[2])
    eps = math.sqrt(b / 2 * log_conf)
    return (state[3] - m if cut == 4 else m - state[3]) >= eps


def _sample_clear(state, s):
    """A fresh ``SampleInfo`` of HDDM_W at ``state[s:s + 3]``: its mean, whether it has a value, its bound."""
    state[s], state[s + 1], state[s + 2] = 0.0, 0.0, 1.0


def _sample_add(params, state, s, x):
    """``SampleInfo.update(x)``: river's exponentially weighted mean, then the bound."""
    state[s] = x if state[s + 1] == 0.0 else params[1] * x + params[2] * state[s]
    state[s + 1] = 1.0
    state[s + 2] = params[3] + params[4] * state[s + 2]


def _hddm_w_changed(state, s1, s2, log_conf):
    """Whether sample ``s2``'s mean exceeds sample ``s1``'s by more than McDiarmid's bound."""
    if state[s1 + 1] == 0.0 or state[s2 + 1] == 0.0:
        return False
    bound = math.sqrt((state[s1 + 2] + state[s2 + 2]) * log_conf / 2)
    return state[s2] - state[s1] > bound


def _hddm_w(params, state, x):
    """river.drift.binary.HDDMW; state: the two cut points, then five samples of three: the total, the
    increase's two, the decrease's two."""
    total, s1i, s2i, s1d, s2d = 4, 7, 10, 13, 16
    _sample_add(params, state, total, x)
    eps = math.sqrt(state[total + 2] * params[5] / 2)
    if state[total] + eps < state[2]:
        state[2] = state[total] + eps
        state[s1i:s1i + 3] = state[total:total + 3]
        _sample_clear(state, s2i)
    else:
        _sample_add(params, state, s2i, x)
    if _hddm_w_changed(state, s1i, s2i, params[5]):
        state[WARNING], state[DRIFT] = 0.0, 1.0
    elif _hddm_w_changed(state, s1i, s2i, params[6]):
        state[WARNING], state[DRIFT] = 1.0, 0.0
    else:
        state[WARNING], state[DRIFT] = 0.0, 0.0
    eps = math.sqrt(state[total + 2] * params[5] / 2)
    if state[total] - eps > state[3]:
        state[3] = state[total] - eps
        state[s1d:s1d + 3] = state[total:total + 3]
        _sample_clear(state, s2d)
    else:
        _sample_add(params, state, s2d, x)
    if params[0] != 0.0:
        if _hddm_w_changed(state, s2d, s1d, params[5]):
            state[DRIFT] = 1.0
        elif _hddm_w_changed(state, s2d, s1d, params[6]):
            state[WARNING] = 1.0


# ------------------------------------------------------------------ FHDDM


def _fhddm(params, state, fbuf, x):
    """river.drift.binary.FHDDM; state: the window's sum, the largest mean, the short window's largest mean,
    the window's length and start (a ring in ``fbuf``)."""
    W, short = int(params[0]), int(params[2])
    count, head = int(state[5]), int(state[6])
    fbuf[(head + count) % W] = x
    count += 1
    state[2] += x
    if count == W:
        u = state[2] / W
        state[3] = u if state[3] < u else state[3]
        short_drift = False
        if short > 0:
            s = 0.0
            for i in range(W - short, W):
                s += fbuf[(head + i) % W]
            u_s = s / short
            state[4] = u_s if state[4] < u_s else state[4]
            short_drift = state[4] - u_s > params[3]
        state[DRIFT] = 1.0 if state[3] - u > params[1] or short_drift else 0.0
        state[2] -= fbuf[head]
        head = (head + 1) % W
        count -= 1
    state[5], state[6] = count, head


# ------------------------------------------------------------------ ADWIN


def _adwin(params, state, fbuf, ibuf, x):
    """river.drift.ADWIN (its Rust ``AdaptiveWindowing``, operation for operation); state: total, variance,
    width, tick, levels in use."""
    m1 = int(params[2]) + 1
    _bucket_put(fbuf, ibuf, m1, 0, x, 0.0)
    width = state[4] + 1.0
    state[4] = width
    inc = 0.0
    if width > 1.0:
        dv = x - state[2] / (width - 1.0)
        inc = (width - 1.0) * dv * dv / width
    state[3] += inc
    state[2] += x
    _adwin_compress(params, state, fbuf, ibuf, m1)
    state[DRIFT] = 1.0 if _adwin_detect(params, state, fbuf, ibuf, m1) else 0.0


def _bucket_put(fbuf, ibuf, m1, level, total, variance):
    """Append a bucket summary to ``level``."""
    i = level * m1 + ibuf[level]
    fbuf[i], fbuf[LEVELS * m1 + i] = total, variance
    ibuf[level] += 1


def _bucket_drop(fbuf, ibuf, m1, level, n):
    """Drop the ``n`` oldest summaries of ``level``."""
    base, cur = level * m1, ibuf[level]
    for i in range(cur - n):
        fbuf[base + i] = fbuf[base + i + n]
        fbuf[LEVELS * m1 + base + i] = fbuf[LEVELS * m1 + base + i + n]
    for i in range(cur - n, cur):
        fbuf[base + i] = 0.0
        fbuf[LEVELS * m1 + base + i] = 0.0
    ibuf[level] = cur - n


def _adwin_compress(params, state, fbuf, ibuf, m1):
    """Merge the two oldest buckets of each full level into the next."""
    v = LEVELS * m1
    level = 0
    while ibuf[level] == m1:
        if level + 1 >= LEVELS:
            raise ValueError("ADWIN: the window outgrew the compiled detector's bucket levels")
        n1 = float(1 << level)
        b = level * m1
        mu1, mu2 = fbuf[b] / n1, fbuf[b + 1] / n1
        total12 = fbuf[b] + fbuf[b + 1]
        v12 = fbuf[v + b] + fbuf[v + b + 1] + n1 * 0.5 * (mu1 - mu2) * (mu1 - mu2)
        if level + 1 >= state[6]:
            state[6] = level + 2
        _bucket_put(fbuf, ibuf, m1, level + 1, total12, v12)
        _bucket_drop(fbuf, ibuf, m1, level, 2)
        if ibuf[level + 1] <= m1 - 1:
            break
        level += 1


def _adwin_delete(state, fbuf, ibuf, m1):
    """Drop the oldest bucket of the window."""
    last = int(state[6]) - 1
    n = float(1 << last)
    u, var = fbuf[last * m1], fbuf[LEVELS * m1 + last * m1]
    mu = u / n
    state[4] -= n
    state[2] -= u
    width = state[4]
    mu_window = state[2] / width
    state[3] -= var + n * width * (mu - mu_window) * (mu - mu_window) / (n + width)
    _bucket_drop(fbuf, ibuf, m1, last, 1)
    if ibuf[last] == 0:
        state[6] = last


def _adwin_detect(params, state, fbuf, ibuf, m1):
    """Check every cut of the window (every ``clock`` values past the grace period), dropping its oldest
    bucket while a cut splits it into means further apart than the bound."""
    change = False
    state[5] += 1.0
    delta, clock, mwl, grace = params[0], int(params[1]), params[3], params[4]
    if int(state[5]) % clock == 0 and state[4] > grace:
        reduce = True
        while reduce:
            reduce = False
            done, cut = False, False
            n0, n1, u0, u1 = 0.0, state[4], 0.0, state[2]
            for level in range(int(state[6]) - 1, -1, -1):
                if done or cut:
                    break
                size = float(1 << level)
                cur = ibuf[level]
                for k in range(cur):
                    n0 += size
                    n1 -= size
                    t = fbuf[level * m1 + k]
                    u0 += t
                    u1 -= t
                    if level == 0 and k == cur - 1:
                        done = True
                        break
                    dm = (u0 / n0) - (u1 / n1)
                    if n1 >= mwl and n0 >= mwl and _adwin_cut(state, n0, n1, dm, delta, mwl):
                        reduce, change = True, True
                        if state[4] > 0.0:
                            _adwin_delete(state, fbuf, ibuf, m1)
                            cut = True
                            break
    return change


def _adwin_cut(state, n0, n1, dm, delta, mwl):
    """Whether means ``dm`` apart across a cut into ``n0`` and ``n1`` values differ beyond ADWIN's bound."""
    width = state[4]
    dp = math.log(2.0 * math.log(width) / delta)
    m_recip = 1.0 / (n0 - mwl + 1.0) + 1.0 / (n1 - mwl + 1.0)
    eps = math.sqrt(2.0 * m_recip * (state[3] / width) * dp) + 2.0 / 3.0 * dp * m_recip
    return abs(dm) > eps


# ------------------------------------------------------------------ KSWIN


def _kswin_seed(params, ibuf):
    """The generator state river's ``random.Random`` starts from (in ``params``)."""
    off = _KS_P + int(params[2]) + 1
    for i in range(_MT):
        ibuf[i] = int(params[off + i])


def _mt_next(ibuf):
    """CPython's ``genrand_uint32``: the next 32-bit word of the Mersenne Twister in ``ibuf[:625]``."""
    i = ibuf[624]
    if i >= 624:
        for k in range(624):
            y = (ibuf[k] & 0x80000000) | (ibuf[(k + 1) % 624] & 0x7FFFFFFF)
            v = ibuf[(k + 397) % 624] ^ (y >> 1)
            if y & 1:
                v ^= 0x9908B0DF
            ibuf[k] = v
        i = 0
    y = ibuf[i]
    ibuf[624] = i + 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


def _randbelow(ibuf, n):
    """``random.Random._randbelow(n)``: ``getrandbits(n.bit_length())`` until below ``n``."""
    k = 0
    while (n >> k) > 0:
        k += 1
    r = _mt_next(ibuf) >> (32 - k)
    while r >= n:
        r = _mt_next(ibuf) >> (32 - k)
    return r


def _kswin(params, state, fbuf, ibuf, x):
    """river.drift.KSWIN; state: n, the window's length and start (a ring in ``fbuf``), the last p-value."""
    W, r = int(params[1]), int(params[2])
    state[2] += 1.0
    count, head = int(state[3]), int(state[4])
    if count < W:
        fbuf[(head + count) % W] = x
        count += 1
    else:
        fbuf[head] = x
        head = (head + 1) % W
    state[3], state[4] = count, head
    state[DRIFT] = 0.0
    if count < W:
        return
    n = W - r
    old, recent = fbuf[W:W + r], fbuf[W + r:W + 2 * r]
    pool = ibuf[_MT:_MT + n]
    if params[4] != 0.0:  # random.sample(range(n), r), its pool method
        for i in range(n):
            pool[i] = i
        for i in range(r):
            j = _randbelow(ibuf, n - i)
            old[i] = fbuf[(head + pool[j]) % W]
            pool[j] = pool[n - i - 1]
    else:  # its set method
        pool[:] = 0
        for i in range(r):
            j = _randbelow(ibuf, n)
            while pool[j] != 0:
                j = _randbelow(ibuf, n)
            pool[j] = 1
            old[i] = fbuf[(head + j) % W]
    for i in range(r):
        recent[i] = fbuf[(head + n + i) % W]
    h = _ks_distance(old, recent, r)
    if h < 0:  # a NaN: scipy's statistic and p-value are NaN
        state[5] = math.nan
        return
    state[5] = params[_KS_P + h]
    if state[5] <= params[0] and h * 1.0 / r > 0.1:
        state[DRIFT] = 1.0


def _ks_distance(a, b, r):
    """``r`` times the two-sample Kolmogorov-Smirnov statistic of ``a`` and ``b`` (sorted in place), an
    integer as scipy rounds it; -1 if a value is NaN."""
    for i in range(r):
        if a[i] != a[i] or b[i] != b[i]:
            return -1
    a.sort()
    b.sort()
    i, j, h = 0, 0, 0
    while i < r or j < r:
        v = a[i] if j >= r or (i < r and a[i] <= b[j]) else b[j]
        while i < r and a[i] <= v:
            i += 1
        while j < r and b[j] <= v:
            j += 1
        if abs(i - j) > h:
            h = abs(i - j)
    return h


def warm(k) -> None:
    """Compile the detectors for the types the models pass: a few errors through each kind."""
    r = 3
    kswin = [0.005, 8.0, float(r), 1.0, 1.0] + [1.0] * (r + 1) + [float(i + 1) for i in range(624)] + [624.0]
    examples = {ADWIN: [0.002, 1.0, 5.0, 5.0, 10.0], DDM: [30.0, 2.0, 3.0], EDDM: [30.0, 0.95, 0.9, 0.5],
                HDDM_A: [0.0, 6.9, 7.6, 6.0], HDDM_W: [0.0, 0.05, 0.95, 0.0025, 0.9025, 6.9, 5.3],
                FHDDM: [4.0, 0.5, 2.0, 0.5], PAGE_HINKLEY: [3.0, 0.005, 50.0, 0.9999, 0.0], KSWIN: kswin}
    errors = np.array([0.0, 1.0] * 8)
    for kind, values in examples.items():
        params = np.array(values)
        state, fbuf, ibuf = k.detector_new(kind, params)
        k.detector_feed(kind, params, state, fbuf, ibuf, errors)
        k.detector_update(kind, params, state, fbuf, ibuf, 1.0)
