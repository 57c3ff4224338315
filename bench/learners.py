"""Prequential throughput and accuracy of stream_nb's learners beside their peers, river and scikit-learn.

    python bench/learners.py [--events 20000] [--repeats 5] [--part all|prequential|learn_many|peers|holdout|forgetting]
                             [--jvm-repeats 15] [--jvm-warmup 5] [--no-jvm] [--streams LED,Agrawal]
    python bench/learners.py --profile KDB [--profile-stream LED] [--profile-input dicts|frame|predictions] [--profile-one] [--events 20000]

Every stream is materialised before timing.

Peers (``--part peers``, run first in ``all``): stream_nb's learners beside MOA's
``bayes.NaiveBayes``, Weka 3.8's ``NaiveBayesUpdateable`` and Weka 3.6's ``AODE`` (from
Maven Central jars, cached; see ``bench/peers/``), CapyMOA's ``NaiveBayes`` and river's
``GaussianNB``, on exactly the same events. The events are written once to an ARFF file
with the nominal and numeric declarations MOA uses (LED's and STAGGER's attributes nominal;
Agrawal's ``elevel``, ``car``, ``zipcode`` nominal and the other six numeric; RandomTree's
4 numeric and 4 nominal). stream_nb's models get the same declaration (``types=``). Weka's
AODE takes nominal attributes only, so on the numeric streams both AODEs get the same bins,
the ones stream_nb's AODE would choose by default (equal-frequency, 5 bins from each
feature's first 100 values), fixed up front (``numeric=Edges(...)`` for ours, bin labels in the
ARFF file for Weka's).

Each learner runs the prequential loop (predict each event, then learn it, in order):

- stream_nb's NaiveBayes, AODE and TAN (and river's GaussianNB) one event at a time, the
  loop every river user writes (``predict_one``, then ``learn_one``);
- stream_nb's NaiveBayes, AODE, TAN and KDB (k=2; on LED) through ``prequential_many``, 500
  events a call, given as a list of dicts, and given as a pandas DataFrame
  (``model.prequential_many(df.iloc[i:i + 500], ys[i:i + 500])``, the frame built before
  timing). Where ``prequential_many`` takes no DataFrame, each batch is handed to it as
  ``batch.to_dict("records")``, timed, and the report says so. Each result's prediction is read
  (``result[0]``) to score accuracy; NaiveBayes and AODE also read them as ``results.predictions``
  (the rows "DataFrame, predictions read": a DataFrame's results build no dict of probabilities then);
- CapyMOA's NaiveBayes (``bench/peers/capymoa_peer.py``, in a venv of its own since CapyMOA
  needs Python 3.11 or later and pins its pandas; made on first use, see
  ``bench/peers/capymoa_host.py``) on LED and Agrawal three ways: each instance built in the
  loop from the event's Python values (an array of the values, a nominal value's index looked
  up in a dict, ``LabeledInstance.from_array``) then ``predict`` and ``train``; the same loop
  over instances read by its ``ARFFStream`` before timing; and its ``prequential_evaluation``,
  a Java loop over the ``ARFFStream`` (reading the file is inside that time);
- the Java peers in their harness, which reads the ARFF file into ``weka.core.Instances``
  once and keeps the events in memory (neither parsing nor JVM start-up is timed).

``--no-jvm`` leaves MOA, Weka and CapyMOA out (no JDK needed: ours and river's alone, the
targets against river's GaussianNB); ``--streams`` runs the part on some streams only.

How stream_nb, river and CapyMOA are timed (``bench/peers/protocol.py``): by the CPU time of
the whole process (``time.process_time``), so a helper thread counts, a BLAS worker that a
model's matrix products wake as much as the JVM's JIT and GC threads under CapyMOA; with the
environment a user has (no thread pool limited; the report names any thread variable set in
the environment, and the BLAS libraries' thread counts); one untimed warm-up run of each
model, then ``--repeats`` timed runs, the models' runs interleaved so that background load
hits them alike; the median counts (the best is shown beside it). The first
``prequential_many`` call of each model in the process (a fresh model, the first 500 events
of LED: where kernels are compiled or loaded from a cache) is timed on its own, before the
warm-up run, reported in its own table and left out of the rates. The Java peers are timed
as before: ``--jvm-repeats`` fresh learners in one JVM, each test-then-train loop (MOA:
``getVotesForInstance`` then ``trainOnInstance``; Weka: ``buildClassifier`` on the empty
header, then ``classifyInstance`` and ``updateClassifier``) timed by the learner thread's
CPU clock (``ThreadMXBean``), the first ``--jvm-warmup`` runs left out as JIT warm-up, the
median (and best) of the rest. Ratios compare medians from the same run.

A second table compares the predictions event by event (same model, same declaration: they
may differ only during the cold start, where MOA leaves its class prior unsmoothed, Weka
smooths over every declared value and class, and CapyMOA makes no prediction before its
model holds a class; on numeric streams the Gaussians differ a little too: MOA's variance
divides by n - 1, Weka rounds values to 0.01 when built on an empty header).

Prequential (``--part prequential``, also in ``all``): each model runs the one-event loop
over the same events, and every stream_nb model also ``prequential_many`` on polls of 500
events, as the daemon runs it; the best wall-clock time of ``--repeats`` runs counts (runs
of the different models are interleaved). Ratios are against river's GaussianNB in the same
run. ``--part learn_many``: NaiveBayes, AODE, TAN, SPODE and KDB (k=2) through ``learn_many`` on
DataFrames of 1,000 LED events, timed as the peers (process CPU, median after one untimed warm-up
run); then ``NaiveBayes.learn_many`` timed beside scikit-learn's
``CategoricalNB.partial_fit`` in batches of 1000 on the same categorical data
(scikit-learn gets it already as an integer array). These parts, and ``--profile`` (timed by
the thread's CPU clock), keep numpy's BLAS on one thread, as ``stream-nb run`` does.

Forgetting (``--part forgetting``, not in ``all``): TAN, AODE, SPODE and KDB (k=2) with
``forgetting=Decay(half_life=1000)``, and SPODE and KDB (k=2) with ``drift_detector="ddm"``,
through ``prequential_many`` on polls of 500 LED events given as lists of dicts; then
NaiveBayes, AODE, TAN, SPODE and KDB (k=2), each with ``Decay(half_life=1000)`` and with
``drift_detector="ddm"``, through ``learn_many`` on DataFrames of 500 LED events (the frame
built before timing; the table gives the drifts each model found); both timed as
the peers (process CPU, the environment a user has, one untimed warm-up run, then the
median of ``--repeats`` interleaved runs).

Holdout (``--part holdout``, also in ``all``): ``bench/holdout.py``'s table,
TAN and AODE beside Weka's BayesNet TAN and AODE on MDL bins (see there).

The script prints markdown tables and, last, each target with PASS or FAIL.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from river import naive_bayes
from river.datasets import synth
from sklearn.naive_bayes import CategoricalNB

from stream_nb import AODE, KDB, SPODE, TAN, Decay, Edges, NaiveBayes
from stream_nb.daemon import one_blas_thread

sys.path.insert(0, str(Path(__file__).resolve().parent))
import holdout  # noqa: E402  (bench/holdout.py: TAN and AODE beside Weka's in holdout)
import peers  # noqa: E402  (bench/peers/: the Java peers)
from peers import capymoa_host, protocol  # noqa: E402  (CapyMOA's venv and worker; the timing)

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


#: ``--part forgetting``: models that forget, as a user writes them.
FORGETTING = {
    "TAN, Decay(half_life=1000)": lambda: TAN(forgetting=Decay(half_life=1000)),
    "AODE, Decay(half_life=1000)": lambda: AODE(forgetting=Decay(half_life=1000)),
    "SPODE, Decay(half_life=1000)": lambda: SPODE(forgetting=Decay(half_life=1000)),
    "KDB (k=2), Decay(half_life=1000)": lambda: KDB(k=2, forgetting=Decay(half_life=1000)),
    'SPODE, drift_detector="ddm"': lambda: SPODE(drift_detector="ddm"),
    'KDB (k=2), drift_detector="ddm"': lambda: KDB(k=2, drift_detector="ddm"),
}


#: ``--part forgetting``, ``learn_many``: every model with decay and with a drift detector.
FORGETTING_MANY = {f"{name}, {how}": (lambda make=make, kw=kw: make(**kw))
                   for name, make in (("NaiveBayes", NaiveBayes), ("AODE", AODE), ("TAN", TAN), ("SPODE", SPODE),
                                      ("KDB (k=2)", lambda **kw: KDB(k=2, **kw)))
                   for how, kw in (("Decay(half_life=1000)", {"forgetting": Decay(half_life=1000)}),
                                   ('drift_detector="ddm"', {"drift_detector": "ddm"}))}


def run_forgetting(args) -> None:
    """``--part forgetting``: each model of :data:`FORGETTING` through ``prequential_many`` (polls of 500 dicts),
    then each of :data:`FORGETTING_MANY` through ``learn_many`` (DataFrames of 500 rows), on LED, by process CPU
    (see the module notes)."""
    events = list(STREAMS["LED"]().take(args.events))
    xs, ys = [x for x, _ in events], [y for _, y in events]
    runs = {name: (make, dicts_loop(xs, ys)) for name, make in FORGETTING.items()}
    timings = protocol.measure(runs, repeats=args.repeats, warmup=WARMUP)
    print(f"| LED, {args.events:,} events, prequential_many (polls of {POLL} dicts) | events/s (median) | "
          "events/s (each run) | accuracy |")
    print("|---|---:|---|---:|")
    for name, t in timings.items():
        each = ", ".join(f"{args.events / s:,.0f}" for s in t.seconds)
        print(f"| {name} | {t.median_rate(args.events):,.0f} | {each} | {t.result / args.events:.4f} |")
    frame, labels = pd.DataFrame(xs), pd.Series(ys)

    def learn_many(model):
        for X, y in protocol.frame_batches(frame, labels, POLL):
            model.learn_many(X, y)
        return len(model.drifts)

    timings = protocol.measure({name: (make, learn_many) for name, make in FORGETTING_MANY.items()},
                               repeats=args.repeats, warmup=WARMUP)
    print(f"\n| LED, {args.events:,} events, learn_many (DataFrames of {POLL} rows) | events/s (median) | "
          "events/s (each run) | drifts |")
    print("|---|---:|---|---:|")
    for name, t in timings.items():
        each = ", ".join(f"{args.events / s:,.0f}" for s in t.seconds)
        print(f"| {name} | {t.median_rate(args.events):,.0f} | {each} | {t.result} |")
    print()


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


#: ``--part learn_many``: the five models through ``learn_many`` on DataFrames (KDB with k=2).
LEARN_MANY = {"NaiveBayes": NaiveBayes, "AODE": AODE, "TAN": TAN, "SPODE": SPODE, "KDB (k=2)": lambda: KDB(k=2)}
#: Rows per ``learn_many`` call of ``--part learn_many``.
LEARN_BATCH = 1000


def run_learn_many_models(args) -> None:
    """``--part learn_many``: each model of :data:`LEARN_MANY` through ``learn_many`` on DataFrames of
    :data:`LEARN_BATCH` LED events (built before timing), by process CPU, the median of ``--repeats`` runs after
    one untimed warm-up run, the models' runs interleaved (``bench/peers/protocol.py``)."""
    events = list(STREAMS["LED"]().take(args.events))
    frame, labels = pd.DataFrame([x for x, _ in events]), pd.Series([y for _, y in events])
    parts = list(protocol.frame_batches(frame, labels, LEARN_BATCH))

    def learn_many(model):
        for X, y in parts:
            model.learn_many(X, y)
        return model.n_learned

    timings = protocol.measure({name: (make, learn_many) for name, make in LEARN_MANY.items()},
                               repeats=args.repeats, warmup=WARMUP)
    print(f"\n| LED, {args.events:,} events, learn_many (DataFrames of {LEARN_BATCH:,} rows) | events/s (median) | "
          "events/s (each run) |")
    print("|---|---:|---|")
    for name, t in timings.items():
        each = ", ".join(f"{args.events / s:,.0f}" for s in t.seconds)
        print(f"| {name} | {t.median_rate(args.events):,.0f} | {each} |")


