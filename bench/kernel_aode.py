"""AODE's compiled kernel on LED: its own rate, and ``prequential_many`` over lists of dicts.

``python bench/kernel_aode.py [--events 20000] [--repeats 5]`` prints, in events per second of process
CPU time (``time.process_time``), the median of ``--repeats`` runs after one warm-up run (compilation
left out):

- the kernel alone (``aode_block``) over LED's events encoded once up front, in blocks of 500, learning
  into empty count arrays of the store's shapes (its run path: denominators kept per class and value);
- ``AODE().prequential_many`` and ``SPODE().prequential_many`` over lists of 500 dicts, as
  ``bench/learners.py`` feeds them;
- the one-event river loop (``predict_one`` then ``learn_one``) of both;

each with its prequential accuracy (the kernel's differs from the model's in the first events alone: it
knows every value from the start, so N_i, the values of an attribute, is 2 from the first event on).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from river.datasets import synth

from stream_nb import AODE, SPODE, EqualFrequency
from stream_nb.kernels import NO_DETECTOR, compiled

ALL = np.zeros(0, dtype=np.int8)  # every feature may be a super-parent
EVERY_CHILD = np.zeros((0, 0), dtype=np.int8)  # every feature a child of every super-parent


def led(n: int) -> list:
    return list(synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True).take(n))


def kernel_alone(events: list, block: int = 500):
    """(seconds, accuracy) of ``aode_block`` over ``events``, encoded once by a store that has met every value."""
    k = compiled()
    xs, ys = [x for x, _ in events], [y for _, y in events]
    model = AODE(numeric=EqualFrequency())  # one layer: the store whose arrays the kernel reads
    for x, y in events[:300]:  # every value and class registered (LED's 24 binary attributes, 10 digits)
        model.learn_one(x, y)
    s = model._stats
    stop, D, _, yc = s.encode_run(xs, ys, 0, complete=True, limit=len(xs))
    assert stop == len(xs)
    C, V, F = s.n_classes, len(s.value_keys), len(s.features)
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    vf, dfeats, more = s.value_feature[:V].copy(), np.arange(F), np.zeros((0, 0), dtype=np.int64)
    iden = np.ones((C, V))
    k.den_table(pf, vf, s.n_values[:F].astype(float), C, V, iden)
    out = np.empty((len(yc), C))
    start = time.process_time()
    for lo in range(0, len(yc), block):
        k.aode_block(D[lo : lo + block], dfeats, more, yc[lo : lo + block], np.zeros(0), np.zeros(0), True, C, 1.0,
                     1.0, ALL, EVERY_CHILD, cc, vc, fc, s.n_values, pc, pf, vf, iden, True, False, out[lo : lo + block],
                     np.zeros((0, 0)), *NO_DETECTOR)
    return time.process_time() - start, float((out.argmax(1) == yc).mean())


def many(make, events: list, poll: int = 500):
    xs, ys = [x for x, _ in events], [y for _, y in events]
    model, correct = make(), 0
    start = time.process_time()
    for lo in range(0, len(xs), poll):
        results = model.prequential_many(xs[lo : lo + poll], ys[lo : lo + poll])
        correct += sum(r[0] == y for r, y in zip(results, ys[lo : lo + poll]))
    return time.process_time() - start, correct / len(xs)


def one_by_one(make, events: list):
    model, correct = make(), 0
    start = time.process_time()
    for x, y in events:
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
    return time.process_time() - start, correct / len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    events = led(args.events)
    compiled()
    runs = {
        "aode_block alone": lambda: kernel_alone(events),
        "AODE prequential_many (dicts)": lambda: many(AODE, events),
        "SPODE prequential_many (dicts)": lambda: many(SPODE, events),
        "AODE predict_one, learn_one": lambda: one_by_one(AODE, events[:5000]),
        "SPODE predict_one, learn_one": lambda: one_by_one(SPODE, events[:5000]),
    }
    for name, run in runs.items():
        run()  # warm-up: the kernels compiled or read from numba's cache
        results = [run() for _ in range(args.repeats)]
        n = 5000 if "learn_one" in name else len(events)
        rate = statistics.median(n / sec for sec, _ in results)
        print(f"{name:34s} {rate:>10,.0f} events/s   accuracy {results[0][1]:.4f}", flush=True)


if __name__ == "__main__":
    main()
