"""AODE (or another model) on many random binary attributes, driven as a user would: predict, then learn, one event at a time.

    python bench/wide_binary.py [--events 50] [--features 2000] [--model AODE] [--memory-budget BYTES] [--many] [--one-layer]

Each event has ``--features`` attributes of value 0 or 1 drawn uniformly, and a
uniform binary class. The model (default parameters, ``memory_budget`` the
default 256 MiB unless given) predicts each event (``predict_one``) and then
learns it (``learn_one``); with ``--many``, the events go through one
``prequential_many`` call instead. Printed: the events refused (a
``CapacityError``, with the first message), the events predicted, the CPU time,
the peak of numpy's and Python's allocations (``tracemalloc``), the peak RSS of
the process (``ru_maxrss``, interpreter and compiled kernels included), and what
``memory_used()`` says the counts take.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--features", type=int, default=2000)
    parser.add_argument("--model", default="AODE")
    parser.add_argument("--memory-budget", type=int, default=None)
    parser.add_argument("--many", action="store_true", help="one prequential_many call instead of the loop")
    parser.add_argument("--one-layer", action="store_true",
                        help="numeric=EqualFrequency(): a one-layer store (the default MDL keeps two layers of counts)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import stream_nb
    from stream_nb.exceptions import CapacityError

    rng = np.random.default_rng(args.seed)
    X = rng.integers(0, 2, size=(args.events, args.features))
    y = rng.integers(0, 2, size=args.events)
    xs = [{f"f{j}": int(v) for j, v in enumerate(row)} for row in X]
    params = {} if args.memory_budget is None else {"memory_budget": args.memory_budget}
    if args.one_layer:
        params["numeric"] = stream_nb.EqualFrequency()
    model = getattr(stream_nb, args.model)(**params)
    refused, predicted, first = 0, 0, None
    tracemalloc.start()
    t0 = time.process_time()
    if args.many:
        for out in model.prequential_many(xs, y.tolist()):
            if isinstance(out, Exception):
                refused += 1
                first = first or str(out)
            else:
                predicted += out[0] is not None
    else:
        for x, c in zip(xs, y.tolist()):
            predicted += model.predict_one(x) is not None
            try:
                model.learn_one(x, c)
            except CapacityError as exc:
                refused += 1
                first = first or str(exc)
    spent = time.process_time() - t0
    traced = tracemalloc.get_traced_memory()[1]
    used = model.memory_used()
    selected = used.get("pairs_selected") or {}
    print(f"{args.model}{' (one layer)' if args.one_layer else ''} on {args.events} events x {args.features} binary attributes "
          f"({'prequential_many' if args.many else 'predict_one, then learn_one'}), budget {used['budget']:,} bytes")
    print(f"refused {refused}, predicted {predicted}, CPU {spent:.1f} s, traced peak {traced / 2**20:,.0f} MiB, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB, counts "
          f"{used['bytes'] / 2**20:,.1f} MiB, parents kept {len(selected.get('parents', [])) if selected else 'all'}")
    if first:
        print(f"first refusal: {first[:300]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