def profile(model_name: str, sname: str, n: int, given: str = "dicts", top: int = 15, one: bool = False) -> None:
    """``--profile``: where ``prequential_many`` of one model spends its time on one stream (with ``one``, the
    one-event loop: ``predict_one`` then ``learn_one``), by cProfile, whose per-call overhead inflates the
    functions called most (the shares of compiled calls and numpy's passes are what it measures best), by
    own time and by cumulative time, after one untimed run of a fresh model (compile or cache load). The
    model is declared as ``--part peers`` declares it (``types=``; KDB with k=2); ``given`` "frame": each
    poll as a DataFrame's rows, as that part's rows do ("predictions": its results read through
    ``results.predictions``, :func:`frame_predictions_loop`)."""
    import cProfile
    import pstats

    events = list(STREAMS[sname]().take(n))
    types = peers.model_types(peers.declare(events, peers.NOMINAL.get(sname))[0])
    make = {"NaiveBayes": NaiveBayes, "AODE": AODE, "TAN": TAN, "SPODE": SPODE, "KDB": KDB}[model_name]

    def fresh():
        return make(types=types, **({"k": 2} if make is KDB else {}))

    if one:
        def loop(model):
            return round(prequential(model, events)[1] * n)
        given = "one event at a time"
    else:
        xs, ys = [x for x, _ in events], [y for _, y in events]
        loop = {"frame": lambda: frame_loop(pd.DataFrame(xs), ys, True),
                "predictions": lambda: frame_predictions_loop(pd.DataFrame(xs), ys)}.get(
                    given, lambda: dicts_loop(xs, ys))()
        given = f"prequential_many (polls of 500) given as {given}"
    loop(fresh())  # untimed: numba's import and cache load
    model = fresh()
    profiler = cProfile.Profile()
    start = time.thread_time()
    correct = profiler.runcall(loop, model)
    seconds = time.thread_time() - start
    print(f"# {model_name} {given} on {n:,} {sname} events: "
          f"{seconds / n * 1e6:.1f} us of thread CPU an event under the profiler, accuracy {correct / n:.4f}\n")
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20000, help="events per stream (default 20000)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed runs per model (default 5): --part peers takes their median after one "
                             "untimed warm-up run, the other parts their best")
    parser.add_argument("--part", choices=("all", "prequential", "learn_many", "peers", "holdout", "forgetting"),
                        default="all", help="which measurements to run (default all; forgetting only when named)")
    parser.add_argument("--jvm-repeats", type=int, default=15,
                        help="runs of each Java peer in its JVM (default 15)")
    parser.add_argument("--jvm-warmup", type=int, default=5,
                        help="leading Java runs left out as JIT warm-up (default 5)")
    parser.add_argument("--no-jvm", action="store_true",
                        help="--part peers without MOA, Weka and CapyMOA (no JDK needed): stream_nb's learners and "
                             "river's GaussianNB alone, the targets against river's")
    parser.add_argument("--streams", default=",".join(PEER_STREAMS),
                        help=f"--part peers: the streams, comma-separated (default {','.join(PEER_STREAMS)})")
    parser.add_argument("--profile", metavar="MODEL", choices=("NaiveBayes", "AODE", "TAN", "SPODE", "KDB"),
                        help="instead of the benchmark: profile MODEL's prequential_many (polls of 500) on "
                             "--profile-stream with cProfile and print where the time goes")
    parser.add_argument("--profile-stream", default="LED", choices=list(STREAMS), help="stream of --profile")
    parser.add_argument("--profile-input", default="dicts", choices=("dicts", "frame", "predictions"),
                        help="events of --profile as lists of dicts (default) or a DataFrame's rows (predictions: "
                             "the results read through results.predictions)")
    parser.add_argument("--profile-one", action="store_true",
                        help="--profile the one-event loop (predict_one, then learn_one) instead")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats: expected at least 1 timed run, got {args.repeats}")
    if args.profile:
        one_blas_thread()  # its clock is the thread's: every product on this thread
        profile(args.profile, args.profile_stream, args.events, args.profile_input, one=args.profile_one)
        return
    args.streams = [name.strip() for name in args.streams.split(",") if name.strip()]
    if not args.streams or set(args.streams) - set(PEER_STREAMS):
        parser.error(f"--streams: expected names among {', '.join(PEER_STREAMS)}, got {','.join(args.streams)}")
    if not 0 <= args.jvm_warmup < args.jvm_repeats:
        parser.error(f"--jvm-warmup: expected 0 <= warm-up < --jvm-repeats ({args.jvm_repeats}), got {args.jvm_warmup}")

    print(f"# stream_nb learners benchmark: {args.events} events per stream, {args.repeats} timed runs each")
    print(f"python {platform.python_version()}, {platform.machine()}, command: python bench/learners.py "
          f"--events {args.events} --repeats {args.repeats} --part {args.part}"
          + (f" --jvm-repeats {args.jvm_repeats} --jvm-warmup {args.jvm_warmup}" if args.part in ("all", "peers") else "")
          + (" --no-jvm" if args.no_jvm else "") + (f" --streams {','.join(args.streams)}"
                                                   if args.streams != list(PEER_STREAMS) else "")
          + "\n")
    results = {}
    targets = []
    if args.part in ("all", "peers"):  # first: the first call of each model is this process's first
        targets += run_peers(args)
    if args.part == "forgetting":  # timed as the peers: the environment a user has
        run_forgetting(args)
    # the other parts keep numpy's BLAS on one thread, as `stream-nb run` does
    one_blas_thread()
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
        run_learn_many_models(args)
        print("\n| learn_many, batches of 1000 | events/s |")
        print("|---|---:|")
        led = list(STREAMS["LED"]().take(max(args.events, 50000)))
        ours, sk, same = bench_learn_many(led, args.repeats)
        print(f"| stream_nb NaiveBayes.learn_many (DataFrame in) | {ours:,.0f} |")
        print(f"| scikit-learn CategoricalNB.partial_fit (int array in) | {sk:,.0f} |")
        print(f"| ratio | {ours / sk:.2f} |")
        print(f"\nsame posteriors as CategoricalNB (alpha=1): {same}\n")
        targets.append(("NaiveBayes.learn_many at least as fast as CategoricalNB.partial_fit", ours >= sk))
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
#: Streams CapyMOA runs on (its NaiveBayes is MOA's: the same model as the MOA peer).
CAPYMOA_STREAMS = ("LED", "Agrawal")
#: stream_nb's default discretisation (AODE's bins and warmup), which Weka's AODE is given on numeric streams.
AODE_BINS, AODE_WARMUP = 5, 100
#: Events after which the same model on the same nominal events must predict as its peer does.
COLD_START = 1000
#: Events per ``prequential_many`` call (a poll of the daemon), and the untimed runs before the timed ones.
POLL, WARMUP = 500, 1
#: The learners' names as the tables give them.
CAPY = "CapyMOA NaiveBayes"
ONE, DICTS, FRAME = "one event", "prequential_many, dicts", "prequential_many, DataFrame"
#: The DataFrame's results read through their ``predictions`` (no dict of probabilities built).
PREDICTIONS = "prequential_many, DataFrame, predictions read"


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


