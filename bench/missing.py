#!/usr/bin/env python
"""Missing values: EM vs ignoring them vs online mean/mode imputation, per model, stream and missing rate.

Run it by hand (it is not a test)::

    python bench/missing.py                   # 10,000 events per stream; 20,000 + 20,000 for the TAN check
    python bench/missing.py --quick           # 2,000 and 3,000 + 3,000: a smoke run
    python bench/missing.py --events 30000 --check-events 50000 --seed 3

Streams (materialised first, ``--events`` each):

* ``TAN-net``: forward samples of a known tree-shaped Bayesian network
  (``bench/bayesnet.py``: a class with 3 values and 8 attributes with 3–4
  values; each attribute's parents are the class and at most one other
  attribute, so the true model is a TAN; tables from Dirichlet(0.5) drawn once
  with network seed 0). Its Bayes-optimal accuracy is computed exactly.
* ``LED``: ``river.datasets.synth.LED(seed, noise_percentage=0.1, irrelevant_features=True)``
  (24 binary attributes, 7 of them relevant; 10 classes).
* ``STAGGER``: ``river.datasets.synth.STAGGER(seed, balance_classes=False)``
  (3 attributes with 3 values; 2 classes; a deterministic concept).

Missingness: MCAR at 0, 10, 30 and 50 %. One matrix U of uniforms per stream
(seeded) decides: attribute j of event i is missing (set to ``None``) at rate
r when U[i, j] < r. So every model and method sees the same masks, and the
masks are nested across rates.

Methods, per model (NaiveBayes, AODE, TAN, default parameters otherwise):

* ``em``: ``missing=EM()``: the model gets the masked event and adds expected
  fractional counts for the missing attributes, their posterior read off the
  observed-only counts the model keeps beside its counts (naive Bayes: given
  the class alone; AODE and TAN: each attribute's counts under the SPODE
  whose super-parent it is; see docs/guide/missing.md).
* ``ignore``: ``missing=Ignore()``: the model gets the masked event and
  counts only what was observed.
* ``mean/mode``: a running per-feature mode (categorical) or mean (numeric)
  of the values observed so far fills every missing value before predicting
  and learning (the event's own observed values join the running statistics
  after it was imputed); the model never sees a missing value.

Prequential accuracy: each event is predicted, then learned. ``EM − ignore``
is paired (same events, same masks); its ± is twice the paired standard error
sqrt(d)/n, d the number of events exactly one of the two got right.

Imputation accuracy: for every masked value, whether the guess equals the
true value: EM's guess is ``model.impute_one(x)`` of the masked event just
before the model learns it (no label given; one per model); mean/mode's is the
running mode. A feature with no observed value yet cannot be imputed and
counts as a wrong guess for either.

The TAN check (on the known network): TAN trained with EM on N events with
30 % MCAR masks, and TAN trained on the same N events complete, are both
tested without learning on the same M held-out events with 30 % MCAR masks
(N = M = ``--check-events``; the tree is rebuilt once after training). The
target: EM within 2 accuracy points of the complete-data model. Beside it:
the exact Bayes-optimal accuracy at 30 % MCAR, and the optimal classifier's
expected accuracy on those very test events (mean over them of
max_c P(c | x_observed) under the true network), which is what the two models
are really compared against.

Targets, each printed with PASS or FAIL: EM ≥ ignore for every stream, model
and missing rate; the TAN check. The plot (accuracy vs missing rate per model
and method, one panel per stream) goes to ``docs/missing.png``.

Jobs run in ``--jobs`` processes (default 2).
"""

from __future__ import annotations

import argparse
import inspect
import math
import multiprocessing
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from river.datasets import synth

import stream_nb
from stream_nb import AODE, EM, TAN, Ignore, NaiveBayes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bayesnet import TreeBayesNet  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RATES = (0.0, 0.1, 0.3, 0.5)
CHECK_RATE = 0.3
MODELS = {"NaiveBayes": NaiveBayes, "AODE": AODE, "TAN": TAN}
METHODS = ("em", "ignore", "mean/mode")
STREAMS = ("TAN-net", "LED", "STAGGER")
NET_SEED = 0

HAS_EM = "missing" in inspect.signature(TAN).parameters
HAS_IMPUTE = all(hasattr(m, "impute_one") for m in MODELS.values())

# filled in the parent before the worker pool forks: {stream: (events, features, U)}
DATA: dict = {}
CHECK: dict = {}


def make_model(model: str, method: str):
    cls = MODELS[model]
    if not HAS_EM:
        return cls()
    return cls(missing=EM() if method == "em" else Ignore())


# ---------------------------------------------------------------------- mean/mode imputation


