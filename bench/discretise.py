"""The two-layer MDL discretiser beside today's equal-frequency bins: accuracy, alternatives, cost.

    python bench/discretise.py [--events 20000]
                               [--part all|prequential|alternatives|cost|naive_bayes|tree_score|early_rebuilds]
                               [--streams Agrawal,RandomTree,...]

- ``prequential``: prequential accuracy (``prequential_many`` on polls of 500, as the daemon runs
  it) of TAN, AODE, SPODE, KDB with ``numeric=EqualFrequency()`` (the bins before issue 15:
  5 equal-frequency bins from each feature's first 100 values) and ``MDL()`` (the default now; KDB's
  ``MDL(fine_bins=16)``, what ``--discretiser mdl`` gives it), on
  every stream of ``bench/learners.py`` and ``bench/holdout.py`` plus numeric streams of our own
  (river's SEA and Hyperplane generators). Agrawal's ``age``, ``hvalue`` and ``hyears`` are
  declared numeric as MOA declares them (``types=``); a data set of a fixed size runs whole.
- ``alternatives``: holdout accuracy (train on the first 10,000 events, test on the next 10,000;
  river's data sets: first half, second half) of TAN and AODE under each discretiser and fine-layer
  size and warm-up, the choice the defaults rest on.
- ``cost``: learn_one and predict_one time per event and the count cells kept, two layers beside one
  (best of ``--repeats`` interleaved runs, ``time.thread_time``).
- ``naive_bayes``: NaiveBayes with ``numeric=Gaussian()`` beside ``numeric=MDL()``, prequential.
- ``tree_score``: TAN's tree weighed by the conditional mutual information (``Tree(score="cmi")``)
  beside the Bayesian score gain Weka's BayesNet TAN search uses (``"bayes"``), prequential, with
  either discretiser.
- ``early_rebuilds``: TAN (with either tree score), SPODE and KDB (their defaults) with the early rebuilds (after 100, 200,
  400 and 800 events) gated by the G-test of dependence (``"g"``) and by the BIC (``"bic"``): the
  events learned when the first structure was built, and the prequential accuracy.

The script prints markdown tables and, last, the prequential target (every stream, every model:
``mdl`` at least ``equal_frequency``) with PASS or FAIL.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from river import datasets
from river.datasets import synth

from stream_nb import AODE, KDB, MDL, SPODE, TAN, EqualFrequency, NaiveBayes, Tree

sys.path.insert(0, str(Path(__file__).resolve().parent))
import holdout  # noqa: E402  (bench/holdout.py: its streams and its split)

STREAMS = {
    "LED": lambda: synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True),
    "STAGGER": lambda: synth.STAGGER(seed=1, balance_classes=False),
    "Agrawal": holdout.STREAMS["Agrawal"],
    "RandomTree": holdout.STREAMS["RandomTree"],
    "SEA": lambda: synth.SEA(seed=1, noise=0.1),
    "Hyperplane": lambda: synth.Hyperplane(seed=1, n_features=6, noise_percentage=0.05),
    "Bananas": datasets.Bananas,
    "Phishing": datasets.Phishing,
    "ImageSegments": datasets.ImageSegments,
    "Shuttle": datasets.Shuttle,
}
FIXED = ("Bananas", "Phishing", "ImageSegments", "Shuttle")
#: Agrawal's attributes as MOA declares them: these integers are numeric
AGRAWAL_NUMERIC = ("salary", "commission", "age", "hvalue", "hyears", "loan")
MODELS = {"TAN": TAN, "AODE": AODE, "SPODE": SPODE, "KDB (k=2)": KDB}


def discretiser(make, d):
    """The ``numeric`` option that ``--discretiser d`` gives the model ``make`` (KDB's MDL: 16 fine bins)."""
    if d == "equal_frequency":
        return EqualFrequency()
    return MDL(fine_bins=16) if make is KDB else MDL()


def types_of(sname):
    return {name: "numeric" for name in AGRAWAL_NUMERIC} if sname == "Agrawal" else None


def events_of(sname, n):
    if sname in FIXED:
        return [(dict(x), y) for x, y in STREAMS[sname]()]
    return [(dict(x), y) for x, y in STREAMS[sname]().take(n)]


def prequential(model, events, poll=500):
    xs, ys = [x for x, _ in events], [y for _, y in events]
    correct = 0
    for lo in range(0, len(xs), poll):
        results = model.prequential_many(xs[lo : lo + poll], ys[lo : lo + poll])
        correct += sum(not isinstance(r, Exception) and r[0] == y for r, y in zip(results, ys[lo : lo + poll]))
    return correct / len(events)


def part_prequential(n, streams):
    print("\n## Prequential accuracy: equal-frequency bins (before) and MDL over a fine layer (now)\n")
    print(f"python bench/discretise.py --events {n} --part prequential --streams {','.join(streams)}\n")
    print("| stream | events | model | equal_frequency | mdl | difference |")
    print("|---|---:|---|---:|---:|---:|")
    targets = []
    for sname in streams:
        events = events_of(sname, n)
        for mname, make in MODELS.items():
            acc = {d: prequential(make(numeric=discretiser(make, d), types=types_of(sname)), events)
                   for d in ("equal_frequency", "mdl")}
            diff = acc["mdl"] - acc["equal_frequency"]
            print(f"| {sname} | {len(events):,} | {mname} | {acc['equal_frequency']:.4f} | {acc['mdl']:.4f} | {diff:+.4f} |")
            sys.stdout.flush()
            targets.append((f"{mname} mdl >= equal_frequency, prequential, {sname}", acc["mdl"] >= acc["equal_frequency"]))
    return targets


def holdout_accuracy(make, train, test):
    model = make()
    for x, y in train:
        model.learn_one(x, y)
    return sum(model.predict_one(x) == y for x, y in test) / len(test)


ALTERNATIVES = [
    ("equal_frequency, 5 bins, warm-up 100 (before)", {"numeric": EqualFrequency()}),
    ("equal_frequency, 10 bins, warm-up 1000", {"numeric": EqualFrequency(bins=10, warmup=1000)}),
    ("mdl, 16 fine bins, warm-up 100", {"numeric": MDL(fine_bins=16)}),
    ("mdl, 64 fine bins, warm-up 100", {"numeric": MDL(fine_bins=64)}),
    ("mdl, 64 fine bins, warm-up 1000", {"numeric": MDL(fine_bins=64, warmup=1000)}),
    ("mdl, 256 fine bins, warm-up 1000", {"numeric": MDL(fine_bins=256, warmup=1000)}),
]


def part_alternatives(streams=("RandomTree", "Agrawal", "Bananas", "Phishing")):
    print("\n## Alternatives, holdout accuracy (the default: `MDL(bins=5, fine_bins=64, warmup=100)`)\n")
    print(f"python bench/discretise.py --part alternatives --streams {','.join(streams)}\n")
    print("| stream | discretiser | TAN | AODE |")
    print("|---|---|---:|---:|")
    for sname in streams:
        if sname in FIXED:
            events = events_of(sname, 0)
            train, test = events[: len(events) // 2], events[len(events) // 2 :]
        else:
            events = events_of(sname, 20000)
            train, test = events[:10000], events[10000:]
        for label, params in ALTERNATIVES:
            accs = [holdout_accuracy(lambda: make(types=types_of(sname), **params), train, test) for make in (TAN, AODE)]
            print(f"| {sname} | {label} | {accs[0]:.4f} | {accs[1]:.4f} |")
            sys.stdout.flush()


def cells(stats):
    C, V = stats.n_classes, len(stats.value_keys)
    return C * V + C * V * V * stats.pairs + stats.table_cells()


def part_cost(n, repeats):
    events = events_of("RandomTree", n)
    print(f"\n## Cost per event, RandomTree ({n:,} events, 4 numeric and 4 nominal features)\n")
    print(f"python bench/discretise.py --events {n} --part cost  (best of {repeats}; the machine was shared, "
          "so compare the two columns of one row, not rows across runs)\n")
    print("| model | discretiser | learn_one µs/event | predict_one µs/event | count cells (fine + coarse) |")
    print("|---|---|---:|---:|---:|")
    best: dict = {}
    for _ in range(repeats):
        for mname, make in MODELS.items():
            for d in ("equal_frequency", "mdl"):
                model = make(numeric=discretiser(make, d))
                start = time.thread_time()
                for x, y in events:
                    model.learn_one(x, y)
                learn = time.thread_time() - start
                start = time.thread_time()
                for x, _ in events:
                    model.predict_one(x)
                predict = time.thread_time() - start
                s = model._stats
                size = cells(s) + (cells(s.fine) if d == "mdl" else 0)
                old = best.get((mname, d), (float("inf"), float("inf"), 0))
                best[(mname, d)] = (min(old[0], learn), min(old[1], predict), size)
    for (mname, d), (learn, predict, size) in best.items():
        print(f"| {mname} | {d} | {1e6 * learn / n:.1f} | {1e6 * predict / n:.1f} | {size:,} |")


def part_naive_bayes(n):
    print("\n## NaiveBayes: Gaussian numeric features or MDL bins, prequential accuracy\n")
    print(f"python bench/discretise.py --events {n} --part naive_bayes\n")
    print("| stream | events | numeric=Gaussian() | numeric=MDL() |")
    print("|---|---:|---:|---:|")
    for sname in STREAMS:
        if sname in ("LED", "STAGGER"):
            continue  # no numeric feature
        events = events_of(sname, n)
        g = prequential(NaiveBayes(types=types_of(sname)), events)
        b = prequential(NaiveBayes(numeric=MDL(), types=types_of(sname)), events)
        print(f"| {sname} | {len(events):,} | {g:.4f} | {b:.4f} |")
        sys.stdout.flush()


def part_tree_score(n, streams):
    print("\n## TAN: tree by conditional mutual information or by Bayesian score gain, prequential accuracy\n")
    print(f"python bench/discretise.py --events {n} --part tree_score --streams {','.join(streams)}\n")
    print("| stream | events | discretiser | Tree(score=\"cmi\") | Tree(score=\"bayes\") | difference |")
    print("|---|---:|---|---:|---:|---:|")
    for sname in streams:
        events = events_of(sname, n)
        for d in ("mdl", "equal_frequency"):
            acc = {t: prequential(TAN(search=Tree(score=t), numeric=discretiser(TAN, d), types=types_of(sname)), events)
                   for t in ("cmi", "bayes")}
            print(f"| {sname} | {len(events):,} | {d} | {acc['cmi']:.4f} | {acc['bayes']:.4f} | {acc['bayes'] - acc['cmi']:+.4f} |")
            sys.stdout.flush()


def gated(cls, rule):
    """``cls`` whose early rebuilds wait for ``rule`` (``"g"`` or ``"bic"``), noting in ``first_build`` the
    events learned when it first built a structure."""

    class Gated(cls):
        _early_rule = rule
        first_build = None

        def rebuild(self):
            if self.first_build is None:
                self.first_build = int(self._stats.n_seen)
            super().rebuild()

    Gated.__name__ = Gated.__qualname__ = cls.__name__
    return Gated


def part_early_rebuilds(n, streams):
    print("\n## Early rebuilds gated by the G-test of dependence or by the BIC, prequential\n")
    print(f"python bench/discretise.py --events {n} --part early_rebuilds --streams {','.join(streams)}\n")
    print("| stream | events | model | first structure at, G-test | first structure at, BIC | accuracy, G-test | "
          "accuracy, BIC |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for sname in streams:
        events = events_of(sname, n)
        for mname, cls, kw in (("TAN", TAN, {}), ("TAN, `Tree(score=\"cmi\")`", TAN, {"search": Tree(score="cmi")}),
                               ("SPODE", SPODE, {}), ("KDB (k=2)", KDB, {"k": 2})):
            first, acc = {}, {}
            for rule in ("g", "bic"):
                model = gated(cls, rule)(types=types_of(sname), **kw)
                acc[rule] = prequential(model, events)
                first[rule] = "never" if model.first_build is None else f"{model.first_build:,}"
            print(f"| {sname} | {len(events):,} | {mname} | {first['g']} | {first['bic']} | {acc['g']:.4f} | "
                  f"{acc['bic']:.4f} |")
            sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000, help="events of a synthetic stream (default 20000)")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of --part cost (default 2)")
    parser.add_argument("--part", choices=("all", "prequential", "alternatives", "cost", "naive_bayes", "tree_score",
                                                 "early_rebuilds"), default="all")
    parser.add_argument("--streams", default=None,
                        help=f"of {', '.join(STREAMS)} (default all; --part alternatives: RandomTree, Agrawal, "
                             "Bananas, Phishing)")
    args = parser.parse_args(argv)
    streams = [s for s in (args.streams or ",".join(STREAMS)).split(",") if s]
    if not streams or any(s not in STREAMS for s in streams):
        parser.error(f"--streams: expected names among {', '.join(STREAMS)}, got {args.streams!r}")
    print("# The two-layer MDL discretiser")
    print(f"python {platform.python_version()}, {platform.machine()}")
    targets = []
    if args.part in ("all", "prequential"):
        targets += part_prequential(args.events, streams)
    if args.part in ("all", "tree_score"):
        part_tree_score(args.events, streams)
    if args.part in ("all", "early_rebuilds"):
        part_early_rebuilds(args.events, streams)
    if args.part in ("all", "naive_bayes"):
        part_naive_bayes(args.events)
    if args.part in ("all", "alternatives"):
        part_alternatives(*([streams] if args.streams else []))
    if args.part in ("all", "cost"):
        part_cost(min(args.events, 10000), args.repeats)
    if targets:
        print("\n| target | result |")
        print("|---|---|")
        for text, ok in targets:
            print(f"| {text} | {'PASS' if ok else 'FAIL'} |")


if __name__ == "__main__":
    main()