def one_event_loop(events):
    """The loop every river user writes: ``predict_one``, then ``learn_one``; returns the correct predictions."""
    def loop(model):
        correct = 0
        for x, y in events:
            correct += model.predict_one(x) == y
            model.learn_one(x, y)
        return correct
    return loop


def _correct(results, ys):
    return sum(r[0] == y for r, y in zip(results, ys))


def dicts_loop(xs, ys, poll=POLL):
    """``prequential_many`` over lists of dicts, ``poll`` events a call."""
    def loop(model):
        return sum(_correct(model.prequential_many(xs[s], ys[s]), ys[s]) for s in protocol.batches(len(xs), poll))
    return loop


def frame_loop(frame, ys, takes_frames, poll=POLL):
    """``prequential_many`` over a DataFrame, ``poll`` rows a call (``frame.iloc[i:i + poll]``).

    Where ``prequential_many`` takes no DataFrame (``takes_frames`` false), each batch is handed to it
    as ``batch.to_dict("records")``: the conversion a user would write, timed with the rest.
    """
    def loop(model):
        correct = 0
        for X, y in protocol.frame_batches(frame, ys, poll):
            correct += _correct(model.prequential_many(X if takes_frames else X.to_dict("records"), y), y)
        return correct
    return loop


def frame_predictions_loop(frame, ys, poll=POLL):
    """:func:`frame_loop`, each call's predictions read from its results' ``predictions`` (the DataFrame's
    results, :class:`~stream_nb.learners._results.PrequentialResults`, build no dict of probabilities then):
    every prediction is still read and scored, as a user scoring accuracy reads them."""
    def loop(model):
        correct = 0
        for X, y in protocol.frame_batches(frame, ys, poll):
            correct += sum(p == t for p, t in zip(model.prequential_many(X, y).predictions, y))
        return correct
    return loop