class RunningImputer:
    """Per-feature running mode (categorical values) or mean (float values) of the values observed so far."""

    def __init__(self):
        self.counts: dict = {}  # categorical feature -> Counter
        self.mode: dict = {}  # categorical feature -> current mode (first to reach the top count)
        self.mean: dict = {}  # numeric feature -> [n, mean]

    @staticmethod
    def _missing(v) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    def fill(self, x: dict) -> dict:
        """``x`` with every missing or absent known feature set to its running mode or mean."""
        out = dict(x)
        for f, mode in self.mode.items():
            if self._missing(out.get(f)):
                out[f] = mode
        for f, (_, mean) in self.mean.items():
            if self._missing(out.get(f)):
                out[f] = mean
        return out

    def update(self, x: dict) -> None:
        for f, v in x.items():
            if self._missing(v):
                continue
            if isinstance(v, float) and f not in self.counts:
                n, mean = self.mean.get(f, (0, 0.0))
                self.mean[f] = (n + 1, mean + (v - mean) / (n + 1))
                continue
            c = self.counts.setdefault(f, Counter())
            c[v] += 1
            if f not in self.mode or c[v] > c[self.mode[f]]:
                self.mode[f] = v


# ---------------------------------------------------------------------- streams


def load_streams(n: int, seed: int) -> dict:
    net = TreeBayesNet.random(seed=NET_SEED)
    raw = {
        "TAN-net": net.events(n, seed=seed),
        "LED": list(synth.LED(seed=seed, noise_percentage=0.1, irrelevant_features=True).take(n)),
        "STAGGER": list(synth.STAGGER(seed=seed, balance_classes=False).take(n)),
    }
    out = {}
    for k, (name, events) in enumerate(raw.items()):
        features = list(events[0][0])
        U = np.random.default_rng([seed, 1, k]).random((len(events), len(features)))
        out[name] = (events, features, U)
    return out


def prequential(stream: str, model: str, method: str, rate: float, impute_check: bool):
    """One run: per-event correctness, imputation hits and trials, seconds."""
    events, features, U = DATA[stream]
    m = make_model(model, method)
    imputer = RunningImputer() if method == "mean/mode" else None
    check_em = impute_check and method == "em" and HAS_IMPUTE
    correct = np.zeros(len(events), dtype=bool)
    hits = trials = 0
    start = time.process_time()
    for i, (x, y) in enumerate(events):
        miss = U[i] < rate
        if miss.any():
            xm = {f: (None if mj else x[f]) for f, mj in zip(features, miss)}
            lost = [f for f, mj in zip(features, miss) if mj]
        else:
            xm, lost = x, []
        if imputer is not None:
            filled = imputer.fill(xm)
            if impute_check:
                hits += sum(filled.get(f) == x[f] for f in lost)
                trials += len(lost)
            imputer.update(xm)
            xm = filled
        elif check_em and lost:
            guess = m.impute_one(xm)
            hits += sum(guess.get(f) == x[f] for f in lost)
            trials += len(lost)
        correct[i] = m.predict_one(xm) == y
        m.learn_one(xm, y)
    return correct, hits, trials, time.process_time() - start


def tan_check(kind: str):
    """Train one TAN on the check's training events (``kind``: complete, em or ignore), test on the masked test set."""
    Xtr, ytr, Mtr, Xte, yte, Mte, features = (CHECK[k] for k in ("Xtr", "ytr", "Mtr", "Xte", "yte", "Mte", "features"))
    model = make_model("TAN", "ignore" if kind == "ignore" else "em")
    start = time.process_time()
    for row, miss, y in zip(Xtr.tolist(), Mtr, ytr.tolist()):
        if kind == "complete":
            x = dict(zip(features, row))
        else:
            x = {f: (None if mj else v) for f, v, mj in zip(features, row, miss)}
        model.learn_one(x, y)
    model.rebuild()
    correct = 0
    for row, miss, y in zip(Xte.tolist(), Mte, yte.tolist()):
        x = {f: (None if mj else v) for f, v, mj in zip(features, row, miss)}
        correct += model.predict_one(x) == y
    return correct / len(yte), time.process_time() - start, model.tree


def run_job(job):
    if job[0] == "check":
        return job, tan_check(job[1])
    _, stream, model, method, rate = job
    # imputation accuracy: EM per model; mean/mode once per stream and rate (it does not depend on the model)
    impute_check = rate > 0 and (method == "em" or model == "NaiveBayes")
    return job, prequential(stream, model, method, rate, impute_check)


def job_cost(job) -> float:
    """Rough relative cost, to start the slowest jobs first."""
    if job[0] == "check":
        return 1e9
    _, stream, model, method, rate = job
    per_event = {"NaiveBayes": 1.0, "AODE": 4.0, "TAN": 2.0}[model]
    if method != "mean/mode" and rate > 0:
        per_event *= {"NaiveBayes": 1.5, "AODE": 1.5, "TAN": 5.0}[model]
        if method == "em":
            per_event *= {"NaiveBayes": 5.0, "AODE": 10.0, "TAN": 10.0}[model]
    return per_event * {"TAN-net": 1.0, "LED": 2.5, "STAGGER": 0.5}[stream]


