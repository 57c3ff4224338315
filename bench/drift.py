"""Forgetting under concept drift: windows, decay and drift resets against river's contenders.

    python bench/drift.py                      # 100,000 events per stream (docs/benchmarks.md, "Drift")
    python bench/drift.py --events 20000       # quicker
    python bench/drift.py --streams STAGGER-abrupt,LED
    python bench/drift.py --memory             # bytes kept per model with a window
    python bench/drift.py --decay --events 20000 --streams SEA-abrupt,LED   # what decay costs each model
    python bench/drift.py --streams LED --save led.json; ...; python bench/drift.py --load *.json

Streams (no download; see ``stream_nb/tools/evaluate/_drifting.py``): STAGGER
with three abrupt changes, SEA with three abrupt changes and 10% noise, Agrawal
with one abrupt and with one gradual change, Hyperplane rotating slowly, and
LED (stationary: what false alarms cost). ``stream-nb evaluate --input
river:NAME`` runs the same streams.

Contenders, in the same run, each prequential (predict, then learn) over the
same events: our NaiveBayes without forgetting, with windows, with decay, with
each of river's drift detectors (and windows with one); river's GaussianNB,
``drift.DriftRetrainingClassifier`` around GaussianNB (its default detector,
DDM) and ``tree.HoeffdingAdaptiveTreeClassifier``.

Recovery: after each abrupt change at p, the accuracy over events
[p, p + 2000) and over its last 500, [p + 1500, p + 2000), against a fresh
NaiveBayes that learns the new concept only, from p on (the same events).

Targets checked (and printed):

1. on every drifting stream our best setting beats every river contender;
2. on LED the recommended setting loses at most half a point against no forgetting;
3. after each abrupt change the recommended setting is within 2 points of the
   fresh model over [p + 1500, p + 2000) (recovered within 2,000 events).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

import numpy as np
from river import drift, naive_bayes, tree

from stream_nb import Decay, EqualFrequency, NaiveBayes, Window
from stream_nb.learners import DETECTORS
from stream_nb.tools.evaluate import DRIFT_STREAMS, RIVER_STREAMS

DRIFTING = list(DRIFT_STREAMS)
STREAMS = DRIFTING + ["LED"]
#: The setting the docs recommend (docs/daemon/settings.md, docs/benchmarks.md "Drift").
RECOMMENDED_DEFAULT = "nb:window=2000"


def ours() -> dict:
    out = {  # named as the specs of ``stream-nb evaluate --models``
        "nb": dict(),
        "nb:window=2000": dict(forgetting=Window(2000)),
        "nb:window=10000": dict(forgetting=Window(10000)),
        "nb:half_life=1000": dict(forgetting=Decay(half_life=1000.0)),
        "nb:half_life=5000": dict(forgetting=Decay(half_life=5000.0)),
    }
    # KSWIN is left out: a Kolmogorov-Smirnov test per event on 0/1 errors is slow (15x DDM) and meant for
    # continuous values; it is supported (drift_detector="kswin") and tested
    out.update({f"nb:{name}": dict(drift_detector=name) for name in DETECTORS if name != "kswin"})
    out["nb:window=10000+hddm_a"] = dict(forgetting=Window(10000), drift_detector="hddm_a")
    out["nb:window=10000+ddm"] = dict(forgetting=Window(10000), drift_detector="ddm")
    return {name: (lambda kw=kw: NaiveBayes(**kw)) for name, kw in out.items()}


def ours_aode() -> dict:
    """AODE (numeric features by the default supervised two-layer discretiser) without forgetting, with a
    window, with DDM."""
    from stream_nb import AODE

    out = {"aode": dict(), "aode:window=2000": dict(forgetting=Window(2000)), "aode:ddm": dict(drift_detector="ddm")}
    return {name: (lambda kw=kw: AODE(**kw)) for name, kw in out.items()}


def ours_tan() -> dict:
    """TAN without forgetting, with a window, with DDM (numeric features by the default supervised
    two-layer discretiser), and with DDM over 5 equal-frequency bins (``numeric=EqualFrequency()``)."""
    from stream_nb import TAN

    out = {"tan": dict(), "tan:window=2000": dict(forgetting=Window(2000)), "tan:ddm": dict(drift_detector="ddm"),
           "tan:equal_frequency+ddm": dict(numeric=EqualFrequency(), drift_detector="ddm")}
    return {name: (lambda kw=kw: TAN(**kw)) for name, kw in out.items()}


def rivers() -> dict:
    return {
        "river GaussianNB": lambda: naive_bayes.GaussianNB(),
        "river DriftRetraining(GaussianNB)": lambda: drift.DriftRetrainingClassifier(naive_bayes.GaussianNB()),
        "river HoeffdingAdaptiveTree": lambda: tree.HoeffdingAdaptiveTreeClassifier(seed=1),
    }


def run_ours(model, xs, ys, chunk=1000) -> np.ndarray:
    correct = np.zeros(len(xs), dtype=bool)
    for lo in range(0, len(xs), chunk):
        for i, r in enumerate(model.prequential_many(xs[lo: lo + chunk], ys[lo: lo + chunk]), lo):
            correct[i] = not isinstance(r, Exception) and r[0] == ys[i]
    return correct


def run_river(model, xs, ys) -> np.ndarray:
    correct = np.zeros(len(xs), dtype=bool)
    for i, (x, y) in enumerate(zip(xs, ys)):
        correct[i] = model.predict_one(x) == y
        model.learn_one(x, y)
    return correct


def events_of(name: str, n: int, seed: int):
    stream = RIVER_STREAMS[name](seed)
    data = list(itertools.islice(stream.take(n), n))
    changes = stream.change_points(n) if hasattr(stream, "change_points") and stream.abrupt else []
    return [x for x, _ in data], [y for _, y in data], changes


def recovery(correct: np.ndarray, changes: list[int], horizon: int = 2000, tail: int = 500):
    """Per change: accuracy over [p, p + horizon) and over its last ``tail`` events."""
    return [(float(correct[p: p + horizon].mean()), float(correct[p + horizon - tail: p + horizon].mean()))
            for p in changes]


def memory(n: int, seed: int) -> None:
    """Bytes of each model's counts and of what a window of 10,000 events in 4 panes keeps beside them, on LED."""
    from stream_nb import AODE, KDB, SPODE, TAN

    xs, ys, _ = events_of("LED", n, seed)
    print(f"| model (LED, {n:,} events) | counts (bytes) | Window(10000, panes=4): panes and capture (bytes) | ratio |")
    print("|---|---:|---:|---:|")
    for cls in (NaiveBayes, AODE, TAN, SPODE, KDB):
        model = cls(forgetting=Window(10000, panes=4))
        model.prequential_many(xs, ys)
        counts = sum(a.nbytes for k, a in model.state()[0].items() if not k.startswith("model."))
        print(f"| {cls.__name__} | {counts:,} | {model.forgetting_nbytes:,} | {model.forgetting_nbytes / counts:.2f} |")