#: Per model: whether ``prequential_many`` takes a DataFrame, found by its first call in this process.
TAKES_FRAMES: dict = {}
#: The first calls, as ``(model, stream, input, protocol.FirstCall)`` rows, in the order they ran.
FIRST_CALLS: list = []


def _first_prequential_many(model, make, frame, xs, ys, sname):
    """Time the process's first ``prequential_many`` of ``model`` (a fresh one, the first ``POLL`` events).

    It is given the DataFrame's first rows; when it refuses a DataFrame, the same events as dicts
    (and the model's DataFrame rows go through ``to_dict("records")``). Untimed runs follow it.
    """
    if model in TAKES_FRAMES:
        return TAKES_FRAMES[model]
    first = protocol.first_call(lambda: make().prequential_many(frame.iloc[:POLL], ys[:POLL]))
    if first.error is None:
        FIRST_CALLS.append((model, sname, "DataFrame", first))
        TAKES_FRAMES[model] = True
    else:
        refused = f"{type(first.error).__name__}: {first.error}"
        FIRST_CALLS.append((model, sname, f"dicts (a DataFrame was refused: {refused[:60]})",
                            protocol.first_call(lambda: make().prequential_many(xs[:POLL], ys[:POLL]))))
        TAKES_FRAMES[model] = False
    return TAKES_FRAMES[model]


