"""Prequential throughput and accuracy of stream_nb's learners beside river and scikit-learn.

    python bench/learners.py [--events 20000] [--repeats 3] [--part all|prequential|learn_many]

Every stream is materialised before timing. Each model runs the prequential
loop (predict_one, then learn_one) over the same events, and NaiveBayes and TAN
also ``prequential_many`` on polls of 500 events, as the daemon runs it; the best wall-clock
time of ``--repeats`` runs counts (runs of the different models are
interleaved, so background load hits them alike). Ratios are against river's
GaussianNB in the same run. Then ``NaiveBayes.learn_many`` is timed beside
scikit-learn's ``CategoricalNB.partial_fit`` in batches of 1000 on the same
categorical data (scikit-learn gets it already as an integer array).

The script prints markdown tables and, last, each target with PASS or FAIL.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np
import pandas as pd
from river import naive_bayes
from river.datasets import synth
from sklearn.naive_bayes import CategoricalNB

from stream_nb import AODE, KDB, SPODE, TAN, NaiveBayes

STREAMS = {
    "LED": lambda: synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True),
    "STAGGER": lambda: synth.STAGGER(seed=1, balance_classes=False),
    "Agrawal": lambda: synth.Agrawal(seed=1, classification_function=2, perturbation=0.05),
    "RandomTree": lambda: synth.RandomTree(
        seed_tree=1, seed_sample=1, n_classes=3, n_num_features=4, n_cat_features=4, n_categories_per_feature=3
    ),
}

MODELS = {
    "river GaussianNB": naive_bayes.GaussianNB,
    "river BernoulliNB": naive_bayes.BernoulliNB,
    "stream_nb NaiveBayes": NaiveBayes,
    "stream_nb NaiveBayes, prequential_many": NaiveBayes,
    "stream_nb AODE": AODE,
    "stream_nb TAN": TAN,
    "stream_nb TAN, prequential_many": TAN,
    "stream_nb SPODE": SPODE,
    "stream_nb KDB (k=2)": KDB,
}


def prequential(model, events):
    correct = 0
    start = time.perf_counter()
    for x, y in events:
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
    return time.perf_counter() - start, correct / len(events)


def prequential_many(model, events, poll=500):
    """The same loop, handed over a poll at a time as the daemon does (predictions included)."""
    xs, ys = [x for x, _ in events], [y for _, y in events]
    correct = 0
    start = time.perf_counter()
    for lo in range(0, len(xs), poll):
        results = model.prequential_many(xs[lo : lo + poll], ys[lo : lo + poll])
        correct += sum(r[0] == y for r, y in zip(results, ys[lo : lo + poll]))
    return time.perf_counter() - start, correct / len(events)


def bench_stream(events, repeats):
    best = {name: (float("inf"), 0.0) for name in MODELS}
    for _ in range(repeats):
        for name, make in MODELS.items():
            run = prequential_many if name.endswith("prequential_many") else prequential
            seconds, acc = run(make(), events)
            best[name] = (min(best[name][0], seconds), acc)
    return {name: (len(events) / s, acc) for name, (s, acc) in best.items()}


def bench_learn_many(events, repeats, batch=1000):
    X = pd.DataFrame([x for x, _ in events])
    y = pd.Series([y for _, y in events])
    Xn, yn = X.to_numpy(dtype=np.int64), y.to_numpy()
    classes = np.unique(yn)
    ours = sk = float("inf")
    for _ in range(repeats):
        model = NaiveBayes()
        start = time.perf_counter()
        for lo in range(0, len(X), batch):
            model.learn_many(X.iloc[lo : lo + batch], y.iloc[lo : lo + batch])
        ours = min(ours, time.perf_counter() - start)
        ref = CategoricalNB(min_categories=int(Xn.max()) + 1)
        start = time.perf_counter()
        for lo in range(0, len(X), batch):
            ref.partial_fit(Xn[lo : lo + batch], yn[lo : lo + batch], classes=classes)
        sk = min(sk, time.perf_counter() - start)
    # the two must have learned the same thing
    probe = X.iloc[:200]
    same = np.allclose(model.predict_proba_many(probe)[list(ref.classes_)].to_numpy(), ref.predict_proba(probe.to_numpy(dtype=np.int64)))
    return len(X) / ours, len(X) / sk, same


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000, help="events per stream (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per model, best counts (default 3)")
    parser.add_argument("--part", choices=("all", "prequential", "learn_many"), default="all",
                        help="which measurements to run (default all)")
    args = parser.parse_args(argv)

    print(f"# stream_nb learners benchmark: {args.events} events per stream, best of {args.repeats}")
    print(f"python {platform.python_version()}, {platform.machine()}, command: python bench/learners.py "
          f"--events {args.events} --repeats {args.repeats} --part {args.part}\n")
    results = {}
    targets = []
    if args.part in ("all", "prequential"):
        results = run_prequential(args)
        led_res = results["LED"]
        base = led_res["river GaussianNB"][0]
        targets += [
            ("NaiveBayes >= 10x river GaussianNB events/s on LED", led_res["stream_nb NaiveBayes"][0] / base >= 10),
            ("TAN >= 5x river GaussianNB events/s on LED", led_res["stream_nb TAN"][0] / base >= 5),
            ("AODE >= 2x river GaussianNB events/s on LED", led_res["stream_nb AODE"][0] / base >= 2),
        ]
    if args.part in ("all", "learn_many"):
        print("\n| learn_many, batches of 1000 | events/s |")
        print("|---|---:|")
        led = list(STREAMS["LED"]().take(max(args.events, 50000)))
        ours, sk, same = bench_learn_many(led, args.repeats)
        print(f"| stream_nb NaiveBayes.learn_many (DataFrame in) | {ours:,.0f} |")
        print(f"| scikit-learn CategoricalNB.partial_fit (int array in) | {sk:,.0f} |")
        print(f"| ratio | {ours / sk:.2f} |")
        print(f"\nsame posteriors as CategoricalNB (alpha=1): {same}\n")
        targets.append(("NaiveBayes.learn_many at least as fast as CategoricalNB.partial_fit", ours >= sk))
    for sname, res in results.items():
        river_best = max(res["river GaussianNB"][1], res["river BernoulliNB"][1])
        for m in ("stream_nb NaiveBayes", "stream_nb AODE", "stream_nb TAN", "stream_nb SPODE", "stream_nb KDB (k=2)"):
            targets.append((f"{m} accuracy >= river's best naive Bayes on {sname}", res[m][1] >= river_best))
    print("| target | result |")
    print("|---|---|")
    for text, ok in targets:
        print(f"| {text} | {'PASS' if ok else 'FAIL'} |")


def run_prequential(args):
    print("| stream | model | events/s | × river GaussianNB | accuracy |")
    print("|---|---|---:|---:|---:|")
    results = {}
    for sname, make in STREAMS.items():
        events = list(make().take(args.events))
        res = bench_stream(events, args.repeats)
        results[sname] = res
        base = res["river GaussianNB"][0]
        for mname, (eps, acc) in res.items():
            print(f"| {sname} | {mname} | {eps:,.0f} | {eps / base:.1f} | {acc:.4f} |")
        sys.stdout.flush()
    return results


if __name__ == "__main__":
    main()
