"""Events per second of TAN and KDB (k=2) on LED: their compiled kernels alone, and the models around them.

    python bench/tree_kdb_kernels.py [--events 20000] [--repeats 3]

River's ``synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True)``, its attributes declared
nominal as ``bench/learners.py --part peers`` declares them. Every figure is process CPU time
(``time.process_time``: a helper thread counts), with the environment as it is (no thread variable set);
the median of ``--repeats`` runs after one warm-up run, which also compiles the kernels (its time left
out). Three figures per model:

- the kernel alone: ``_kernel_block`` over the whole stream encoded once into columns, from empty counts
  under the structure the model had after learning the stream (what the kernel costs, without the
  encoding, the rebuilds or the results' dicts); TAN's with ``numeric=EqualFrequency()``, a store
  of one layer (its default keeps a second, fine layer, whose schedule cuts the stream into runs: on
  LED's categorical attributes both hold the same counts);
- ``prequential_many`` on polls of 500 events given as lists of dicts;
- the one-event loop (``predict_one``, then ``learn_one``), over the first fifth of the events.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import peers  # noqa: E402  (bench/peers/: the peers' declarations)

from stream_nb import KDB, TAN, EqualFrequency  # noqa: E402


def _median_rate(n: int, run, repeats: int) -> float:
    run()  # the warm-up (and the kernels' compilation)
    secs = []
    for _ in range(repeats):
        t0 = time.process_time()
        run()
        secs.append(time.process_time() - t0)
    return n / statistics.median(secs)


def kernel_alone(make, xs, ys, repeats: int) -> float:
    model = make()
    model.prequential_many(xs, ys)  # the schema and a structure
    s = model._stats
    stop, D, G, yc = s.encode_run(xs, ys, 0, complete=True, limit=len(xs))
    if stop != len(xs):
        raise RuntimeError(f"the stream did not encode as one run (stopped at {stop})")
    tables = [v for v in vars(s).values() if isinstance(v, np.ndarray) and v.dtype == float]
    out = np.empty((len(yc), s.n_classes))

    def run():
        for table in tables:
            table[...] = 0.0
        model._kernel_block(D, np.arange(D.shape[1]), G, np.arange(G.shape[1]), yc, None, out, True)

    return _median_rate(len(yc), run, repeats)


def prequential_many(make, xs, ys, repeats: int) -> float:
    def run():
        model = make()
        for lo in range(0, len(xs), 500):
            model.prequential_many(xs[lo : lo + 500], ys[lo : lo + 500])

    return _median_rate(len(xs), run, repeats)


def one_event(make, xs, ys, repeats: int) -> float:
    def run():
        model = make()
        for x, y in zip(xs, ys):
            model.predict_one(x)
            model.learn_one(x, y)

    return _median_rate(len(xs), run, repeats)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from river.datasets import synth  # river's streams: loaded late

    events = list(synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True).take(args.events))
    attrs, _ = peers.declare(events, None)
    types = peers.model_types(attrs)
    xs, ys = [x for x, _ in events], [y for _, y in events]
    models = {  # (the model, the model whose kernel is timed alone)
        "TAN": (lambda: TAN(types=types), lambda: TAN(types=types, numeric=EqualFrequency())),
        "KDB (k=2)": (lambda: KDB(k=2, types=types),) * 2,
    }
    print(f"# LED, {len(xs):,} events; events/s of process CPU time, median of {args.repeats} after a warm-up")
    print("| model | kernel alone | prequential_many (dicts, polls of 500) | one-event loop |")
    print("|---|---:|---:|---:|")
    for name, (make, plain) in models.items():
        # (a tree without kernels, to time it before and after: no figure)
        alone = kernel_alone(plain, xs, ys, args.repeats) if hasattr(plain(), "_kernel_block") else float("nan")
        many = prequential_many(make, xs, ys, args.repeats)
        fifth = len(xs) // 5
        one = one_event(make, xs[:fifth], ys[:fifth], args.repeats)
        print(f"| {name} | {alone:,.0f} | {many:,.0f} | {one:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
