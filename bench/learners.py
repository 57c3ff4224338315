"""Prequential throughput and accuracy of stream_nb's learners beside river and scikit-learn.

    python bench/learners.py [--events 20000] [--repeats 3] [--part all|prequential|learn_many|peers|holdout]
                             [--jvm-repeats 15] [--jvm-warmup 5]
    python bench/learners.py --profile KDB [--profile-stream LED] [--events 20000]

Every stream is materialised before timing. Each model runs the prequential
loop (predict_one, then learn_one) over the same events, and every stream_nb model
also ``prequential_many`` on polls of 500 events, as the daemon runs it; the best wall-clock
time of ``--repeats`` runs counts (runs of the different models are
interleaved, so background load hits them alike). Ratios are against river's
GaussianNB in the same run. Then ``NaiveBayes.learn_many`` is timed beside
scikit-learn's ``CategoricalNB.partial_fit`` in batches of 1000 on the same
categorical data (scikit-learn gets it already as an integer array).

Peers (``--part peers``, also in ``all``): MOA's ``bayes.NaiveBayes``, Weka
3.8's ``NaiveBayesUpdateable`` and Weka 3.6's ``AODE`` (from Maven Central
jars, cached; see ``bench/peers/``) run on exactly the events ours see, written
once to an ARFF file with the nominal and numeric declarations MOA uses (LED's
and STAGGER's attributes nominal; Agrawal's ``elevel``, ``car``, ``zipcode``
nominal and the other six numeric; RandomTree's 4 numeric and 4 nominal).
stream_nb's NaiveBayes and AODE get the same declaration (``types=``). Weka's
AODE takes nominal attributes only, so on the numeric streams both AODEs get
the same bins, the ones stream_nb's AODE would choose by default
(equal-frequency, 5 bins from each feature's first 100 values), fixed up front
(``bin_edges=`` for ours, bin labels in the ARFF file for Weka's). How the
peers were timed: each Java harness reads the ARFF file into
``weka.core.Instances`` once and keeps the events in memory (neither parsing
nor JVM start-up is timed), then runs ``--jvm-repeats`` fresh learners over
them in one JVM, each test-then-train loop (MOA: ``getVotesForInstance`` then
``trainOnInstance``; Weka: ``buildClassifier`` on the empty header, then
``classifyInstance`` and ``updateClassifier``) timed by the learner thread's
CPU clock (``ThreadMXBean``); the first ``--jvm-warmup`` runs warm the JIT up
and are left out; the table gives the best and the median of the rest. Ours
are timed by the same kind of clock (``time.thread_time``, the thread's CPU
time), best and median of ``--repeats`` interleaved runs, with numpy's BLAS on one
thread (as in ``stream-nb run``) so that this clock sees every matrix product a
model takes: a BLAS worker thread's time is not the learner thread's, and the
peers run on one thread. A second table
compares the predictions event by event (same model, same declaration: they
may differ only during the cold start, where MOA leaves its class prior
unsmoothed and Weka smooths over every declared value and class; on numeric
streams the Gaussians differ a little too: MOA's variance divides by n - 1,
Weka rounds values to 0.01 when built on an empty header).

Holdout (``--part holdout``, also in ``all``): ``bench/holdout.py``'s table,
TAN and AODE beside Weka's BayesNet TAN and AODE on MDL bins (see there).

The script prints markdown tables and, last, each target with PASS or FAIL.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from river import naive_bayes
from river.datasets import synth
from sklearn.naive_bayes import CategoricalNB

from stream_nb import AODE, KDB, SPODE, TAN, NaiveBayes
from stream_nb.daemon import one_blas_thread

sys.path.insert(0, str(Path(__file__).resolve().parent))
import holdout  # noqa: E402  (bench/holdout.py: TAN and AODE beside Weka's in holdout)
import peers  # noqa: E402  (bench/peers/: the Java peers)

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
    "stream_nb AODE, prequential_many": AODE,
    "stream_nb TAN": TAN,
    "stream_nb TAN, prequential_many": TAN,
    "stream_nb SPODE": SPODE,
    "stream_nb SPODE, prequential_many": SPODE,
    "stream_nb KDB (k=2)": KDB,
    "stream_nb KDB (k=2), prequential_many": KDB,
}


def prequential(model, events, clock=time.perf_counter):
    correct = 0
    start = clock()
    for x, y in events:
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
    return clock() - start, correct / len(events)


def prequential_many(model, events, poll=500, clock=time.perf_counter):
    """The same loop, handed over a poll at a time as the daemon does (predictions included)."""
    xs, ys = [x for x, _ in events], [y for _, y in events]
    correct = 0
    start = clock()
    for lo in range(0, len(xs), poll):
        results = model.prequential_many(xs[lo : lo + poll], ys[lo : lo + poll])
        correct += sum(r[0] == y for r, y in zip(results, ys[lo : lo + poll]))
    return clock() - start, correct / len(events)


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


def profile(model_name: str, sname: str, n: int, top: int = 15) -> None:
    """``--profile``: where ``prequential_many`` of one model spends its time on one stream (cProfile, whose
    per-call overhead inflates the functions called most; the shares of numpy's passes are what it measures
    best), by own time and by cumulative time."""
    import cProfile
    import pstats

    events = list(STREAMS[sname]().take(n))
    model = {"NaiveBayes": NaiveBayes, "AODE": AODE, "TAN": TAN, "SPODE": SPODE, "KDB": KDB}[model_name]()
    profiler = cProfile.Profile()
    seconds, acc = profiler.runcall(prequential_many, model, events, clock=time.thread_time)
    print(f"# {model_name} prequential_many on {n:,} {sname} events (polls of 500): {seconds / n * 1e6:.1f} us "
          f"of thread CPU an event under the profiler, accuracy {acc:.4f}\n")
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000, help="events per stream (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per model, best counts (default 3)")
    parser.add_argument("--part", choices=("all", "prequential", "learn_many", "peers", "holdout"), default="all",
                        help="which measurements to run (default all)")
    parser.add_argument("--jvm-repeats", type=int, default=15,
                        help="runs of each Java peer in its JVM (default 15)")
    parser.add_argument("--jvm-warmup", type=int, default=5,
                        help="leading Java runs left out as JIT warm-up (default 5)")
    parser.add_argument("--profile", metavar="MODEL", choices=("NaiveBayes", "AODE", "TAN", "SPODE", "KDB"),
                        help="instead of the benchmark: profile MODEL's prequential_many (polls of 500) on "
                             "--profile-stream with cProfile and print where the time goes")
    parser.add_argument("--profile-stream", default="LED", choices=list(STREAMS), help="stream of --profile")
    args = parser.parse_args(argv)
    one_blas_thread()
    if args.profile:
        profile(args.profile, args.profile_stream, args.events)
        return
    if not 0 <= args.jvm_warmup < args.jvm_repeats:
        parser.error(f"--jvm-warmup: expected 0 <= warm-up < --jvm-repeats ({args.jvm_repeats}), got {args.jvm_warmup}")

    print(f"# stream_nb learners benchmark: {args.events} events per stream, best of {args.repeats}")
    print(f"python {platform.python_version()}, {platform.machine()}, command: python bench/learners.py "
          f"--events {args.events} --repeats {args.repeats} --part {args.part}"
          + (f" --jvm-repeats {args.jvm_repeats} --jvm-warmup {args.jvm_warmup}" if args.part in ("all", "peers") else "")
          + "\n")
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
            ("TAN prequential_many >= 10x river GaussianNB events/s on LED",
             led_res["stream_nb TAN, prequential_many"][0] / base >= 10),
            ("KDB (k=2) prequential_many >= 3x river GaussianNB events/s on LED",
             led_res["stream_nb KDB (k=2), prequential_many"][0] / base >= 3),
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
    if args.part in ("all", "peers"):
        targets += run_peers(args)
    if args.part in ("all", "holdout"):
        print("\nHoldout beside Weka (bench/holdout.py: the first 10,000 events train, the next 10,000 test; "
              "river's Bananas and Phishing: first half, second half):\n")
        targets += holdout.run(list(holdout.STREAMS))
        print()
    for sname, res in results.items():
        river_best = max(res["river GaussianNB"][1], res["river BernoulliNB"][1])
        for m in ("stream_nb NaiveBayes", "stream_nb AODE", "stream_nb TAN", "stream_nb SPODE", "stream_nb KDB (k=2)"):
            targets.append((f"{m} accuracy >= river's best naive Bayes on {sname}", res[m][1] >= river_best))
            many = res.get(f"{m}, prequential_many")
            if many is not None:  # the vectorised runs predict as the one-event path
                targets.append((f"{m} prequential_many accuracy = one event at a time on {sname}",
                                abs(many[1] - res[m][1]) < 1e-9))
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


# --------------------------------------------------------------------------- peers

#: Streams the Java peers run on, each declared to them as bench/peers/ says (Agrawal as MOA declares it).
PEER_STREAMS = ("LED", "STAGGER", "Agrawal", "RandomTree")
#: stream_nb's default discretisation (AODE's bins and warmup), which Weka's AODE is given on numeric streams.
AODE_BINS, AODE_WARMUP = 5, 100
#: Events after which the same model on the same nominal events must predict as its peer does.
COLD_START = 1000


def _predictions(model, events):
    """The prequential predictions of ``model`` (untimed: for the agreement with the peers)."""
    out = []
    for x, y in events:
        out.append(model.predict_one(x))
        model.learn_one(x, y)
    return out


def _first_observed(events, feature, n):
    values = []
    for x, _ in events:
        v = x.get(feature)
        if v is not None and v == v:
            values.append(v)
            if len(values) == n:
                break
    return values


def peer_stream(sname, events, args):
    """The Java peers and stream_nb's NaiveBayes and AODE on one stream, declared alike.

    Returns ``{learner: (best events/s, median events/s, accuracy, correct)}`` and the
    agreement rows ``(ours, peer, ours correct, peer correct, predictions that differ, the last
    event (1-based) whose predictions differ or 0)``.
    """
    attrs, target = peers.declare(events, peers.NOMINAL.get(sname))
    types = peers.model_types(attrs)
    numeric = [a.name for a in attrs if a.kind == "numeric"]
    # Weka's AODE takes nominal attributes only: on numeric streams both AODEs get the bins
    # stream_nb would choose by default (equal-frequency, from the first values), fixed up front.
    edges = {f: peers.equal_frequency_edges(_first_observed(events, f, AODE_WARMUP), AODE_BINS) for f in numeric}
    aode_kw = {"bin_edges": edges} if numeric else {}
    runs = {"repeats": args.jvm_repeats, "warmup": args.jvm_warmup}
    with tempfile.TemporaryDirectory(prefix="stream_nb-peers-") as tmp:
        arff = peers.write_arff(Path(tmp) / f"{sname}.arff", events, attrs, target, sname)
        if numeric:
            binned, battrs = peers.bin_events(events, attrs, edges)
            arff_bins = peers.write_arff(Path(tmp) / f"{sname}-bins.arff", binned, battrs, target, f"{sname}, binned")
        else:
            arff_bins = arff
        aode_name = "Weka 3.6 AODE" + (", our bins" if numeric else "")
        theirs = {
            "MOA NaiveBayes": peers.prequential("moa", arff, target, "MOA NaiveBayes", "bayes.NaiveBayes", **runs),
            "Weka NaiveBayesUpdateable": peers.prequential(
                "weka-3.8", arff, target, "Weka NaiveBayesUpdateable", "weka.classifiers.bayes.NaiveBayesUpdateable", **runs),
            aode_name: peers.prequential("weka-3.6", arff_bins, target, aode_name, "weka.classifiers.bayes.AODE", **runs),
        }
    ours_name = " (bins as Weka's)" if numeric else ""
    ours = {
        "stream_nb NaiveBayes": (lambda: NaiveBayes(types=types), prequential),
        "stream_nb NaiveBayes, prequential_many": (lambda: NaiveBayes(types=types), prequential_many),
        f"stream_nb AODE{ours_name}": (lambda: AODE(types=types, **aode_kw), prequential),
        f"stream_nb AODE{ours_name}, prequential_many": (lambda: AODE(types=types, **aode_kw), prequential_many),
    }
    if sname == "LED":  # issue 14's ratios to river's GaussianNB, timed by the same clock in the same run
        ours.update({
            "river GaussianNB": (naive_bayes.GaussianNB, prequential),
            "stream_nb TAN, prequential_many": (lambda: TAN(types=types), prequential_many),
            "stream_nb KDB (k=2), prequential_many": (lambda: KDB(k=2, types=types), prequential_many),
        })
    seconds = {name: [] for name in ours}
    accuracy = {}
    for _ in range(args.repeats):  # interleaved, so background load hits every model alike
        for name, (make, run) in ours.items():
            model = make()
            sec, accuracy[name] = run(model, events, clock=time.thread_time)
            seconds[name].append(sec)
    n = len(events)
    table = {name: (r.best_eps, r.median_eps, r.accuracy, r.correct) for name, r in theirs.items()}
    for name, secs in seconds.items():
        table[name] = (n / min(secs), n / statistics.median(secs), accuracy[name], round(accuracy[name] * n))
    ys = [y for _, y in events]
    nb = _predictions(NaiveBayes(types=types), events)
    aode = _predictions(AODE(types=types, **aode_kw), events)
    agreement = []
    for ours_label, preds, peer in (
        ("stream_nb NaiveBayes", nb, "MOA NaiveBayes"),
        ("stream_nb NaiveBayes", nb, "Weka NaiveBayesUpdateable"),
        (f"stream_nb AODE{ours_name}", aode, aode_name),
    ):
        differ = [i for i, (a, b) in enumerate(zip(preds, theirs[peer].predictions)) if a != b]
        agreement.append((ours_label, peer, sum(p == y for p, y in zip(preds, ys)), theirs[peer].correct,
                          len(differ), differ[-1] + 1 if differ else 0))
    return table, agreement


def run_peers(args):
    """Issue 14's peers beside ours: events/s and accuracy tables; returns the targets to print."""
    reason = peers.ready()
    if reason:
        print(f"\n{reason}\n")
        return []
    print(f"\nJava peers and stream_nb on the same {args.events} events (prequential; events/s of the "
          f"learner thread's CPU time: Java the best and the median of {args.jvm_repeats - args.jvm_warmup} runs "
          f"after {args.jvm_warmup} JIT warm-up runs in one JVM, stream_nb of {args.repeats} interleaved runs):\n")
    print("| stream | learner | events/s (best) | events/s (median) | × MOA NaiveBayes | accuracy |")
    print("|---|---|---:|---:|---:|---:|")
    results, agreements = {}, {}
    for sname in PEER_STREAMS:
        events = list(STREAMS[sname]().take(args.events))
        table, agreement = peer_stream(sname, events, args)
        results[sname], agreements[sname] = table, agreement
        base = table["MOA NaiveBayes"][0]
        for name, (best, median, acc, _) in table.items():
            print(f"| {sname} | {name} | {best:,.0f} | {median:,.0f} | {best / base:.2f} | {acc:.4f} |")
        sys.stdout.flush()
    print("\nAgreement on the same events (prequential predictions compared one by one):\n")
    print("| stream | stream_nb | peer | stream_nb correct | peer correct | predictions that differ | last event that differs |")
    print("|---|---|---|---:|---:|---:|---:|")
    for sname, rows in agreements.items():
        for ours, peer, ours_correct, peer_correct, differ, last in rows:
            print(f"| {sname} | {ours} | {peer} | {ours_correct} | {peer_correct} | {differ} | {last or '-'} |")
    print()
    targets = []
    for sname in ("LED", "Agrawal"):
        res = results[sname]
        targets.append((f"NaiveBayes prequential_many >= MOA NaiveBayes events/s on {sname}",
                        res["stream_nb NaiveBayes, prequential_many"][0] >= res["MOA NaiveBayes"][0]))
    led = results["LED"]
    targets.append(("AODE prequential_many >= Weka AODE events/s on LED",
                    led["stream_nb AODE, prequential_many"][0] >= led["Weka 3.6 AODE"][0]))
    gnb = led["river GaussianNB"][0]
    print("Ratios on LED (best events/s of each, the same clock, the same run):\n")
    print("| ratio | value |")
    print("|---|---:|")
    ratios = [
        ("NaiveBayes prequential_many / MOA NaiveBayes (LED)",
         led["stream_nb NaiveBayes, prequential_many"][0] / led["MOA NaiveBayes"][0]),
        ("NaiveBayes prequential_many / MOA NaiveBayes (Agrawal)",
         results["Agrawal"]["stream_nb NaiveBayes, prequential_many"][0] / results["Agrawal"]["MOA NaiveBayes"][0]),
        ("AODE prequential_many / Weka 3.6 AODE", led["stream_nb AODE, prequential_many"][0] / led["Weka 3.6 AODE"][0]),
        ("TAN prequential_many / river GaussianNB", led["stream_nb TAN, prequential_many"][0] / gnb),
        ("KDB (k=2) prequential_many / river GaussianNB", led["stream_nb KDB (k=2), prequential_many"][0] / gnb),
    ]
    for text, value in ratios:
        print(f"| {text} | {value:.2f} |")
    print()
    targets.append(("TAN prequential_many >= 10x river GaussianNB events/s on LED",
                    led["stream_nb TAN, prequential_many"][0] >= 10 * gnb))
    targets.append(("KDB (k=2) prequential_many >= 3x river GaussianNB events/s on LED",
                    led["stream_nb KDB (k=2), prequential_many"][0] >= 3 * gnb))
    # All-nominal streams: the same models, so predictions may differ only while the smoothing of a
    # cold start differs (MOA's unsmoothed class prior; Weka's Laplace over every declared value and class).
    for sname in ("LED", "STAGGER"):
        for ours, peer, _, _, _, last in agreements[sname]:
            targets.append((f"{ours} predicts as {peer} from event {COLD_START:,} on, on {sname}", last < COLD_START))
    return targets


if __name__ == "__main__":
    main()
