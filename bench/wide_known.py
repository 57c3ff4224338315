"""Wide networks of known optimum: every model's holdout accuracy beside the Bayes optimum, at several widths.

    python bench/wide_known.py [--widths 50,200,600,2000] [--structures tree,k2] [--checkpoints 20000,100000]
                               [--holdout 5000] [--models NaiveBayes,TAN,AODE,KDB,river-MultinomialNB,TAN-blocks]
                               [--seconds 600] [--seed 0] [--set TAN:alpha=1.0 ...] [--backoff 1,5]
    python bench/wide_known.py --asymptote [--widths 50,300,600] [--structures tree,star] [--top 1,5,20,50,100]

The networks (:func:`network`) have a class of 4 values and ``F`` attributes of
6 values. Every attribute depends on the class and on its attribute parents,
chosen uniformly among the earlier attributes: one parent (``tree``, the
structure TAN can represent exactly) or two (``k2``, the structure of KDB with
k=2); the first attributes have fewer. ``star`` is the tree network's tables with
every attribute's parent moved to the first attribute: one super-parent is every
attribute's true parent, the structure AODE's first SPODE represents exactly. Each row P(a_i | y, pa) is drawn
Dirichlet(``s`` · b), where b = P(a_i | pa) is drawn once per parent value from
Dirichlet(0.5): the attribute depends strongly on its parents, and on the class
only by how far each class's row strays from b. A larger ``s`` is a weaker
class signal; ``s = max(F, 100)`` keeps the Bayes optimum near 0.85 from 200 to
2,000 attributes with naive Bayes below 60% of it (the class's information is
spread over more, weaker attributes as the width grows).

The Bayes optimum: for a complete event, P(y | x) is exact (the product of the
generating tables), so the optimal classifier's accuracy is E[max_y P(y | x)].
Summing that over the 6^F events is out of reach; the table gives its mean over
``--optimum-events`` fresh events (an unbiased estimate, with its standard
error) and over the holdout events themselves (the optimum realised on the
events every model is scored on).

Each model runs in its own child process (its peak resident memory,
``ru_maxrss``, is its own; numpy's BLAS on one thread, as ``stream-nb run``)
with its default parameters (``--set MODEL:name=value`` changes one): it learns
the training events in order, ``learn_many`` on DataFrames of 1,000 events, and
at each checkpoint predicts the ``--holdout`` events (``predict_many``, no
learning) for its holdout accuracy. river's ``MultinomialNB`` learns and
predicts one event at a time (``learn_one``, ``predict_one``) on the one-hot
``name=value`` tokens. ``TAN-blocks`` (not among the defaults) is TAN's estimates and tree on exact
counts of every attribute pair held in pair blocks, apart from the model (:func:`run_blocks`). Learning stops at the first checkpoint after
``--seconds`` of CPU time (``time.process_time``, compile time included: the
kernels are compiled at the first batch); the holdout is then scored at the
events learned. The table gives, per model: the holdout accuracy at each
checkpoint and its ratio to the optimum (with ``--backoff``, TAN's also with
each back-off estimate on the same counts and tree), the expected holdout accuracy (the mean of the
exact P(predicted class | x), free of the labels' noise) and its paired difference from the first model
listed (:func:`expected_cell`), the training events/s (CPU) up to the last checkpoint, and the peak RSS.

``--asymptote`` runs no model: it scores the holdout with each family's exact
population probabilities, the limit of infinite training data (where Laplace's
correction vanishes), computed here in numpy from the generating tables
(:func:`asymptote`). Naive Bayes uses the exact P(x_i | c) (:func:`class_marginals`),
AODE the exact P(x_i, x_p | c) of every pair (:func:`pair_tables`), over all
super-parents, over the ``--top`` of highest I(X_p; C), and over those chosen
greedily on the holdout itself; TAN with the planted tree is the network, so
its row is the Bayes optimum. Exact propagation needs a tree or forest given
the class: ``k2`` networks are listed as not computed.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

from _settings import model_settings  # bench/ is the script's directory, first on sys.path

V, C = 6, 4  # values per attribute, classes
MODELS = ("NaiveBayes", "TAN", "AODE", "KDB", "river-MultinomialNB")
CHUNK = 1000  # events per learn_many call


def signal_strength(F: int) -> float:
    """The Dirichlet concentration ``s`` of the class's rows around the parents' row (larger: weaker)."""
    return float(max(F, 100))


def network(F: int, structure: str, seed: int) -> tuple[list, list]:
    """``(parents, tables)``: ``parents[i]`` the attribute parents of attribute i (sorted tuple, all < i);
    ``tables[i]`` P(a_i | y, a_parents) of shape (C, V, ..., V) with one V axis per parent, then a_i's."""
    k = {"tree": 1, "k2": 2, "star": 1}[structure]
    rng = np.random.default_rng([seed, F, k])
    s = signal_strength(F)
    parents, tables = [], []
    for i in range(F):
        m = min(i, k)
        pa = tuple(sorted(rng.choice(i, size=m, replace=False).tolist())) if m else ()
        pa = (0,) if structure == "star" and m else pa  # the tree's draws and tables, every parent moved to a0
        base = rng.dirichlet(np.full(V, 0.5), size=(V,) * m)  # P(a_i | pa), (V,)*m + (V,)
        alpha = np.maximum(s * base, 1e-2)  # a floor keeps every row's cells positive
        tables.append(np.stack([rng.gamma(alpha) for _ in range(C)]))
        tables[-1] /= tables[-1].sum(-1, keepdims=True)
        parents.append(pa)
    return parents, tables


