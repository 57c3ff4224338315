#!/usr/bin/env python
"""EM against ignoring missing values on the known network, paired over several seeds.

``bench/missing.py`` runs one stream per setting, whose paired standard error
(about 0.1 to 0.3 points) hides differences of a few tenths of a point. This
runs the same comparison on the network of ``bench/bayesnet.py`` (network seed
0) over ``--seeds`` independent streams and masks, so that the mean difference
and its spread over seeds tell signal from noise::

    python bench/missing_seeds.py                          # 8 seeds x 10,000 events, NB, AODE, TAN, 10/30/50 %
    python bench/missing_seeds.py --seeds 4 --events 4000 --models AODE --rates 0.5

Stream s draws its events with seed [s, 7] and its MCAR mask (attribute j of
event i missing when U[i, j] < rate) from uniforms with seed [s, 8]; EM and
ignore see the same events and masks. Each line: the mean over seeds of
prequential accuracy (EM − ignore) in points, ± twice its standard error
over seeds, the same for each quarter of the stream, and the per-seed values.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

from stream_nb import AODE, EM, KDB, SPODE, TAN, Ignore, NaiveBayes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bayesnet import TreeBayesNet  # noqa: E402

MODELS = {"NaiveBayes": NaiveBayes, "AODE": AODE, "TAN": TAN, "SPODE": SPODE, "KDB": KDB}
METHODS = {"em": EM, "ignore": Ignore}
QUARTERS = 4


def run(job):
    """Per-event correctness of one model, method, rate and seed."""
    model, method, rate, seed, n = job
    net = TreeBayesNet.random(seed=0)
    X, y = net.sample(n, seed=[seed, 7])
    U = np.random.default_rng([seed, 8]).random(X.shape)
    m = MODELS[model](missing=METHODS[method]())
    correct = np.zeros(n, dtype=bool)
    for i, (row, c) in enumerate(zip(X.tolist(), y.tolist())):
        x = {f: (None if U[i, j] < rate else v) for j, (f, v) in enumerate(zip(net.attributes, row))}
        correct[i] = m.predict_one(x) == c
        m.learn_one(x, c)
    return job, correct


def mean_2se(d: np.ndarray) -> str:
    se = d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return f"{100 * d.mean():+.2f} ± {200 * se:.2f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10000, help="events per stream (default 10000)")
    parser.add_argument("--seeds", type=int, default=8, help="streams per setting, seeds 1..N (default 8)")
    parser.add_argument("--models", default="NaiveBayes,AODE,TAN", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--rates", default="0.1,0.3,0.5", help="comma-separated MCAR rates (default 0.1,0.3,0.5)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = parser.parse_args(argv)
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; expected some of {', '.join(MODELS)}")
    rates = [float(r) for r in args.rates.split(",")]
    if args.seeds < 2:
        parser.error(f"--seeds: expected at least 2 (a spread over seeds), got {args.seeds}")
    seeds = range(1, args.seeds + 1)
    jobs = [(m, k, r, s, args.events) for m in models for r in rates for s in seeds for k in ("em", "ignore")]
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        res = {job[:4]: correct for job, correct in pool.imap_unordered(run, jobs)}
    print(f"# EM − ignore on the known network: {args.seeds} seeds x {args.events} events; "
          f"points, mean ± 2 SE over seeds")
    print(f"command: python bench/missing_seeds.py --events {args.events} --seeds {args.seeds} "
          f"--models {args.models} --rates {args.rates}\n")
    print("| model | missing | EM | ignore | EM − ignore | by quarter of the stream | per seed |")
    print("|---|---:|---:|---:|---:|---|---|")
    n, q = args.events, args.events // QUARTERS
    for m in models:
        for r in rates:
            em = np.array([res[(m, "em", r, s)] for s in seeds])
            ig = np.array([res[(m, "ignore", r, s)] for s in seeds])
            d = em.mean(1) - ig.mean(1)
            quarters = [mean_2se(em[:, i * q:(i + 1) * q].mean(1) - ig[:, i * q:(i + 1) * q].mean(1))
                        for i in range(QUARTERS)]
            print(f"| {m} | {round(100 * r)} % | {em.mean():.4f} | {ig.mean():.4f} | {mean_2se(d)} | "
                  + " / ".join(quarters) + " | " + " ".join(f"{100 * x:+.2f}" for x in d) + " |")
    print(f"\nwall clock: {time.perf_counter() - t0:.0f} s ({n} events per stream)")


if __name__ == "__main__":
    main()
