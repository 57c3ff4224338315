"""KDB on a wide stream as it learns: the informative attributes' parents, and the holdout accuracy, at checkpoints.

    python bench/wide_trace.py [--events 40000] [--every 8000] [--holdout 2000] [--seed 0] [--set KDB:select_level=0.01]

The stream is :func:`wide.planted`'s ``cat200`` (its four class-driven attributes a0..a3 are ``x0000``..``x0003``;
a3's true parents are a1 and a2). KDB learns it in batches of 200 events through ``prequential_many``; at
every ``--every`` events the script prints KDB's parents of the four (absent: left out by selective KDB or
not yet in the model), a3's candidate parents (the (k+1)-way counts kept for it past the budget), the
attributes the model keeps, and the accuracy on the last ``--holdout`` events of the stream (never learned),
with its ratio to the exact optimum; then each other attribute kept (a descendant of the four: every attribute
of cat200 depends on the class through them), with KDB's parents, its planted parent and whether the store
holds the pair with it (``held``: selective KDB can test the attribute given its parent, and leave it out).
"""

from __future__ import annotations

import argparse

import numpy as np

from _settings import model_settings  # bench/ is the script's directory, first on sys.path
from wide import planted, planted_parents


def main(argv=None) -> int:
    import stream_nb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--every", type=int, default=8_000)
    parser.add_argument("--holdout", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KDB:NAME=VALUE")
    args = parser.parse_args(argv)
    X, y, optimum = planted("cat200", 100_000, args.seed)  # the stream bench/wide.py's default run sees
    true_parents = planted_parents("cat200", args.seed)
    names = [f"x{j:04d}" for j in range(X.shape[1])]
    model = stream_nb.KDB.from_flat(model_settings(args.set, "KDB"))
    held = [dict(zip(names, row)) for row in X[-args.holdout:].tolist()], y[-args.holdout:].tolist()
    print(f"cat200, {', '.join(args.set) or 'defaults'}; holdout: the last {args.holdout:,} events; optimum {optimum:.4f}")
    for lo in range(0, min(args.events, len(y) - args.holdout), 200):
        model.prequential_many([dict(zip(names, row)) for row in X[lo:lo + 200].tolist()], y[lo:lo + 200].tolist())
        if (lo + 200) % args.every:
            continue
        s, structure = model._stats, model.structure
        a3 = s.feature_index.get("x0003")
        cand = None if s.tuple_cand is None or a3 is None else [str(s.features[g]) for g in np.flatnonzero(s.tuple_cand[a3])]
        accuracy = sum(model.predict_one(x) == t for x, t in zip(*held)) / args.holdout
        print(f"{lo + 200:>7,}  holdout {accuracy:.4f} ({accuracy / optimum:.3f})  parents "
              f"{ {n: structure.get(n) for n in names[:4]} }  a3's candidates {cand}  kept {len(structure)}", flush=True)
        held_pairs = s.edge_ok()
        for name in [n for n in structure if int(n[1:]) >= 4]:
            (parent,) = true_parents[int(name[1:])]
            i, j = s.feature_index[name], s.feature_index.get(names[parent])
            has_pair = j is not None and (held_pairs is None or bool(held_pairs[i, j]))
            print(f"    {name}: KDB's parents {structure[name]}, planted parent {names[parent]} "
                  f"({'held' if has_pair else 'not held'})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