def our_runs(sname, events, types, aode_kw, aode_label):
    """stream_nb's (and river's) runs on one stream: ``{label: (make, loop)}`` for :func:`protocol.measure`."""
    xs, ys = [x for x, _ in events], [y for _, y in events]
    frame = pd.DataFrame(xs)
    models = {"stream_nb NaiveBayes": (lambda: NaiveBayes(types=types), (ONE, DICTS, FRAME, PREDICTIONS)),
              aode_label: (lambda: AODE(types=types, **aode_kw), (ONE, DICTS, FRAME, PREDICTIONS))}
    if sname == "LED":
        models["stream_nb TAN"] = (lambda: TAN(types=types), (ONE, DICTS, FRAME))
        models["stream_nb KDB (k=2)"] = (lambda: KDB(k=2, types=types), (DICTS, FRAME))
    elif sname != "Agrawal":  # STAGGER and RandomTree: the rows of the agreement table's models
        models = {name: (make, (ONE, DICTS)) for name, (make, _) in models.items()}
    runs = {}
    if sname in ("LED", "Agrawal"):  # the one-event ratios are to river's GaussianNB
        runs[f"river GaussianNB, {ONE}"] = (naive_bayes.GaussianNB, one_event_loop(events))
    for name, (make, paths) in models.items():
        if FRAME in paths:  # before any other call of this model in the process
            takes = _first_prequential_many(name.split(" (bins")[0], make, frame, xs, ys, sname)
        loops = {ONE: one_event_loop(events), DICTS: dicts_loop(xs, ys)}
        if FRAME in paths:
            loops[FRAME] = frame_loop(frame, ys, takes)
        if PREDICTIONS in paths and takes:
            loops[PREDICTIONS] = frame_predictions_loop(frame, ys)
        paths = [path for path in paths if path in loops]
        for path in paths:
            runs[f"{name}, {path}"] = (make, loops[path])
    return runs


