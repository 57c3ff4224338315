"""The planted structure of a wide stream, learned with Laplace estimates: what a model that found it gets.

    python bench/wide_oracle.py cat200|bin1000 [--events 100000] [--holdout 5000] [--seed 0] [--descendants N]
                                [--late EVENTS]

Counts P(a_i | y, a_pa(i)) of the informative attributes only (their true parents, :func:`wide.planted`'s),
alpha = 1, one event at a time (predict, then learn), and prints the prequential accuracy at 1,000, 5,000,
20,000 and 100,000 events and the holdout accuracy on the ``--holdout`` events after the ``--events``
learned, each with its ratio to the exact Bayes optimum. What a selection that keeps more costs:
``--descendants N`` adds the first N other attributes (by index) whose planted parent is an informative one,
each with its planted parent (it says nothing of the class given it: its factor only adds the noise of its
estimates); ``--late EVENTS``, the last informative attribute's counts start after EVENTS events (as when
its test admits it late).
"""

from __future__ import annotations

import argparse

import numpy as np

from wide import planted, planted_parents  # bench/ is the script's directory, first on sys.path

PARENTS = {"cat200": ([(), (0,), (1,), (1, 2)], 30, 10), "bin1000": ([()] + [(i - 1,) for i in range(1, 8)], 2, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stream", choices=sorted(PARENTS))
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--holdout", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--descendants", type=int, default=0)
    parser.add_argument("--late", type=int, default=0)
    args = parser.parse_args(argv)
    n = args.events
    X, y, optimum = planted(args.stream, n + args.holdout, args.seed)
    parents, V, C = PARENTS[args.stream]
    core = len(parents)
    planted_pa = planted_parents(args.stream, args.seed)
    attrs = list(range(core)) + [j for j in range(core, len(planted_pa)) if planted_pa[j][0] < core][: args.descendants]
    parents = [planted_pa[a] for a in attrs]
    tables = [np.zeros((C,) + (V,) * len(pa) + (V,)) for pa in parents]
    classes = np.zeros(C)

    def predict(x) -> int:
        out = np.log(classes + 1.0)
        for table, i, pa in zip(tables, attrs, parents):
            t = table[(slice(None), *(x[p] for p in pa))]  # (C, V)
            out = out + np.log((t[:, x[i]] + 1.0) / (t.sum(1) + V))
        return int(np.argmax(out))

    correct = 0
    for e in range(n):
        correct += predict(X[e]) == y[e]
        classes[y[e]] += 1
        for table, i, pa in zip(tables, attrs, parents):
            if i != core - 1 or e >= args.late:
                table[(y[e], *(X[e, p] for p in pa), X[e, i])] += 1
        if e + 1 in (1_000, 5_000, 20_000, 100_000):
            print(f"prequential after {e + 1:>7,}: {correct / (e + 1):.4f} ({correct / (e + 1) / optimum:.3f} of the optimum)")
    held = sum(predict(X[e]) == y[e] for e in range(n, n + args.holdout)) / args.holdout
    print(f"holdout of {args.holdout:,} after {n:,}: {held:.4f} ({held / optimum:.3f} of the optimum {optimum:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