def decay_cost(names: list, n: int, seed: int) -> None:
    """Per stream and model (NaiveBayes, TAN, AODE, SPODE, KDB), prequential accuracy and CPU seconds
    without forgetting and with ``Decay(half_life=1000)``, in polls of 1,000 (``prequential_many``)."""
    from stream_nb import AODE, KDB, SPODE, TAN

    print("| stream | model | accuracy | CPU s | accuracy, Decay(half_life=1000) | CPU s, Decay(half_life=1000) |")
    print("|---|---|---:|---:|---:|---:|")
    for name in names:
        xs, ys, _ = events_of(name, n, seed)
        for cls in (NaiveBayes, TAN, AODE, SPODE, KDB):
            cells = []
            for kw in ({}, {"forgetting": Decay(half_life=1000.0)}):
                t = time.process_time()
                correct = run_ours(cls(**kw), xs, ys)
                cells += [f"{correct.mean():.4f}", f"{time.process_time() - t:.2f}"]
            print(f"| {name} | {cls.__name__} | {' | '.join(cells)} |", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--streams", default=",".join(STREAMS))
    parser.add_argument("--recommended", default=RECOMMENDED_DEFAULT,
                        help=f"the setting checked (default {RECOMMENDED_DEFAULT})")
    parser.add_argument("--aode", action="store_true", help="also run AODE, without forgetting, with a window "
                        "and with DDM")
    parser.add_argument("--tan", action="store_true", help="also run TAN, without forgetting, with a window "
                        "and with DDM")
    parser.add_argument("--only", metavar="PREFIX", help="run only the contenders whose name starts so")
    parser.add_argument("--save", metavar="JSON", help="also write the measurements to this file")
    parser.add_argument("--load", metavar="JSON", nargs="+", help="print the tables of saved measurements "
                        "(e.g. streams run in parallel), run nothing")
    parser.add_argument("--memory", action="store_true", help="print the memory of each model with a window, and stop")
    parser.add_argument("--decay", action="store_true", help="print what Decay(half_life=1000) costs each model, "
                        "and stop")
    args = parser.parse_args(argv)
    if args.memory:
        memory(min(args.events, 30_000), args.seed)
        return 0
    if args.decay:
        decay_cost(args.streams.split(","), args.events, args.seed)
        return 0
    names = args.streams.split(",")
    RECOMMENDED = args.recommended  # noqa: N806
    contenders = {**ours(), **(ours_aode() if args.aode else {}), **(ours_tan() if args.tan else {}), **rivers()}
    if args.only:
        contenders = {k: v for k, v in contenders.items() if k.startswith(args.only)}
    table: dict[str, dict[str, float]] = {}
    recov: dict[str, dict] = {}
    drifts: dict[str, dict[str, int]] = {}
    failures = []
    if args.load:
        for path in args.load:
            with open(path) as f:
                saved = json.load(f)
            for store, part in ((table, saved["table"]), (drifts, saved["drifts"]), (recov, saved["recovery"])):
                for name, values in part.items():
                    store.setdefault(name, {}).update(values)
        names = [n for n in STREAMS if n in table]
        labels = list(contenders)
        labels = [k for k in ours()] + [k for k in {**ours_aode(), **ours_tan()} if any(k in table[n] for n in names)]
        labels += list(rivers())
    for name in names if not args.load else ():
        xs, ys, changes = events_of(name, args.events, args.seed)
        table[name], drifts[name] = {}, {}
        correct = {}
        for label, make in contenders.items():
            model = make()
            t = time.process_time()
            correct[label] = (run_river if label.startswith("river") else run_ours)(model, xs, ys)
            table[name][label] = float(correct[label].mean())
            drifts[name][label] = len(getattr(model, "drifts", []))
            print(f"{name:20s} {label:34s} {table[name][label]:.4f}  drifts {drifts[name][label]:4d}  "
                  f"{time.process_time() - t:6.1f} s", file=sys.stderr, flush=True)
        if changes:
            fresh = []
            for p in changes:
                stop = min(len(xs), p + 2000)
                f = run_ours(NaiveBayes(), xs[p:stop], ys[p:stop])
                fresh.append((float(f.mean()), float(f[-500:].mean())))
            recov[name] = {label: [(p, recovery(c, [p])[0], fr) for p, fr in zip(changes, fresh)]
                           for label, c in correct.items()}
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"table": table, "drifts": drifts, "recovery": recov}, f)
    for name in names:
        best_ours = max((v for k, v in table[name].items() if not k.startswith("river")), default=0.0)
        best_river = max((v for k, v in table[name].items() if k.startswith("river")), default=0.0)
        if name in DRIFTING and best_river and best_ours <= best_river:
            failures.append(f"{name}: our best {best_ours:.4f} <= river's best {best_river:.4f}")
    if not args.load:
        labels = list(contenders)
    print("| model | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label in labels:
        cells = []
        for name in names:
            if label not in table[name]:
                cells.append("–")
                continue
            v, d = table[name][label], drifts[name][label]
            cell = f"{v:.4f}" + (f" ({d})" if d else "")
            cells.append(f"**{cell}**" if v == max(table[name].values()) else cell)
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\n(n): drifts the detector found; bold: the best on the stream.\n")
    print("Per setting: points lost on LED against no forgetting, and the worst gap after an abrupt change p "
          "(accuracy over [p+1500, p+2000) minus a fresh NaiveBayes learning only the new concept from p):\n")
    print("| model | LED loss (points) | worst recovery gap (points) | targets 2 and 3 |")
    print("|---|---:|---:|---|")
    for label in labels:
        if "LED" in table and label not in table["LED"]:
            continue
        led = 100 * (table["LED"]["nb"] - table["LED"][label]) if "LED" in table else float("nan")
        gaps = [100 * (a[1] - fr[1]) for rows in recov.values() for _, a, fr in rows.get(label, ())]
        worst = min(gaps) if gaps else float("nan")
        ok = not (led > 0.5) and not (worst < -2.0)
        print(f"| {label} | {led:.2f} | {worst:+.2f} | {'met' if ok else 'not met'} |")
    print(f"\nRecovery of the recommended setting, {RECOMMENDED}, after each abrupt change p:\n")
    print("| stream | change at | ours [p, p+2000) | fresh [p, p+2000) | ours [p+1500, p+2000) | "
          "fresh [p+1500, p+2000) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, per in recov.items():
        for p, (a, a_tail), (f, f_tail) in per.get(RECOMMENDED, ()):  # absent when --only left it out
            print(f"| {name} | {p:,} | {a:.4f} | {f:.4f} | {a_tail:.4f} | {f_tail:.4f} |")
            if a_tail < f_tail - 0.02:
                failures.append(f"{name} change at {p}: {RECOMMENDED} {a_tail:.4f} over [p+1500, p+2000), "
                                f"fresh model {f_tail:.4f}")
    if "LED" in table:
        loss = table["LED"]["nb"] - table["LED"][RECOMMENDED]
        print(f"\nLED (stationary): {RECOMMENDED} {table['LED'][RECOMMENDED]:.4f} vs no forgetting "
              f"{table['LED']['nb']:.4f}: loses {100 * loss:.2f} points")
        if loss > 0.005:
            failures.append(f"LED: {RECOMMENDED} loses {100 * loss:.2f} points (> 0.5) against no forgetting")
    print("\ntargets: " + ("all met" if not failures else "NOT met:\n  " + "\n  ".join(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
