"""Wide streams: every model, prequential, beside river's naive Bayes, with the bytes its counts take.

    python bench/wide.py [--events 100000] [--seconds 120] [--models NaiveBayes,AODE,...] [--seed 0]
                         [--memory-budget BYTES] [--peers river-GaussianNB,river-MultinomialNB]
                         [--set KDB:select_level=0.01 ...] [--holdout 5000] [--outputs DIR]

Two streams with a planted dependence structure, generated here with numpy:

``cat200``
    200 categorical attributes x 30 values, 10 classes. The class drives four
    *informative* attributes in a k=2 structure (a0 | y; a1 | y, a0;
    a2 | y, a1; a3 | y, a1, a2); each of the other 196 depends on one earlier
    attribute only (not on the class), so it is dependent on the others but
    carries no information about the class beyond them. Hence P(y | x) =
    P(y | a0..a3), and the Bayes-optimal accuracy sum over (a0..a3) of
    max_y P(y, a0..a3) is computed exactly (10 x 30^4 joint probabilities).
``bin1000``
    1,000 binary attributes, 2 classes, built the same way with eight
    informative attributes in a chain (exact optimum over 2 x 2^8).

Each model runs in its own child process (so that its peak resident memory,
``resource.getrusage(RUSAGE_SELF).ru_maxrss``, is its own), with its default
parameters but ``memory_budget`` (``--memory-budget``; default: the models'
default, 256 MiB) and the flat settings ``--set MODEL:name=value`` gives (as
``stream-nb run``'s, e.g. ``KDB:select_level=0.01``), over the stream in batches of 200 events through
``prequential_many`` (predict each event, then learn it), stopping after
``--seconds`` of prequential CPU time (the process's ``time.process_time``: a
shared machine's load does not count; a batch still running at 1.5 x
``--seconds`` + 30 s is interrupted), with numpy's BLAS on one thread (as
``stream-nb run``; the peers run on one). river's peers run the same events in the
same run, one at a time (``predict_one``, then ``learn_one``): ``GaussianNB``
on the integer codes as numbers, and ``MultinomialNB`` on the one-hot
``name=value`` tokens (a categorical naive Bayes, as scikit-learn's
CategoricalNB, but smoothed over all tokens). The child's address space is
capped at ``--address-limit`` GB so that a model that would allocate more fails
fast (MemoryError) rather than swapping a shared machine. Before the clock
starts, the child loads every compiled kernel (``stream_nb.kernels.compile_all()``,
from numba's cache, or compiled there on a first run), as ``stream-nb run``
does before it connects: that time is left out of the rate and reported on its
own (``load s``), as ``bench/learners.py`` reports its first call. The table gives
events done, events/s, prequential accuracy over them, peak RSS (MB), the
bytes of the counts (``memory_used()["bytes"]``) and whether the pair tables
are sparse. An event the model refuses to learn (a ``CapacityError``: its counts
would not fit the budget even sparsely) comes back as that error, with no
prediction: the accuracy is over the events answered, and the note gives how
many were refused, from which event, and the error. With ``--holdout N`` the
last N events of the stream are never learned: after learning stops, the
model predicts them (one ``predict_one`` each, after the others are learned)
and the table adds that holdout accuracy, the accuracy of the model as it
stands, where the prequential one averages over every model on the way. With ``--outputs DIR`` each model
writes its results (prediction and probabilities, or the error), one JSON line an event, to
``DIR/STREAM-MODEL.jsonl``: two versions' files compared with ``cmp`` show whether a change kept every
result to the last digit.
Learning then also stops after 1.5 x ``--seconds`` of wall-clock time, between
two batches (a loaded machine's model is still scored).
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
import subprocess
import sys
import time

import numpy as np

from _settings import model_settings  # bench/ is the script's directory, first on sys.path
from stream_nb.daemon import one_blas_thread

STREAMS = ("cat200", "bin1000")
MODEL_NAMES = ("NaiveBayes", "AODE", "TAN", "SPODE", "KDB")
PEERS = ("river-GaussianNB", "river-MultinomialNB")
BATCH = 200  # events per prequential_many call


def _dirichlet(rng, shape, n, concentration):
    return rng.dirichlet(np.full(n, concentration), size=shape)


def _draw(rng, probs):
    """One categorical draw per row of ``probs`` (rows, n)."""
    u = rng.random(len(probs))
    return np.minimum((np.cumsum(probs, axis=1) < u[:, None]).sum(1), probs.shape[1] - 1)


def _network(name: str, rng):
    """``(F, V, C, parents, tables, noise_parent, noise_tables)`` of stream ``name``, drawn from ``rng``."""
    if name == "cat200":
        F, V, C, conc = 200, 30, 10, 0.5
        parents = [(), (0,), (1,), (1, 2)]  # the informative attributes' attribute parents (k = 2)
    else:
        F, V, C, conc = 1000, 2, 2, 2.0
        parents = [()] + [(i - 1,) for i in range(1, 8)]  # a chain of eight
    k = len(parents)
    tables = [_dirichlet(rng, (C,) + (V,) * len(pa), V, conc) for pa in parents]  # P(a_i | y, a_pa(i))
    noise_parent = [int(rng.integers(0, j)) for j in range(k, F)]  # each noise attribute's one parent
    noise_tables = [_dirichlet(rng, (V,), V, conc) for _ in range(k, F)]  # P(x_j | x_parent)
    return F, V, C, parents, tables, noise_parent, noise_tables


def planted_parents(name: str, seed: int) -> list:
    """Each attribute's attribute parents in stream ``name`` (those the class drives first, then each other
    attribute's one parent): the network :func:`planted` draws its events from."""
    _, _, _, parents, _, noise_parent, _ = _network(name, np.random.default_rng(seed))
    return list(parents) + [(p,) for p in noise_parent]


