"""Wide networks of known optimum: every model's holdout accuracy beside the Bayes optimum, at several widths.

    python bench/wide_known.py [--widths 50,200,600,2000] [--structures tree,k2] [--checkpoints 20000,100000]
                               [--holdout 5000] [--models NaiveBayes,TAN,AODE,KDB,river-MultinomialNB]
                               [--seconds 600] [--seed 0] [--set TAN:alpha=1.0 ...] [--backoff 1,5]

The networks (:func:`network`) have a class of 4 values and ``F`` attributes of
6 values. Every attribute depends on the class and on its attribute parents,
chosen uniformly among the earlier attributes: one parent (``tree``, the
structure TAN can represent exactly) or two (``k2``, the structure of KDB with
k=2); the first attributes have fewer. Each row P(a_i | y, pa) is drawn
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
``name=value`` tokens. Learning stops at the first checkpoint after
``--seconds`` of CPU time (``time.process_time``, compile time included: the
kernels are compiled at the first batch); the holdout is then scored at the
events learned. The table gives, per model: the holdout accuracy at each
checkpoint and its ratio to the optimum (with ``--backoff``, TAN's also with
each back-off estimate on the same counts and tree), the training events/s (CPU)
up to the last checkpoint, and the peak RSS.
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
    k = {"tree": 1, "k2": 2}[structure]
    rng = np.random.default_rng([seed, F, k])
    s = signal_strength(F)
    parents, tables = [], []
    for i in range(F):
        m = min(i, k)
        pa = tuple(sorted(rng.choice(i, size=m, replace=False).tolist())) if m else ()
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


def optimum(parents: list, tables: list, n: int, seed) -> tuple[float, float]:
    """E[max_y P(y | x)] over ``n`` fresh events, and its standard error."""
    best = np.concatenate([posterior(parents, tables, sample(parents, tables, min(n, 20_000), [seed, 9, lo])[0]).max(1)
                           for lo in range(0, n, 20_000)])[:n]
    return float(best.mean()), float(best.std() / np.sqrt(len(best)))


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


def run_model(args, F: int, structure: str, name: str) -> dict:
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
        scores.append({"events": done, "accuracy": float((pred == yh).mean())})
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
            realised = float(posterior(parents, tables, Xh).max(1).mean())
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
                        cells.append(f"{sc['accuracy']:.4f} = {sc['accuracy'] / best:.3f}{at}")
                rate = f"{r['rate']:,.0f}" if r["rate"] else "-"
                for m in (v for v in args.backoff.split(",") if v and name == "TAN"):
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
