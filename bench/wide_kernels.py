"""Where one model's prequential time goes on a wide stream: its compiled kernels, one by one, and the rest.

    python bench/wide_kernels.py [--model AODE] [--stream cat200] [--events 5000] [--marks 200,1200] [--seed 0]
                                 [--top 12]

The model learns the stream of ``bench/wide.py`` (the same events, default parameters and memory budget, in
batches of 200 through ``prequential_many``, numpy's BLAS on one thread) in this process, after loading every
compiled kernel. Each kernel the models call through ``stream_nb.kernels.compiled()`` is wrapped to add the
process CPU time (``time.process_time``) of its calls: the table gives each kernel's seconds and calls, the
kernels' total, and the rest (Python, numpy, allocation), overall and up to each event of ``--marks``, so that
the phases of a stream (a pair selection keeping tens of super-parents early, a few later) show apart.
The wrappers cost about a microsecond a call: the total runs a little above ``bench/wide.py``'s CPU seconds.

Then, for each pair table the model holds as a hash table, its cells at the end: one a (class, parent value,
child value) counted, against the (parent value, child value) pairs they fall in, and what the same pairs
would take held as one slot of every class's counts (a key and C counts) rather than a slot a cell (a key and
a count).
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
import time

import numpy as np

from stream_nb.daemon import one_blas_thread
from wide import BATCH, planted  # bench/ is the script's directory, first on sys.path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="AODE")
    parser.add_argument("--stream", default="cat200")
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--marks", default="200,1200", help="events after which the times so far are given")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=12, help="kernels listed, the costliest first")
    args = parser.parse_args(argv)
    one_blas_thread()
    import stream_nb
    from stream_nb.kernels import compile_all, compiled

    compile_all()
    kernels = compiled()
    spent, calls = collections.Counter(), collections.Counter()

    def timed(name, fn):
        def call(*a, **kw):
            t0 = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.process_time() - t0
                calls[name] += 1

        return call

    for name, fn in list(vars(kernels).items()):
        setattr(kernels, name, timed(name, fn))
    X, y, _ = planted(args.stream, args.events, args.seed)
    names = [f"x{j:04d}" for j in range(X.shape[1])]
    model = getattr(stream_nb, args.model)()
    marks = sorted({int(m) for m in args.marks.split(",") if m} | {args.events})
    total, at = 0.0, []
    for lo in range(0, args.events, BATCH):
        hi = min(lo + BATCH, args.events)
        xs = [dict(zip(names, row)) for row in X[lo:hi].tolist()]
        t0 = time.process_time()
        model.prequential_many(xs, y[lo:hi].tolist())
        total += time.process_time() - t0
        if any(lo < m <= hi for m in marks):
            at.append((hi, total, sum(spent.values())))
    print(f"{args.model} on {args.stream}, {args.events:,} events: {total:.2f} s of CPU, "
          f"{sum(spent.values()):.2f} s in compiled kernels, {total - sum(spent.values()):.2f} s elsewhere")
    print(f"{'events':>8} {'CPU s':>8} {'kernels s':>10} {'elsewhere s':>12}   (from the previous line)")
    last = (0, 0.0, 0.0)
    for hi, t, k in at:
        print(f"{last[0]:>4}-{hi:<5} {t - last[1]:>6.2f} {k - last[2]:>10.2f} {t - last[1] - (k - last[2]):>12.2f}")
        last = (hi, t, k)
    print(f"\n{'kernel':<28} {'seconds':>8} {'calls':>8}")
    for name, s in spent.most_common(args.top):
        print(f"{name:<28} {s:>8.3f} {calls[name]:>8,}")
    print_cells(model, len(set(y.tolist())))
    return 0


def print_cells(model, C: int) -> None:
    """The cells of each pair table ``model`` holds as a hash table, against the pairs they fall in."""
    from stream_nb.stats.tables import SparseTable

    tables = next(v for v in vars(model).values() if hasattr(v, "tables")).tables
    for name in ("pair_count", "pair_feat"):
        table = tables.get(name)
        if not isinstance(table, SparseTable):
            continue
        keys, _ = table.arrays()
        held = keys[keys >= 0]
        pairs = len(np.unique(held % math.prod(table.shape[1:])))  # a key is (class, parent value, child)
        print(f"\n{name}: {len(held):,} cells in {pairs:,} pairs, {len(held) / max(pairs, 1):.2f} classes a pair "
              f"of {C}; a slot a cell {len(held) * 16 / 1e6:.1f} MB, a slot of {C} counts a pair "
              f"{pairs * 8 * (1 + C) / 1e6:.1f} MB")


if __name__ == "__main__":
    sys.exit(main())