def sample(parents: list, tables: list, n: int, seed) -> tuple[np.ndarray, np.ndarray]:
    """Forward sampling: ``(X, y)``, X (n, F) int8 values, y (n,) uniform classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, size=n)
    X = np.empty((n, len(parents)), dtype=np.int8)
    for i, (pa, t) in enumerate(zip(parents, tables)):
        P = t[(y, *(X[:, p] for p in pa))]
        u = rng.random(n)[:, None]
        X[:, i] = np.minimum((u >= np.cumsum(P, axis=1)).sum(1), V - 1)
    return X, y


def posterior(parents: list, tables: list, X: np.ndarray) -> np.ndarray:
    """Exact P(y | x) per row (n, C), from the generating tables."""
    L = np.zeros((len(X), C))
    for i, (pa, t) in enumerate(zip(parents, tables)):
        L += np.log(t[(slice(None), *(X[:, p] for p in pa), X[:, i])]).T
    L -= L.max(1, keepdims=True)
    P = np.exp(L)
    return P / P.sum(1, keepdims=True)


def expected_cell(post: np.ndarray, predicted: list, first: dict, checkpoint: str, name: str) -> str:
    """A model's expected holdout accuracy, the mean over the holdout of the exact P(its predicted class | x),
    and its paired difference from the first model listed (with its standard error) at the same checkpoint.

    The holdout accuracy counts the sampled labels, so two classifiers that differ little are within its
    sampling error of each other; the expected accuracy takes out the labels' noise, and the paired
    difference the holdout's (both are scored on the same events)."""
    p = post[np.arange(len(post)), np.asarray(predicted)]
    text = f"expected {p.mean():.4f}"
    if checkpoint not in first:
        first[checkpoint] = (name, p)
        return text
    base, q = first[checkpoint]
    d = p - q
    return text + f", {d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f} against {base}"


def optimum(parents: list, tables: list, n: int, seed) -> tuple[float, float]:
    """E[max_y P(y | x)] over ``n`` fresh events, and its standard error."""
    best = np.concatenate([posterior(parents, tables, sample(parents, tables, min(n, 20_000), [seed, 9, lo])[0]).max(1)
                           for lo in range(0, n, 20_000)])[:n]
    return float(best.mean()), float(best.std() / np.sqrt(len(best)))


LOG_ZERO = -1e9  # log 0 in the oracle's score tables: finite, so a one-hot product with it stays a number


def _tree_parents(parents: list) -> np.ndarray:
    """Each attribute's one attribute parent (-1: a root), checked: the exact oracle needs a tree or forest."""
    pa = np.full(len(parents), -1)
    for i, p in enumerate(parents):
        if len(p) > 1 or any(q >= i for q in p):
            raise ValueError(f"the exact oracle needs at most one attribute parent per attribute, earlier than "
                             f"itself (a tree or forest); attribute {i} has parents {tuple(p)}")
        if p:
            pa[i] = p[0]
    return pa