# ---------------------------------------------------------------------- report


def fmt_pct(r: float) -> str:
    return f"{round(100 * r)} %"


def plot(results: dict, optimal: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"NaiveBayes": "tab:blue", "AODE": "tab:orange", "TAN": "tab:green"}
    styles = {"em": ("-", "o"), "ignore": ("--", "s"), "mean/mode": (":", "^")}
    fig, axes = plt.subplots(1, len(STREAMS), figsize=(5.2 * len(STREAMS), 4.6), constrained_layout=True)
    xs = [100 * r for r in RATES]
    for ax, stream in zip(axes, STREAMS):
        for model, colour in colours.items():
            for method, (ls, marker) in styles.items():
                ys = [results.get((stream, model, method, r)) for r in RATES]
                if any(y is None for y in ys):
                    continue
                ax.plot(xs, [y[0].mean() for y in ys], ls=ls, marker=marker, ms=4, color=colour, lw=1.4,
                        label=f"{model} {method}")
        if stream in optimal:
            ax.plot(xs, [optimal[stream][r] for r in RATES], color="black", ls="-.", lw=1.2, label="Bayes-optimal (exact)")
        ax.set_title(stream)
        ax.set_xlabel("missing completely at random (%)")
        ax.set_xticks(xs)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("prequential accuracy")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=None, help="events per stream (default 10000; 2000 with --quick)")
    parser.add_argument("--check-events", type=int, default=None,
                        help="N training and M test events of the TAN check (default 20000 each; 3000 with --quick)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the streams, the masks and the check's samples (default 1)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "missing.png", help="where to write the PNG")
    args = parser.parse_args(argv)
    n = args.events or (2000 if args.quick else 10000)
    n_check = args.check_events or (3000 if args.quick else 20000)
    t0 = time.perf_counter()

    DATA.update(load_streams(n, args.seed))
    net = TreeBayesNet.random(seed=NET_SEED)
    Xtr, ytr = net.sample(n_check, seed=[args.seed, 2])
    Xte, yte = net.sample(n_check, seed=[args.seed, 3])
    CHECK.update(
        Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte, features=net.attributes,
        Mtr=np.random.default_rng([args.seed, 4]).random(Xtr.shape) < CHECK_RATE,
        Mte=np.random.default_rng([args.seed, 5]).random(Xte.shape) < CHECK_RATE,
    )

    methods = METHODS if HAS_EM else ("ignore", "mean/mode")
    jobs = [("preq", s, m, k, r) for s in STREAMS for m in MODELS for k in methods for r in RATES]
    jobs += [("check", k) for k in (("complete", "em", "ignore") if HAS_EM else ("complete", "ignore"))]
    jobs.sort(key=job_cost, reverse=True)
    results, checks = {}, {}
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.jobs) as pool:
        for job, res in pool.imap_unordered(run_job, jobs):
            if job[0] == "check":
                checks[job[1]] = res
            else:
                results[job[1:]] = res
    wall = time.perf_counter() - t0

    cmd = f"python bench/missing.py --events {n} --check-events {n_check} --seed {args.seed}"
    print(f"# stream_nb missing values: {n} events per stream, MCAR at "
          f"{', '.join(fmt_pct(r) for r in RATES)}; TAN check N = M = {n_check}")
    print(f"python {platform.python_version()}, {platform.machine()}, stream_nb {stream_nb.__version__}, "
          f"{os.cpu_count()} cores, {args.jobs} jobs; command: {cmd}")
    if not HAS_EM:
        print("\n**missing=EM() is not available in this stream_nb: EM columns and targets are skipped.**")
    elif not HAS_IMPUTE:
        print("\n**impute_one is not available in this stream_nb: EM imputation accuracy is skipped.**")

    optimal = {"TAN-net": {r: net.optimal_accuracy(r) for r in RATES}}
    print(f"\nTAN-net: attributes {dict(zip(net.attributes, net.n_values))}, classes {net.n_classes}, "
          f"tree {', '.join(f'{p}→{c}' for p, c in net.edges)} (root a0); exact Bayes-optimal accuracy: "
          + ", ".join(f"{fmt_pct(r)} missing {optimal['TAN-net'][r]:.4f}" for r in RATES))

    print("\n## Prequential accuracy\n")
    head = "| stream | model | missing | " + " | ".join(methods)
    head += " | EM − ignore (± 2 SE) |" if HAS_EM else " |"
    print(head + " Bayes-optimal |")
    print("|---|---|---:|" + "---:|" * len(methods) + ("---:|" if HAS_EM else "") + "---:|")
    targets = []
    for s in STREAMS:
        for m in MODELS:
            for r in RATES:
                row = [results[(s, m, k, r)][0] for k in methods]
                cells = [f"{c.mean():.4f}" for c in row]
                if HAS_EM:
                    em, ig = results[(s, m, "em", r)][0], results[(s, m, "ignore", r)][0]
                    diff = em.mean() - ig.mean()
                    se = math.sqrt((em != ig).sum()) / len(em)
                    cells.append(f"{100 * diff:+.2f} ± {200 * se:.2f} pts")
                    noise = "beyond 2 SE" if abs(diff) > 2 * se else "within 2 SE"
                    targets.append((f"EM ≥ ignore: {s}, {m}, {fmt_pct(r)} missing "
                                    f"({em.mean():.4f} vs {ig.mean():.4f}, {100 * diff:+.2f} pts, {noise})", diff >= 0))
                opt = f"{optimal[s][r]:.4f}" if s in optimal else "–"
                print(f"| {s} | {m} | {fmt_pct(r)} | " + " | ".join(cells) + f" | {opt} |")

    print("\n## Imputation accuracy (share of masked values guessed exactly)\n")
    em_cols = [m for m in MODELS] if HAS_EM and HAS_IMPUTE else []
    print("| stream | missing | masked values | mean/mode | " + " | ".join(f"EM {m}" for m in em_cols) + (" |" if em_cols else "|"))
    print("|---|---:|---:|---:|" + "---:|" * len(em_cols))
    for s in STREAMS:
        for r in RATES[1:]:
            _, hits, trials, _ = results[(s, "NaiveBayes", "mean/mode", r)]
            cells = [f"{hits / trials:.4f}"]
            for m in em_cols:
                _, h, t, _ = results[(s, m, "em", r)]
                cells.append(f"{h / t:.4f}")
            print(f"| {s} | {fmt_pct(r)} | {trials:,} | " + " | ".join(cells) + " |")

    print(f"\n## TAN check on TAN-net: train on N = {n_check} events, test on M = {n_check} held-out events, "
          f"{fmt_pct(CHECK_RATE)} MCAR in the test events\n")
    opt_exact = net.optimal_accuracy(CHECK_RATE)
    post = net.posterior(Xte, ~CHECK["Mte"])
    opt_events = float(post.max(1).mean())
    opt_realised = float((post.argmax(1) == yte).mean())
    print("| TAN trained on | test accuracy | CPU seconds |")
    print("|---|---:|---:|")
    labels = {"complete": "complete events", "em": f"{fmt_pct(CHECK_RATE)}-missing events, missing=EM()",
              "ignore": f"{fmt_pct(CHECK_RATE)}-missing events, missing=Ignore()"}
    for k in ("complete", "em", "ignore"):
        if k in checks:
            print(f"| {labels[k]} | {checks[k][0]:.4f} | {checks[k][1]:.1f} |")
    print(f"| Bayes-optimal (true network), expected on these test events: mean max_c P(c given x_observed) | {opt_events:.4f} | |")
    print(f"| Bayes-optimal (true network), realised on these test events | {opt_realised:.4f} | |")
    print(f"| Bayes-optimal (true network), exact at {fmt_pct(CHECK_RATE)} MCAR | {opt_exact:.4f} | |")
    print(f"\ntrue tree: {', '.join(f'{p}→{c}' for p, c in net.edges)}")
    for k in checks:
        print(f"learned tree ({k}): {', '.join(f'{p}→{c}' for p, c, _ in checks[k][2])}")
    if HAS_EM:
        gap = checks["complete"][0] - checks["em"][0]
        targets.append((f"TAN check: EM on {fmt_pct(CHECK_RATE)}-missing within 2 points of complete-data TAN "
                        f"({checks['em'][0]:.4f} vs {checks['complete'][0]:.4f}, gap {100 * gap:+.2f} pts)", gap <= 0.02))

    print("\n## Time (CPU seconds of the prequential runs, summed over streams and rates)\n")
    print("| model | " + " | ".join(methods) + " |")
    print("|---|" + "---:|" * len(methods))
    for m in MODELS:
        print(f"| {m} | " + " | ".join(f"{sum(results[(s, m, k, r)][3] for s in STREAMS for r in RATES):.1f}" for k in methods) + " |")
    print(f"\nwall clock: {wall:.0f} s")

    plot(results, optimal, args.plot)
    print(f"plot: {args.plot}")

    print("\n## Targets\n")
    if not HAS_EM:
        print("- SKIP: every EM target (missing=EM() not available)")
    for text, ok in targets:
        print(f"- {'PASS' if ok else 'FAIL'}: {text}")
    n_fail = sum(not ok for _, ok in targets)
    print(f"\n{len(targets) - n_fail} PASS, {n_fail} FAIL")


if __name__ == "__main__":
    main()