def planted(name: str, n: int, seed: int):
    """``(X, y, bayes_optimal_accuracy)`` of stream ``name``: X (n, F) integer codes, y (n,)."""
    rng = np.random.default_rng(seed)
    F, V, C, parents, tables, noise_parent, noise_tables = _network(name, rng)
    k = len(parents)
    y = rng.integers(0, C, size=n)
    X = np.empty((n, F), dtype=np.int16)
    for i, pa in enumerate(parents):
        X[:, i] = _draw(rng, tables[i][(y, *(X[:, p] for p in pa))])
    for j, (p, t) in zip(range(k, F), zip(noise_parent, noise_tables)):
        X[:, j] = _draw(rng, t[X[:, p]])
    # exact Bayes optimum: P(y, a_0..a_k-1) on the full grid, then sum over the grid of max over y
    joint = np.full((C,) + (V,) * k, 1.0 / C)
    for i, pa in enumerate(parents):
        shape = [C] + [1] * k
        for axis in (*pa, i):
            shape[1 + axis] = V
        # tables[i] is indexed (y, a_pa..., a_i) with the parents in increasing order, as the axes
        joint = joint * tables[i].reshape(shape)
    return X, y, float(joint.max(axis=0).sum())


def _peer(name: str):
    """A river classifier and the encoding of an event for it."""
    from river import naive_bayes  # the child's own import: river is a peer, loaded where it runs

    if name == "river-GaussianNB":
        return naive_bayes.GaussianNB(), lambda names, row: dict(zip(names, row))
    if name == "river-MultinomialNB":
        return naive_bayes.MultinomialNB(), lambda names, row: {f"{n}={v}": 1 for n, v in zip(names, row)}
    raise SystemExit(f"unknown peer {name!r}")