def _their_runs(sname, events, attrs, target, edges, aode_name, args, capymoa):
    """The Java peers' runs on one stream (``{learner: result}``), and CapyMOA's (None: not run)."""
    runs = {"repeats": args.jvm_repeats, "warmup": args.jvm_warmup}
    capy = None
    with tempfile.TemporaryDirectory(prefix="stream_nb-peers-") as tmp:
        arff = peers.write_arff(Path(tmp) / f"{sname}.arff", events, attrs, target, sname)
        if edges:
            binned, battrs = peers.bin_events(events, attrs, edges)
            arff_bins = peers.write_arff(Path(tmp) / f"{sname}-bins.arff", binned, battrs, target, f"{sname}, binned")
        else:
            arff_bins = arff
        theirs = {
            "MOA NaiveBayes": peers.prequential("moa", arff, target, "MOA NaiveBayes", "bayes.NaiveBayes", **runs),
            "Weka NaiveBayesUpdateable": peers.prequential(
                "weka-3.8", arff, target, "Weka NaiveBayesUpdateable", "weka.classifiers.bayes.NaiveBayesUpdateable", **runs),
            aode_name: peers.prequential("weka-3.6", arff_bins, target, aode_name, "weka.classifiers.bayes.AODE", **runs),
        }
        if sname in CAPYMOA_STREAMS and capymoa:
            jsonl = capymoa_host.write_events(Path(tmp) / f"{sname}.jsonl", events, attrs, target)
            capy = capymoa_host.prequential(arff, jsonl, target, args.repeats, WARMUP)
    return theirs, capy


def peer_stream(sname, events, args, capymoa=True):
    """The peers and stream_nb's learners on one stream, declared alike (with ``args.no_jvm``: ours and river's).

    Returns ``{learner: (median events/s, best events/s, accuracy, clock)}`` and the agreement rows
    ``(ours, peer, ours correct, peer correct, predictions that differ, the last event (1-based) whose
    predictions differ or 0)``.
    """
    attrs, target = peers.declare(events, peers.NOMINAL.get(sname))
    types = peers.model_types(attrs)
    numeric = [a.name for a in attrs if a.kind == "numeric"]
    # Weka's AODE takes nominal attributes only: on numeric streams both AODEs get the bins
    # stream_nb would choose by default (equal-frequency, from the first values), fixed up front.
    edges = {f: peers.equal_frequency_edges(_first_observed(events, f, AODE_WARMUP), AODE_BINS) for f in numeric}
    aode_kw = {"numeric": Edges(edges)} if numeric else {}
    aode_label = "stream_nb AODE" + (" (bins as Weka's)" if numeric else "")
    aode_name = "Weka 3.6 AODE" + (", our bins" if numeric else "")
    theirs, capy = ({}, None) if args.no_jvm else _their_runs(sname, events, attrs, target, edges, aode_name, args,
                                                               capymoa)
    n = len(events)
    jvm = f"JVM thread CPU, median of {args.jvm_repeats - args.jvm_warmup} after {args.jvm_warmup}"
    process = f"process CPU, median of {args.repeats} after {WARMUP}"
    table = {name: (r.median_eps, r.best_eps, r.accuracy, jvm) for name, r in theirs.items()}
    if capy is not None:
        for loop in capymoa_host.LOOPS:
            t = protocol.Timing(capy.seconds[loop], capy.correct[loop])
            table[f"{CAPY}, {loop}"] = (t.median_rate(n), t.best_rate(n), t.result / n, process)
    for name, t in protocol.measure(our_runs(sname, events, types, aode_kw, aode_label),
                                    repeats=args.repeats, warmup=WARMUP).items():
        table[name] = (t.median_rate(n), t.best_rate(n), t.result / n, process)
    if not theirs:  # --no-jvm: no peer to agree with
        return table, []
    ys = [y for _, y in events]
    nb = _predictions(NaiveBayes(types=types), events)
    aode = _predictions(AODE(types=types, **aode_kw), events)
    pairs = [("stream_nb NaiveBayes", nb, "MOA NaiveBayes", theirs["MOA NaiveBayes"]),
             ("stream_nb NaiveBayes", nb, "Weka NaiveBayesUpdateable", theirs["Weka NaiveBayesUpdateable"]),
             (aode_label, aode, aode_name, theirs[aode_name])]
    if capy is not None:
        moa = theirs["MOA NaiveBayes"]
        pairs.append((f"{CAPY} (capymoa {capy.version})", capy.predictions, "MOA NaiveBayes", moa))
    agreement = []
    for ours_label, preds, peer, res in pairs:
        differ = [i for i, (a, b) in enumerate(zip(preds, res.predictions)) if a != b]
        agreement.append((ours_label, peer, sum(p == y for p, y in zip(preds, ys)), res.correct,
                          len(differ), differ[-1] + 1 if differ else 0))
    return table, agreement