def class_marginals(parents: list, tables: list) -> np.ndarray:
    """Exact P(x_i | c) of a tree or forest network, ``(C, F, V)``: propagated down from the roots,
    P(x_i | c) = sum over x_pa of P(x_i | x_pa, c) P(x_pa | c)."""
    pa = _tree_parents(parents)
    C, V = tables[0].shape[0], tables[0].shape[-1]
    m = np.empty((C, len(parents), V))
    for i, t in enumerate(tables):
        m[:, i] = t if pa[i] < 0 else np.einsum("cu,cuv->cv", m[:, pa[i]], t)
    return m


def pair_tables(parents: list, tables: list, c: int, marginals: np.ndarray) -> np.ndarray:
    """Exact P(x_p, x_i | c) for every pair of attributes of a tree or forest network, ``(F, F, V, V)``
    indexed ``[p, i, x_p, x_i]`` (the diagonal ``[p, p]`` is diag P(x_p | c)).

    Given c the attributes form a tree-structured network. For each p, first up its path to the root:
    Q[p, a] = Q[p, u] B_u for a the parent of u, with B_u[x_u, x_a] = P(x_a | x_u, c) by Bayes' rule (x_p is
    independent of x_a given x_u). Then down every other attribute u in topological order:
    Q[p, u] = Q[p, pa(u)] P(x_u | x_pa(u), c), since p is not below u; a root u of another tree is
    independent of x_p: Q[p, u] = P(x_p | c) P(x_u | c)^T.
    """
    pa = _tree_parents(parents)
    F, V = len(parents), tables[0].shape[-1]
    m = marginals[c]
    Q = np.zeros((F, F, V, V))
    Q[np.arange(F), np.arange(F)] = m[:, :, None] * np.eye(V)
    above = np.zeros((F, F), dtype=bool)  # above[p, a]: a is an ancestor of p
    B = {}
    for u in np.flatnonzero(pa >= 0):
        a = pa[u]
        joint = m[a][:, None] * tables[u][c]  # P(x_a, x_u | c), (x_a, x_u)
        B[u] = np.divide(joint.T, m[u][:, None], out=np.zeros((V, V)), where=m[u][:, None] > 0)
    for p in range(F):
        u = p
        while pa[u] >= 0:
            Q[p, pa[u]] = Q[p, u] @ B[u]
            above[p, pa[u]] = True
            u = pa[u]
    for u in range(F):
        rest = ~above[:, u]
        rest[u] = False
        if pa[u] >= 0:
            Q[rest, u] = Q[rest, pa[u]] @ tables[u][c]
        else:
            Q[rest, u] = m[rest][:, :, None] * m[u][None, None, :]
    return Q


def _log(x: np.ndarray) -> np.ndarray:
    """log x with log 0 as ``LOG_ZERO``."""
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(x), LOG_ZERO)