def run_model(stream: str, model_name: str, n: int, seed: int, seconds: float, budget, flat=None,
              holdout: int = 0, outputs: str | None = None) -> dict:
    import stream_nb  # the child's own import: the parent never holds a model

    X, y, _ = planted(stream, n, seed)
    names = [f"x{j:04d}" for j in range(X.shape[1])]
    peer = model_name.startswith("river-")
    if peer:
        model, encode = _peer(model_name)
    else:
        flat = {**(flat or {}), **({} if budget == "default" else {"memory_budget": budget})}
        model = getattr(stream_nb, model_name).from_flat(flat)
    t0 = time.process_time()
    if not peer:  # the kernels, read from numba's cache (or compiled): not the model's work, reported apart
        from stream_nb.kernels import compile_all

        compile_all()
    loading = time.process_time() - t0
    done = correct = refused = 0
    first_refused, refusal = None, None
    spent = 0.0
    error = None

    def overrun(*_):
        raise TimeoutError(f"one batch of {BATCH} events still running after {1.5 * seconds + 30:g} s")

    signal.signal(signal.SIGALRM, overrun)
    signal.setitimer(signal.ITIMER_REAL, 1.5 * seconds + 30)
    began = time.monotonic()
    try:
        for lo in range(0, n - holdout, BATCH):
            rows, ys = X[lo : min(lo + BATCH, n - holdout)].tolist(), y[lo : min(lo + BATCH, n - holdout)].tolist()
            if peer:
                xs = [encode(names, row) for row in rows]
                t0 = time.process_time()
                out = []
                for x, truth in zip(xs, ys):
                    out.append((model.predict_one(x), None))
                    model.learn_one(x, truth)
            else:
                xs = [dict(zip(names, row)) for row in rows]
                t0 = time.process_time()
                out = model.prequential_many(xs, ys)
            spent += time.process_time() - t0
            if outputs:  # each event's result as JSON (floats written exactly), one line an event
                with open(outputs, "a") as file:
                    file.writelines(json.dumps(list(o) if isinstance(o, tuple) else repr(o)) + "\n" for o in out)
            # an event refused (an InvalidEventError in its place) has no prediction: accuracy is over the others
            correct += sum(1 for o, truth in zip(out, ys) if isinstance(o, tuple) and o[0] == truth)
            for i, o in enumerate(out):
                if isinstance(o, Exception):
                    refused += 1
                    if first_refused is None:
                        first_refused, refusal = lo + i, str(o)
            done += len(ys)
            if spent > seconds or (holdout and time.monotonic() - began > 1.5 * seconds):
                break  # (with a holdout, the wall clock too: a loaded machine's model still gets scored)
    except (MemoryError, TimeoutError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    signal.setitimer(signal.ITIMER_REAL, 0)
    held_out = None
    if holdout and error is None:
        rows, ys = X[n - holdout :].tolist(), y[n - holdout :].tolist()
        xs = [encode(names, row) for row in rows] if peer else [dict(zip(names, row)) for row in rows]
        held_out = sum(1 for x, truth in zip(xs, ys) if model.predict_one(x) == truth) / holdout
    used = model.memory_used() if not peer else {"bytes": None, "pairs_sparse": None, "budget": None}
    answered = done - refused
    return {"events": done, "seconds": spent, "loading": loading, "accuracy": correct / answered if answered else None, "holdout": held_out,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "error": error,
            "count_bytes": used["bytes"], "pairs_sparse": used.get("pairs_sparse") if used.get("pair_cells") else None,
            "refused": refused,
            "first_refused": first_refused, "refusal": refusal, "budget": used["budget"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=120.0, help="prequential CPU time per model before it stops")
    parser.add_argument("--models", default=",".join(MODEL_NAMES))
    parser.add_argument("--peers", default=",".join(PEERS), help="river peers in the same run ('' for none)")
    parser.add_argument("--streams", default=",".join(STREAMS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-budget", default="default",
                        help="bytes every model's counts may take ('default': the models' default; 'none')")
    parser.add_argument("--address-limit", type=float, default=3.0, help="GB of address space per model process")
    parser.add_argument("--set", action="append", default=[], metavar="MODEL:NAME=VALUE",
                        help="a model's flat setting (JSON value), e.g. KDB:select_level=0.01; repeatable")
    parser.add_argument("--holdout", type=int, default=0,
                        help="the last N events of the stream: never learned, predicted at the end")
    parser.add_argument("--outputs", metavar="DIR",
                        help="write each model's results, one JSON line an event, to DIR/STREAM-MODEL.jsonl "
                             "(to compare two versions' with cmp)")
    parser.add_argument("--child", nargs=2, metavar=("STREAM", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    budget = {"default": "default", "none": None}.get(args.memory_budget.lower(), None)
    if args.memory_budget.lower() not in ("default", "none"):
        budget = int(float(args.memory_budget))
    if args.child:
        limit = int(args.address_limit * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        one_blas_thread()  # as stream-nb run does, and as river's peers run: one core's work in the wall time
        outputs = None
        if args.outputs:
            outputs = f"{args.outputs}/{'-'.join(args.child)}.jsonl"
            open(outputs, "w").close()
        print(json.dumps(run_model(*args.child, args.events, args.seed, args.seconds, budget,
                                   model_settings(args.set, args.child[1]), args.holdout, outputs)))
        return 0
    stated = "the models' default (256 MiB)" if budget == "default" else (
        "none" if budget is None else f"{budget:,} bytes ({budget / 2**20:,.0f} MiB)")
    print(f"{args.events:,} events per stream, at most {args.seconds:g} s of prequential CPU time per model, "
          f"default parameters, memory_budget: {stated}" + "".join(f"; {s}" for s in args.set))
    names = [m for m in args.models.split(",") if m] + [p for p in args.peers.split(",") if p]
    for stream in args.streams.split(","):
        _, _, optimum = planted(stream, 10, args.seed)
        print(f"\n{stream}: Bayes-optimal accuracy {optimum:.4f} (exact, from the generating distribution)")
        print(f"{'model':<20} {'events':>8} {'events/s':>9} {'accuracy':>9} {'peak RSS MB':>12} {'counts MB':>10} "
              f"{'pairs':>6} {'load s':>7}  " + (f"{'holdout':>8}  " if args.holdout else "") + "note")
        for name in names:
            cmd = [sys.executable, __file__, "--child", stream, name, "--events", str(args.events),
                   "--seconds", str(args.seconds), "--seed", str(args.seed), "--address-limit", str(args.address_limit),
                   "--memory-budget", args.memory_budget, "--holdout", str(args.holdout)]
            cmd += ["--outputs", args.outputs] if args.outputs else []
            cmd += [a for s in args.set for a in ("--set", s)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0 or not proc.stdout.strip():
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{name:<20} {'-':>8} {'-':>9} {'-':>9} {'-':>12} {'-':>10} {'-':>6} {'-':>7}  failed: {last[:100]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            rate = r["events"] / r["seconds"] if r["seconds"] else float("nan")
            acc = f"{r['accuracy']:.4f}" if r["accuracy"] is not None else "-"
            notes = [r["error"] or ("stopped at the time limit" if r["events"] < args.events - args.holdout else "")]
            if r["refused"]:
                notes.append(f"{r['refused']:,} refused from event {r['first_refused']:,}: {r['refusal'][:160]}")
            mb = f"{r['count_bytes'] / 2**20:,.1f}" if r["count_bytes"] is not None else "-"
            sparse = {True: "sparse", False: "dense", None: "-"}[r["pairs_sparse"]]
            held = (f"{r['holdout']:>8.4f}  " if r["holdout"] is not None else f"{'-':>8}  ") if args.holdout else ""
            print(f"{name:<20} {r['events']:>8,} {rate:>9,.0f} {acc:>9} {r['peak_rss_mb']:>12,.0f} {mb:>10} "
                  f"{sparse:>6} {r['loading']:>7.1f}  {held}{'; '.join(n for n in notes if n)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