def _environment_line():
    """What the timed runs of ours share with a user's process: the thread variables and BLAS's threads."""
    from threadpoolctl import threadpool_info

    set_vars = protocol.thread_variables()
    blas = ", ".join(f"{Path(p['filepath']).name} {p['num_threads']} threads" for p in threadpool_info()
                     if p.get("user_api") == "blas") or "none loaded"
    shown = ", ".join(f"{k}={v}" for k, v in set_vars.items()) or "none set"
    return f"thread variables: {shown}; BLAS libraries loaded: {blas}"


#: The issue's speed targets: (text, stream, learner, reference learner, at least this times the reference).
SPEED_TARGETS = (
    ("NaiveBayes, DataFrame >= 1.5x MOA NaiveBayes (LED)", "LED",
     f"stream_nb NaiveBayes, {FRAME}", "MOA NaiveBayes", 1.5),
    ("AODE, DataFrame >= 1.5x Weka AODE (LED)", "LED", f"stream_nb AODE, {FRAME}", "Weka 3.6 AODE", 1.5),
    ("NaiveBayes, DataFrame, predictions read >= 1.5x MOA NaiveBayes (LED)", "LED",
     f"stream_nb NaiveBayes, {PREDICTIONS}", "MOA NaiveBayes", 1.5),
    ("AODE, DataFrame, predictions read >= 1.5x Weka AODE (LED)", "LED", f"stream_nb AODE, {PREDICTIONS}",
     "Weka 3.6 AODE", 1.5),
    ("TAN, DataFrame >= Weka AODE (LED)", "LED", f"stream_nb TAN, {FRAME}", "Weka 3.6 AODE", 1.0),
    ("KDB (k=2), DataFrame >= 0.5x Weka AODE (LED)", "LED", f"stream_nb KDB (k=2), {FRAME}", "Weka 3.6 AODE", 0.5),
    ("NaiveBayes, dicts >= 0.4x MOA NaiveBayes (LED)", "LED", f"stream_nb NaiveBayes, {DICTS}", "MOA NaiveBayes", 0.4),
    ("NaiveBayes, one event >= 25x river GaussianNB (LED)", "LED",
     f"stream_nb NaiveBayes, {ONE}", f"river GaussianNB, {ONE}", 25),
    ("AODE, one event >= 10x river GaussianNB (LED)", "LED", f"stream_nb AODE, {ONE}", f"river GaussianNB, {ONE}", 10),
    ("TAN, one event >= 10x river GaussianNB (LED)", "LED", f"stream_nb TAN, {ONE}", f"river GaussianNB, {ONE}", 10),
    ("NaiveBayes, one event >= CapyMOA per-event loop fed from Python values (LED)", "LED",
     f"stream_nb NaiveBayes, {ONE}", f"{CAPY}, python values", 1.0),
    ("NaiveBayes, one event >= CapyMOA per-event loop fed from Python values (Agrawal)", "Agrawal",
     f"stream_nb NaiveBayes, {ONE}", f"{CAPY}, python values", 1.0),
)