def spode_scores(parents: list, tables: list, X: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Every SPODE's exact log joint on each row of X, ``(n, C, F)``: with super-parent p,
    log P(c, x_p) + sum over i != p of log P(x_i | c, x_p), from the exact pair tables (no estimation).

    One matrix product per class and block of rows: the one-hot rows (n, F·V) times the table
    W[(i, x_i), (p, x_p)] = log P(x_i | c, x_p); column (p, x_p) of the product is super-parent p's sum.
    """
    n, F = X.shape
    C, V = len(prior), tables[0].shape[-1]
    marg = class_marginals(parents, tables)
    onehot = np.zeros((n, F * V))
    onehot[np.arange(n)[:, None], np.arange(F) * V + X] = 1.0
    column = np.arange(F) * V + X  # (n, F): the column of each super-parent's value
    S = np.empty((n, C, F))
    for c in range(C):
        Q = pair_tables(parents, tables, c, marg)
        L = _log(Q) - _log(marg[c])[:, None, :, None]  # log P(x_i | c, x_p), [p, i, x_p, x_i]
        L[np.arange(F), np.arange(F)] = 0.0  # P(x_p | c, x_p) = 1: left out of the product
        W = np.ascontiguousarray(L.transpose(1, 3, 0, 2).reshape(F * V, F * V))
        del Q, L
        head = _log(prior[c] * marg[c])  # log P(c, x_p), (F, V)
        for lo in range(0, n, 1000):
            block = onehot[lo:lo + 1000] @ W
            S[lo:lo + 1000, c] = np.take_along_axis(block, column[lo:lo + 1000], 1) + head[np.arange(F), X[lo:lo + 1000]]
    return S


def class_information(parents: list, tables: list, prior: np.ndarray) -> np.ndarray:
    """Exact I(X_p; C) of every attribute (nats), from the exact marginals P(x_p | c)."""
    m = class_marginals(parents, tables)  # (C, F, V)
    joint = prior[:, None, None] * m
    both = joint.sum(0, keepdims=True) * prior[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(joint > 0, joint * np.log(joint / both), 0.0).sum((0, 2))


def asymptote(parents: list, tables: list, Xh: np.ndarray, yh: np.ndarray, tops=(1, 5, 20, 50, 100)) -> list:
    """Each model family's holdout accuracy with its exact population probabilities (the limit of infinite
    training data, where Laplace's correction vanishes), on a tree network: ``[(model, accuracy, expected)]``,
    ``accuracy`` on the holdout labels ``yh``, ``expected`` the mean of the exact P(predicted class | x)
    over the holdout rows (the same classifier's accuracy with less sampling noise).

    The rows: the Bayes optimum (the generating network's posterior; it is also TAN's with the planted tree,
    which represents the network exactly), naive Bayes P(c) prod P(x_i | c), AODE over every super-parent,
    selective AODE over the k super-parents of highest I(X_p; C) for each k in ``tops`` below F, over those
    :func:`_greedy_parents` chooses on the holdout itself, and the single SPODEs (mean, and the best on the holdout).
    """
    F = Xh.shape[1]
    prior = np.full(tables[0].shape[0], 1.0 / tables[0].shape[0])  # sample() draws the class uniformly
    post = posterior(parents, tables, Xh)
    rows = np.arange(len(yh))

    def scored(name, score):
        pred = score.argmax(1)
        return name, float((pred == yh).mean()), float(post[rows, pred].mean())

    marg = class_marginals(parents, tables)
    nb = np.log(prior)[None, :] + _log(marg[:, np.arange(F), Xh]).sum(2).T  # (n, C)
    S = spode_scores(parents, tables, Xh, prior)
    info = np.argsort(-class_information(parents, tables, prior), kind="stable")
    out = [scored("Bayes optimum = TAN with the planted tree", post), scored("NaiveBayes", nb),
           scored(f"AODE (all {F} super-parents)", _logsumexp(S))]
    out += [scored(f"AODE, the {k} super-parent{'s' * (k > 1)} of highest I(X_p; C)", _logsumexp(S[:, :, info[:k]]))
            for k in tops if k < F]
    chosen = _greedy_parents(S, post)
    out.append(scored(f"AODE, {len(chosen)} super-parent{'s' * (len(chosen) > 1)} chosen greedily on the holdout itself (optimistic)",
                      _logsumexp(S[:, :, chosen])))
    single = [scored("", S[:, :, p]) for p in range(F)]
    best = max(single, key=lambda r: r[2])
    out.append(("one SPODE, mean over its super-parent", float(np.mean([r[1] for r in single])),
                float(np.mean([r[2] for r in single]))))
    out.append(("one SPODE, the best super-parent", best[1], best[2]))
    return out


def _greedy_parents(S: np.ndarray, post: np.ndarray, most: int = 50) -> list:
    """Forward selection of AODE's super-parents on the scored rows themselves: each step adds the super-parent
    that most raises the mean exact P(predicted class | x), until none raises it (at most ``most``): an optimistic
    bound on what choosing the super-parents can give, since the choice sees the rows it is scored on."""
    rows = np.arange(len(post))
    chosen, run, level = [], np.full(S.shape[:2], -np.inf), -1.0
    while len(chosen) < most:
        gains = [(post[rows, np.logaddexp(run, S[:, :, p]).argmax(1)].mean(), p)
                 for p in range(S.shape[2]) if p not in chosen]
        top, p = max(gains)
        if top <= level:
            break
        chosen.append(p)
        run, level = np.logaddexp(run, S[:, :, p]), top
    return chosen


def _logsumexp(S: np.ndarray) -> np.ndarray:
    """log of the sum of exp over the last axis (the average's 1/|P| does not change the argmax)."""
    top = S.max(-1, keepdims=True)
    return (top + np.log(np.exp(S - top).sum(-1, keepdims=True)))[..., 0]


def _tree_check(model, parents: list, X: np.ndarray, y: np.ndarray, Xh: np.ndarray, yh: np.ndarray) -> dict:
    """TAN's tree against the planted one: the planted edges it holds, and the holdout accuracy of its tree
    (and of the planted tree) with Laplace estimates from exact counts of every event learned, counted here
    in numpy, apart from the model: what the model would score if each of its pairs held all the events."""
    s = model._stats
    index = {str(n): k for k, n in enumerate(s.features)}
    col = np.array([index[f"a{i}"] for i in range(len(parents))])
    by_col = model._parents()
    learned = [int(str(s.features[by_col[col[i]]])[1:]) if by_col[col[i]] >= 0 else -1 for i in range(len(parents))]
    planted = [pa[0] if pa else -1 for pa in parents]
    undirected = {frozenset((i, p)) for i, p in enumerate(planted) if p >= 0}
    found = sum(frozenset((i, p)) in undirected for i, p in enumerate(learned) if p >= 0)
    classes = np.unique(y)
    C, V = len(classes), int(max(X.max(), Xh.max())) + 1
    yi = np.searchsorted(classes, y)

    def accuracy(tree):
        score = np.tile(np.log(np.bincount(yi, minlength=C) / len(yi)), (len(yh), 1))
        for i, p in enumerate(tree):
            if p < 0:
                n = np.zeros((C, V))
                np.add.at(n, (yi, X[:, i]), 1)
                score += np.log((n + 1) / (n.sum(1, keepdims=True) + V))[:, Xh[:, i]].T
            else:
                n = np.zeros((C, V, V))
                np.add.at(n, (yi, X[:, p], X[:, i]), 1)
                score += np.log((n + 1) / (n.sum(2, keepdims=True) + V))[:, Xh[:, p], Xh[:, i]].T
        return float((classes[score.argmax(1)] == yh).mean())

    return {"edges": f"{found}/{len(undirected)}", "exact counts": accuracy(learned), "planted tree": accuracy(planted)}


def run_blocks(args, F: int, structure: str) -> dict:
    """``TAN-blocks``: TAN's Laplace estimates and tree on exact counts of every pair held in pair blocks
    (:class:`stream_nb.stats.tables.PairBlocks`), outside the model: the events counted into the blocks
    (compiled, 1,000 at a time), the tree built once at each checkpoint as TAN's default ``Tree(score="bayes")``
    builds it (the maximum spanning tree of the Bayesian edge gains read off the blocks, rooted at the attribute
    of highest I(X; C)), the holdout scored off the blocks; with ``--backoff``, also with ``Tree(backoff=m)``
    (toward P(x_i | x_pa), the default) on the same counts and tree."""
    from stream_nb.kernels import NO_DETECTOR, compiled
    from stream_nb.learners import maximum_spanning_tree
    from stream_nb.stats.tables import PairBlocks

    parents, tables = network(F, structure, args.seed)
    checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    X, y = sample(parents, tables, checkpoints[-1], [args.seed, 1])
    Xh, yh = sample(parents, tables, args.holdout, [args.seed, 2])
    feats = np.arange(F, dtype=np.int64)
    column = np.zeros((F, V), dtype=np.int64)  # value x of attribute f: its column, numbered as values first come
    vf = [-1]
    blocks = PairBlocks(np.array(vf), F, C)
    class_count, value_count, feat_count = np.zeros(C), np.zeros((C, 1)), np.zeros((C, F))
    done, spent, scores = 0, 0.0, []
    for stop in checkpoints:
        while done < stop:
            hi = min(done + CHUNK, stop)
            t0 = time.process_time()
            part = X[done:hi].astype(np.int64)
            seen = np.zeros((F, V), dtype=bool)
            seen[feats[None, :], part] = True
            new = np.argwhere(seen & (column == 0))  # (f, x) in the order of f, then x
            if len(new):  # the blocks grow between additions, to hold the values this part brings
                column[new[:, 0], new[:, 1]] = len(vf) + np.arange(len(new))
                vf += new[:, 0].tolist()
                blocks.grow(np.array(vf), F, C)
                value_count = np.pad(value_count, ((0, 0), (0, len(new))))
            D = np.ascontiguousarray(column[feats[None, :], part])
            yc = y[done:hi].astype(np.int64)
            blocks.add_rows(D, feats, yc, np.ones(len(yc)))
            class_count += np.bincount(yc, minlength=C)
            np.add.at(value_count, (yc[:, None], D), 1.0)
            feat_count += np.bincount(yc, minlength=C)[:, None]
            spent += time.process_time() - t0
            done = hi
            if spent > args.seconds:
                break
        t0 = time.process_time()
        n = class_count.sum()
        by_value = np.where(column > 0, value_count[:, column], 0.0)  # (C, F, V)
        joint = by_value / n
        px, pc = joint.sum(0), class_count / n
        with np.errstate(divide="ignore", invalid="ignore"):
            mi = np.nansum(joint * np.log(joint / (pc[:, None, None] * px[None])), axis=(0, 2))
        root = int(np.argmax(mi))
        n_values = np.count_nonzero(column, axis=1).astype(np.int64)
        gains = blocks.bayes_gains(1.0, n_values)
        tree = maximum_spanning_tree(np.maximum(gains, gains.T), range(F), root)
        parent = np.full(F, -1, dtype=np.int64)
        for child, par in tree.items():
            parent[child] = par
        spent += time.process_time() - t0
        pos = np.where(parent >= 0, parent, -1)  # D holds every attribute in order: a parent's position is itself
        Dh = np.ascontiguousarray(column[feats[None, :], Xh.astype(np.int64)])  # 0: a value never learned
        out = np.empty((len(Dh), C))
        for m in [0.0] + [float(v) for v in args.backoff.split(",") if v]:  # Laplace, then Tree(backoff=m)
            rows = len(Dh)  # toward P(x_i | x_pa), on the same counts and tree
            compiled().tree_block_pairs(Dh, feats, pos, np.zeros((0, 0), dtype=np.int64), np.zeros((rows, 0)),
                                        np.zeros(0, dtype=np.int64), np.full(rows, -1, dtype=np.int64), np.zeros(0),
                                        np.zeros(0), False, C, 1.0, m, True, 1e-9, class_count, value_count, feat_count,
                                        n_values, *blocks.arrays(), np.zeros((C, 0)), np.zeros((C, 0)),
                                        np.zeros((C, 0)), out, True, np.zeros((0, 0)), *NO_DETECTOR)
            accuracy = float((out.argmax(1) == yh).mean())
            if m:
                scores[-1][f"backoff={m:g}"] = accuracy
            else:
                scores.append({"events": done, "accuracy": accuracy})
        if done < stop:
            break
    return {"scores": scores, "rate": done / spent if spent else None,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "count_bytes": blocks.nbytes}


def run_model(args, F: int, structure: str, name: str) -> dict:
    if name == "TAN-blocks":
        return run_blocks(args, F, structure)
    import pandas as pd

    parents, tables = network(F, structure, args.seed)
    checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    X, y = sample(parents, tables, checkpoints[-1], [args.seed, 1])
    Xh, yh = sample(parents, tables, args.holdout, [args.seed, 2])
    names = [f"a{i}" for i in range(F)]
    peer = name.startswith("river-")
    if peer:
        from river import naive_bayes

        model = naive_bayes.MultinomialNB()

        def tokens(row):
            return {f"{n}={v}": 1 for n, v in zip(names, row)}
    else:
        import stream_nb

        model = getattr(stream_nb, name)(**model_settings(args.set, name))
    done, spent, scores = 0, 0.0, []
    for stop in checkpoints:
        while done < stop:
            hi = min(done + CHUNK, stop)
            t0 = time.process_time()
            if peer:
                for row, c in zip(X[done:hi].tolist(), y[done:hi].tolist()):
                    model.learn_one(tokens(row), c)
            else:
                model.learn_many(pd.DataFrame(X[done:hi].astype(np.int64), columns=names), pd.Series(y[done:hi]))
            spent += time.process_time() - t0
            done = hi
            if spent > args.seconds:
                break
        if peer:
            pred = np.array([model.predict_one(tokens(row)) for row in Xh.tolist()])
        else:
            pred = model.predict_many(pd.DataFrame(Xh.astype(np.int64), columns=names)).to_numpy()
        scores.append({"events": done, "accuracy": float((pred == yh).mean()), "predicted": pred.astype(int).tolist()})
        if name == "TAN" and args.backoff:  # the same counts and tree, scored with each back-off m
            from stream_nb import Tree

            laplace = model.search
            for m in (float(v) for v in args.backoff.split(",")):
                model.search = Tree(score=laplace.score, rebuild_every=laplace.rebuild_every, backoff=m)
                pred = model.predict_many(pd.DataFrame(Xh.astype(np.int64), columns=names)).to_numpy()
                scores[-1][f"backoff={m:g}"] = float((pred == yh).mean())
            model.search = laplace
        if name == "TAN" and args.edges and structure == "tree":
            scores[-1].update(_tree_check(model, parents, X[:done], y[:done], Xh, yh))
        if done < stop:
            break
    return {"scores": scores, "rate": done / spent if spent else None,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "count_bytes": None if peer else model.memory_used()["bytes"]}


def print_asymptote(args) -> int:
    """The ``--asymptote`` table: per network, each family's accuracy in the limit of infinite data."""
    print(f"command: python bench/wide_known.py {' '.join(sys.argv[1:])}\n")
    print("| network | model, exact population probabilities | holdout accuracy ± its se (÷ optimum) "
          "| mean exact P(predicted class given x) on the holdout (÷ the same for the optimum) |")
    print("|---|---|---:|---:|")
    tops = [int(k) for k in args.top.split(",") if k]
    for structure in args.structures.split(","):
        for F in (int(w) for w in args.widths.split(",")):
            label = f"{structure} F={F}"
            parents, tables = network(F, structure, args.seed)
            if any(len(p) > 1 for p in parents):
                print(f"| {label} | not computed: exact propagation needs at most one attribute parent "
                      f"(a tree); here attributes have two, whose joint it would need | | |")
                continue
            best, se = optimum(parents, tables, args.optimum_events, args.seed)
            Xh, yh = sample(parents, tables, args.holdout, [args.seed, 2])
            rows = asymptote(parents, tables, Xh, yh, tops)
            print(f"| {label} | Bayes optimum, mean of max P(y given x) over {args.optimum_events:,} fresh events "
                  f"(se {se:.4f}) | {best:.4f} | |")
            top = rows[0][2]
            for name, accuracy, expected in rows:
                se = np.sqrt(accuracy * (1 - accuracy) / len(yh))
                print(f"| {label} | {name} | {accuracy:.4f} ± {se:.4f} ({accuracy / best:.3f}) | {expected:.4f} "
                      f"({expected / top:.3f}) |")
            sys.stdout.flush()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="50,200,600,2000")
    parser.add_argument("--structures", default="tree,k2")
    parser.add_argument("--checkpoints", default="20000,100000")
    parser.add_argument("--holdout", type=int, default=5000)
    parser.add_argument("--optimum-events", type=int, default=100_000)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seconds", type=float, default=600.0, help="CPU seconds of learning per model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="MODEL:NAME=VALUE",
                        help="a model parameter (JSON value), e.g. TAN:alpha=0.5; repeatable")
    parser.add_argument("--backoff", default="", metavar="M,M",
                        help="TAN: also score the holdout with Tree(backoff=M) for each M, on the same counts and tree")
    parser.add_argument("--edges", action="store_true",
                        help="TAN on tree networks: also the planted edges its tree holds, and the holdout accuracy of "
                             "its tree and of the planted one with exact counts of every event learned")
    parser.add_argument("--address-limit", type=float, default=3.0, help="GB of address space per model process")
    parser.add_argument("--asymptote", action="store_true",
                        help="no models: each family's holdout accuracy with its exact population probabilities "
                             "(infinite training data), on the tree networks")
    parser.add_argument("--top", default="1,5,20,50,100", metavar="K,K",
                        help="--asymptote: also AODE over the K super-parents of highest I(X_p; C), for each K")
    parser.add_argument("--child", nargs=3, metavar=("WIDTH", "STRUCTURE", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        limit = int(args.address_limit * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        from stream_nb.daemon import one_blas_thread

        one_blas_thread()
        F, structure, name = int(args.child[0]), args.child[1], args.child[2]
        print(json.dumps(run_model(args, F, structure, name)))
        return 0
    if args.asymptote:
        return print_asymptote(args)
    checkpoints = args.checkpoints.split(",")
    shown = " ".join(a for a in sys.argv[1:])
    print(f"command: python bench/wide_known.py {shown}\n")
    print("| network | model | " + " | ".join(f"holdout after {int(c):,}" for c in checkpoints)
          + " | events/s (CPU) | peak RSS MB |")
    print("|---|---|" + "---:|" * (len(checkpoints) + 2))
    for structure in args.structures.split(","):
        for F in (int(w) for w in args.widths.split(",")):
            parents, tables = network(F, structure, args.seed)
            best, se = optimum(parents, tables, args.optimum_events, args.seed)
            Xh, _ = sample(parents, tables, args.holdout, [args.seed, 2])
            post = posterior(parents, tables, Xh)
            realised = float(post.max(1).mean())
            first = {}  # checkpoint -> the first model's exact P(its predicted class | x) per holdout event
            label = f"{structure} F={F}"
            print(f"| {label} | Bayes optimum (mean of max P(y given x) over {args.optimum_events:,} events, se {se:.4f}; "
                  f"on the holdout {realised:.4f}) | " + " | ".join(f"{best:.4f}" for _ in checkpoints) + " | | |")
            sys.stdout.flush()
            for name in args.models.split(","):
                cmd = [sys.executable, __file__, "--child", str(F), structure, name, "--checkpoints", args.checkpoints,
                       "--holdout", str(args.holdout), "--seconds", str(args.seconds), "--seed", str(args.seed),
                       "--address-limit", str(args.address_limit), "--backoff", args.backoff] + ["--edges"] * args.edges
                cmd += [a for s in args.set for a in ("--set", s)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0 or not proc.stdout.strip():
                    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                    print(f"| {label} | {name} | failed: {last[:120]} |" + " |" * (len(checkpoints) + 1))
                    continue
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                cells = []
                for c, sc in zip(checkpoints, r["scores"] + [None] * len(checkpoints)):
                    if sc is None:
                        cells.append("-")
                    else:
                        at = "" if sc["events"] == int(c) else f" (at {sc['events']:,}, time limit)"
                        cells.append(f"{sc['accuracy']:.4f} = {sc['accuracy'] / best:.3f}{at}; "
                                     + expected_cell(post, sc["predicted"], first, c, name))
                rate = f"{r['rate']:,.0f}" if r["rate"] else "-"
                for m in (v for v in args.backoff.split(",") if v and name in ("TAN", "TAN-blocks")):
                    key = f"backoff={float(m):g}"
                    cells = [f"{c}; {key}: {sc[key]:.4f} = {sc[key] / best:.3f}" if sc is not None and key in sc else c
                             for c, sc in zip(cells, r["scores"] + [None] * len(cells))]
                cells = [f"{c}; planted edges {sc['edges']}; exact counts, its tree {sc['exact counts'] / best:.3f}, the "
                         f"planted tree {sc['planted tree'] / best:.3f}" if sc is not None and "edges" in sc else c
                         for c, sc in zip(cells, r["scores"] + [None] * len(cells))]
                print(f"| {label} | {name} | " + " | ".join(cells) + f" | {rate} | {r['peak_rss_mb']:,.0f} |")
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