def run_peers(args):
    """The peers beside ours: the events/s, first-call, ratio and agreement tables; returns the targets to print."""
    reason = None if args.no_jvm else peers.ready()
    if reason:
        print(f"\n{reason}\n")
        return []
    skipped = "--no-jvm: MOA, Weka and CapyMOA left out" if args.no_jvm else capymoa_host.unavailable()
    if skipped:
        print(f"\n{skipped}\n")
    print(f"\nPeers and stream_nb on the same {args.events} events, prequential (each event predicted, then "
          f"learned). Events/s of CPU time: the Java peers of their learner thread, the median (and best) of "
          f"{args.jvm_repeats - args.jvm_warmup} runs after {args.jvm_warmup} JIT warm-up run(s) in one JVM; "
          f"stream_nb, river and CapyMOA of the whole process, the median (and best) of {args.repeats} "
          f"interleaved runs after {WARMUP} warm-up run(s), the first call of each model timed on its own "
          f"(below). {_environment_line()}.\n")
    print("| stream | learner | events/s (median) | events/s (best) | × MOA NaiveBayes | accuracy | clock |")
    print("|---|---|---:|---:|---:|---:|---|")
    results, agreements = {}, {}
    for sname in args.streams:
        events = list(STREAMS[sname]().take(args.events))
        table, agreement = peer_stream(sname, events, args, capymoa=not skipped)
        results[sname], agreements[sname] = table, agreement
        base = table["MOA NaiveBayes"][0] if "MOA NaiveBayes" in table else None
        for name, (median, best, acc, clock) in table.items():
            moa = f"{median / base:.2f}" if base else "-"
            print(f"| {sname} | {name} | {median:,.0f} | {best:,.0f} | {moa} | {acc:.4f} | {clock} |")
        sys.stdout.flush()
    print(f"\nFirst call of each model in this process (compile or cache load): prequential_many on a fresh "
          f"model and the first {POLL} events, before the warm-up run and left out of the rates:\n")
    print("| model | stream | input | process CPU (s) | wall (s) |")
    print("|---|---|---|---:|---:|")
    for model, sname, given, first in FIRST_CALLS:
        print(f"| {model} | {sname} | {given} | {first.cpu:.3f} | {first.wall:.3f} |")
    refused = [m for m, takes in TAKES_FRAMES.items() if not takes]
    if refused:
        print(f"\n{', '.join(refused)}: prequential_many took no DataFrame, so the DataFrame rows hand it each "
              "batch as `batch.to_dict(\"records\")` (timed).")
    if any(agreements.values()):
        print("\nAgreement on the same events (prequential predictions compared one by one):\n")
        print("| stream | learner | peer | learner correct | peer correct | predictions that differ | last event that differs |")
        print("|---|---|---|---:|---:|---:|---:|")
        for sname, rows in agreements.items():
            for ours, peer, ours_correct, peer_correct, differ, last in rows:
                print(f"| {sname} | {ours} | {peer} | {ours_correct} | {peer_correct} | {differ} | {last or '-'} |")
    print("\nThe issue's speed targets (medians, the same run):\n")
    print("| target | learner events/s | reference events/s | ratio | at least |")
    print("|---|---:|---:|---:|---:|")
    targets = []
    for text, sname, learner, reference, factor in SPEED_TARGETS:
        res = results.get(sname, {})
        if learner not in res:  # a stream left out
            continue
        if reference not in res:  # CapyMOA skipped (or every peer: --no-jvm)
            print(f"| {text} | {res[learner][0]:,.0f} | skipped | - | {factor:g} |")
            continue
        ratio = res[learner][0] / res[reference][0]
        print(f"| {text} | {res[learner][0]:,.0f} | {res[reference][0]:,.0f} | {ratio:.2f} | {factor:g} |")
        targets.append((text, ratio >= factor))
    print()
    # the DataFrame and the dicts give prequential_many the same events: the same predictions
    for sname in ("LED", "Agrawal"):
        res = results.get(sname, {})
        for name in sorted({k.rsplit(", ", 2)[0] for k in res if k.endswith(FRAME)}):
            same = round(res[f"{name}, {FRAME}"][2] * args.events) == round(res[f"{name}, {DICTS}"][2] * args.events)
            targets.append((f"{name} prequential_many: a DataFrame predicts as dicts on {sname}", same))
            if f"{name}, {PREDICTIONS}" in res:
                same = res[f"{name}, {PREDICTIONS}"][2] == res[f"{name}, {FRAME}"][2]
                targets.append((f"{name} prequential_many: a DataFrame's predictions are its results' on {sname}",
                                same))
    # All-nominal streams: the same models, so predictions may differ only while the smoothing of a
    # cold start differs (MOA's unsmoothed class prior; Weka's Laplace over every declared value and class).
    for sname in ("LED", "STAGGER"):
        for ours, peer, _, _, _, last in agreements.get(sname, ()):
            targets.append((f"{ours} predicts as {peer} from event {COLD_START:,} on, on {sname}", last < COLD_START))
    return targets


if __name__ == "__main__":
    main()
