"""Labels that arrive later: what each policy costs in accuracy, what the join costs in throughput and memory.

Accuracy: binary streams with abrupt drift (the concept flips twice) where
each positive's label arrives after a random delay (exponential, mean D events)
and a negative's never comes: no label within the TTL (3 D) means negative.
Every policy runs the daemon's own join (``stream_nb.engine.Joiner`` in an
``Engine``, the event index as ``--time-field``), and is scored on the
prediction made when the event arrived against its true label:

- oracle: every label in the event itself (learned at once);
- wait: learn an event when its label comes (``--on-expire drop``: negatives never);
- default at expiry: ``--on-expire label:0``;
- provisional: ``--provisional-label 0``, retracted exactly when the label comes.

Anchor: river's ``evaluate.progressive_val_score`` on the same stream and model
with the same delays (a positive's label at its delay, a negative's at the TTL),
which is what "default at expiry" computes.

Throughput (``--throughput``): ``stream-nb run`` on the same events, with the
labels in the events versus in a ``--feedback`` file (CPU seconds of the child,
the least of ``--repeats`` interleaved runs of each). With ``--time-field`` the
feedback run joins in event time: each event carries its time (its index, in
seconds) and the daemon gets ``--time-field`` (in Kafka mode too). With
``--provisional`` a third run adds ``--provisional-label 0``: each held event is
learned with 0 at once and, when its label is 1, that is taken back.
With ``--kafka`` the same comparison runs in Kafka mode, as the daemon runs in a
pipeline: the events on a 3-partition topic (keyed by id), the labels on a
co-partitioned ``--feedback-topic`` in shuffled order, against a local broker
(``KAFKA_BOOTSTRAP_SERVERS``, else one started from the jars as
``bench/daemon.py`` starts it); CPU seconds of the daemon from its start until it
has sent every output and joined every label (read off ``/metrics``), with
``--kafka-client`` (kafka-python by default, or confluent).
With ``--breakdown`` it then runs the feedback command once more in a child that
times the join's own steps (``Joiner`` methods, CPU time of the thread, each
step's time excluding the steps it calls) and prints each per event of the stream.
Memory (``--memory``): bytes the pending store allocates for 1,000,000 events of
20 features (tracemalloc).
Predictions on arrival (``--predict``): with labels coming later, the daemon
predicts each event without its label and learns it when the label comes.
Per model, ``prequential_many`` on polls of 500 events of the second half of
the stream (the model trained on the first half), the events unlabeled (as
they arrive with feedback) beside the same events labeled (predicted and
learned, as without feedback): thread CPU per event, the least of
``--repeats`` runs, each on a fresh copy of the trained model. With
``--new-values P`` the events also carry a merchant, never seen before in a
fraction P of the events predicted.

    PYTHONPATH=. python bench/delayed.py [--events 20000] [--throughput [--repeats 3] [--breakdown] [--time-field] [--provisional]
                                         [--kafka [--kafka-client confluent]]] [--memory]
                                         [--predict [--repeats 3] [--new-values P]]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.request
import uuid
from pathlib import Path

import numpy as np
import orjson
from river import evaluate, metrics

from stream_nb import AODE, TAN, NaiveBayes
from stream_nb.engine import Engine, Joiner, Record
from stream_nb.engine.join._pending import PendingStore


def drifting_stream(n: int, seed: int):
    """(x, y, delay of y): 4 categorical and 2 numeric features; the concept flips at n/3 and 2n/3."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        flip = (i * 3 // n) % 2 == 1
        y = int(rng.random() < 0.35)
        z = y ^ flip
        x = {f"c{j}": ("ab"[z] if rng.random() < 0.55 + 0.05 * j else rng.choice("abc")) for j in range(4)}
        x["n0"], x["n1"] = rng.gauss(1.2 * z, 1.0), rng.gauss(-0.8 * z, 1.0)
        out.append((x, y))
    return out


class Timed:
    """A feedback source that hands out the labels whose arrival time the stream has reached."""

    def __init__(self, labels: list, joiner_ref: list):
        self.labels = sorted(labels, key=lambda r: r[0])
        self.i = 0
        self.joiner_ref = joiner_ref
        self.exhausted = False

    def poll(self, max_records, timeout):
        now = self.joiner_ref[0].stream_time
        out = []
        while self.i < len(self.labels) and self.labels[self.i][0] <= now and len(out) < max_records:
            t, ident, y = self.labels[self.i]
            out.append(Record(orjson.dumps({"id": ident, "label": y, "ts": t}), None, "labels", {}, self.i + 1))
            self.i += 1
        self.exhausted = self.i >= len(self.labels)
        return out

    def commit(self, positions):
        pass

    def seek(self, positions):
        pass

    def close(self):
        pass


class Events:
    def __init__(self, values):
        self.records = [Record(orjson.dumps(v), None, "in", {}, i + 1) for i, v in enumerate(values)]
        self.exhausted = False

    def poll(self, max_records, timeout):
        batch, self.records = self.records[:max_records], self.records[max_records:]
        self.exhausted = not batch
        return batch

    def commit(self, positions):
        pass

    def seek(self, positions):
        pass

    def close(self):
        pass


class Collect:
    def __init__(self):
        self.values = []

    def send(self, value, key=None):
        self.values.append(value)

    def flush(self):
        pass

    def close(self):
        pass


def run_policy(stream, delays, ttl, policy):
    """Accuracy of the predictions made on arrival, under ``policy`` (see the module notes)."""
    events, labels = [], []
    for i, ((x, y), d) in enumerate(zip(stream, delays)):
        if policy == "oracle":
            events.append({"id": i, "ts": i, **x, "label": y})
        else:
            events.append({"id": i, "ts": i, **x})
            if y == 1 and d <= ttl and i + d < len(stream):  # a label after the last event teaches nothing scored
                labels.append((i + d, i, 1))
    out = Collect()
    engine = Engine(NaiveBayes(), Events(events), out, Collect(), config={"poll_max_records": 25})
    engine.input_check = None  # the events carry no label on purpose
    config = {"time_field": "ts", "label_ttl": float(ttl), "pending_max": len(stream) + 1}
    if policy == "default":
        config["on_expire"] = "label:0"
    elif policy == "provisional":
        config["provisional_label"] = 0
    ref = [None]
    feedback = Timed(labels, ref)
    engine.joiner = ref[0] = Joiner(engine, feedback, config)
    if policy == "oracle":
        engine.joiner = None
    engine.run()
    predictions = [orjson.loads(v)["prediction"] for v in out.values]
    return float(np.mean([p == y for p, (_, y) in zip(predictions, stream)]))


def river_anchor(stream, delays, ttl):
    """river's progressive_val_score with the labels' delays (a negative's: the TTL), on the same model."""
    metric = metrics.Accuracy()
    data = [({**x, "_i": i}, y) for i, (x, y) in enumerate(stream)]
    due = {i: (d if y == 1 and d <= ttl else ttl) for i, ((_, y), d) in enumerate(zip(stream, delays))}

    class Drop(NaiveBayes):  # the event index is river's key to the delay, not a feature
        def learn_one(self, x, y, w=1.0):
            super().learn_one({k: v for k, v in x.items() if k != "_i"}, y, w)

        def predict_one(self, x):
            return super().predict_one({k: v for k, v in x.items() if k != "_i"})

    evaluate.progressive_val_score(data, Drop(), metric, delay=lambda x, y: due[x["_i"]])
    return metric.get()


def accuracy_table(n: int, seed: int) -> list:
    rows = []
    for mean in (20, 200, 2000):
        rng = np.random.default_rng(seed)
        stream = drifting_stream(n, seed)
        delays = np.ceil(rng.exponential(mean, size=n)).astype(int).tolist()
        ttl = 3 * mean
        row = {"mean delay": mean, "ttl": ttl}
        for policy in ("oracle", "wait", "default", "provisional"):
            row[policy] = run_policy(stream, delays, ttl, policy)
        row["river"] = river_anchor(stream, delays, ttl)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


#: The join's steps --breakdown times: each a Joiner method, named as docs/benchmarks.md names it.
STEPS = {
    "prepare_columns": "giving early labels to their events (a poll's look-up)",
    "hold_sent": "setting aside the unlabeled events sent",
    "flush_holds": "holding the unlabeled events in the store",
    "_labels": "reading, parsing and looking up the labels, holding the early ones",
    "_learn_joined": "learning the joined pairs",
    "expire": "expiring",
    "tick": "reading the feedback input (what tick does beside the steps above)",
}


def breakdown_child(n: int, argv: list) -> None:
    """Run ``stream-nb run argv`` here with each of :data:`STEPS` timed (thread CPU, callees excluded)."""
    spent, stack = dict.fromkeys(STEPS, 0), []

    def timed(name, method):
        def step(*args, **kwargs):
            stack.append(0)
            start = time.thread_time_ns()
            try:
                return method(*args, **kwargs)
            finally:
                total = time.thread_time_ns() - start
                inner = stack.pop()
                spent[name] += total - inner
                if stack:
                    stack[-1] += total
        return step

    for name in STEPS:
        setattr(Joiner, name, timed(name, getattr(Joiner, name)))
    from stream_nb.cli import main as cli
    status = cli(["run", *argv])
    if status:
        raise SystemExit(status)
    for name, what in STEPS.items():
        print(f"  {what} (Joiner.{name}): {spent[name] / 1e3 / n:.2f} µs per event")


def throughput(n: int, seed: int, repeats: int = 3, breakdown: bool = False, time_field: bool = False,
               provisional: bool = False) -> dict:
    stream = drifting_stream(n, seed)
    tmp = tempfile.mkdtemp(prefix="delayed-bench-")
    inline = os.path.join(tmp, "inline.jsonl")
    bare = os.path.join(tmp, "events.jsonl")
    fb = os.path.join(tmp, "labels.jsonl")
    rng = random.Random(seed)
    with open(inline, "w") as a, open(bare, "w") as b:
        for i, (x, y) in enumerate(stream):
            a.write(json.dumps({"id": i, **x, "label": y}) + "\n")
            b.write(json.dumps({"id": i, **x, **({"ts": float(i)} if time_field else {})}) + "\n")
    order = list(range(n))
    rng.shuffle(order)  # labels in shuffled order: most wait, some come first
    with open(fb, "w") as f:
        for i in order:
            f.write(json.dumps({"id": i, "label": stream[i][1]}) + "\n")
    empty, no_labels = os.path.join(tmp, "empty.jsonl"), os.path.join(tmp, "no-labels.jsonl")
    open(empty, "w").close()
    open(no_labels, "w").close()

    def cpu_of(extra: list) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "stream_nb", "run", *extra, "--output", os.devnull,
                        "--log-level", "WARNING"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    # the same command on an empty input: what starting and stopping cost, whatever the stream
    start_up = min(cpu_of(["--input", empty, "--feedback", no_labels]) for _ in range(3))
    print(f"start-up and shut-down: {start_up:.2f} CPU seconds", flush=True)
    out, beyond = {}, {}
    # with time_field the feedback run joins in event time: each event's time in field ts (its index, in
    # seconds), the TTL beyond the stream so that nothing expires (the labels take the stream's time)
    in_time = ["--time-field", "ts", "--label-ttl", str(10.0 * n)] if time_field else []
    runs = (("labels in the events", ["--input", inline]),
            ("labels from --feedback" + (" in event time" if time_field else ""),
             ["--input", bare, "--feedback", fb, *in_time]))
    if provisional:  # each held event learned with label 0 at once, taken back when its label is 1
        runs += (("labels from --feedback, --provisional-label 0", [*runs[1][1], "--provisional-label", "0"]),)
    cpus: dict = {name: [] for name, _ in runs}
    for _ in range(repeats):  # the two interleaved, the least CPU of each: what other work on the machine adds least
        for name, extra in runs:
            cpus[name].append(cpu_of(extra))
    for name, _ in runs:
        cpu = min(cpus[name])
        out[name], beyond[name] = n / cpu, n / max(cpu - start_up, 1e-9)
        print(f"{name}: {n / cpu:,.0f} events per CPU second ({beyond[name]:,.0f} beyond start-up; least CPU of "
              f"{repeats}: {', '.join(f'{c:.2f}' for c in cpus[name])} s)", flush=True)
    for name, _ in runs[1:]:
        print(f"ratio of {name}: {out[name] / out[runs[0][0]]:.2f} "
              f"(beyond start-up: {beyond[name] / beyond[runs[0][0]]:.2f})")
    if breakdown:
        print("the join's steps, one more run with labels from --feedback:", flush=True)
        subprocess.run([sys.executable, __file__, "--breakdown-child", str(n), "--", *runs[1][1], "--output",
                        os.devnull, "--log-level", "WARNING"], check=True)
    return out


def kafka_throughput(n: int, seed: int, repeats: int, client: str, time_field: bool = False) -> dict:
    """:func:`throughput` in Kafka mode: CPU seconds of ``stream-nb run`` until every output is sent and
    every label joined, labels in the events versus on a co-partitioned ``--feedback-topic``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import daemon as kafka_bench  # bench/daemon.py: the broker and the topics

    stream = drifting_stream(n, seed)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    inline = [(str(i).encode(), orjson.dumps({"id": i, **x, "label": y})) for i, (x, y) in enumerate(stream)]
    bare = [(str(i).encode(), orjson.dumps({"id": i, **x, **({"ts": float(i)} if time_field else {})}))
            for i, (x, _) in enumerate(stream)]
    in_time = ["--time-field", "ts", "--label-ttl", str(10.0 * n)] if time_field else []  # as throughput()
    labels = [(str(i).encode(), orjson.dumps({"id": i, "label": stream[i][1]})) for i in order]
    with kafka_bench.broker() as bootstrap:
        kafka = kafka_bench.Kafka(bootstrap)
        try:
            topics = {name: kafka.topic(f"delayed-{name}") for name in ("inline", "bare", "labels")}
            for name, records in (("inline", inline), ("bare", bare), ("labels", labels)):
                kafka.produce(topics[name], records)
            runs = (("labels in the events", ["--input-topic", topics["inline"]], False),
                    ("labels from --feedback-topic" + (" in event time" if time_field else ""),
                     ["--input-topic", topics["bare"], "--feedback-topic", topics["labels"], *in_time], True))
            cpus: dict = {name: [] for name, _, _ in runs}
            for _ in range(repeats):
                for name, extra, joins in runs:
                    cpus[name].append(_kafka_run(kafka, bootstrap, extra, n, joins, client))
        finally:
            kafka.close()
    out = {}
    for name, _, _ in runs:
        out[name] = n / min(cpus[name])
        print(f"Kafka ({client}), {name}: {out[name]:,.0f} events per CPU second (least CPU of {repeats}: "
              f"{', '.join(f'{c:.2f}' for c in cpus[name])} s)", flush=True)
    print(f"ratio: {out[runs[1][0]] / out[runs[0][0]]:.2f}")
    return out


def _kafka_run(kafka, bootstrap: str, extra: list, n: int, joins: bool, client: str) -> float:
    """CPU seconds of one ``stream-nb run`` over ``extra``'s topics, stopped once it has sent ``n`` outputs
    (and, when ``joins``, joined ``n`` labels)."""
    output = kafka.topic("delayed-out")
    log = tempfile.NamedTemporaryFile(prefix="delayed-kafka-", suffix=".log", delete=False)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb", "run", "--bootstrap-servers", bootstrap, *extra,
                             "--output-topic", output, "--group-id", f"delayed-{uuid.uuid4().hex[:8]}",
                             "--kafka-client", client, "--metrics-port", "0", "--metrics-interval", "0",
                             "--log-level", "INFO"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + max(300.0, n / 100)
        url = None
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"stream-nb run exited with status {proc.returncode}: see {log.name}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"stream-nb run did not finish in time: see {log.name}")
            if url is None:
                found = [line.split(" on ")[-1].split()[0] for line in Path(log.name).read_text().splitlines()
                         if "serving /metrics" in line]
                url = found[0] if found else None
            elif _joined_all(url, n, joins) and kafka.count(output) >= n:
                break
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _joined_all(url: str, n: int, joins: bool) -> bool:
    if not joins:
        return True
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    line = next((ln for ln in text.splitlines() if ln.startswith('stream_nb_labels_total{outcome="joined"}')), None)
    return line is not None and float(line.split()[-1]) >= n


def memory(n: int = 1_000_000) -> float:
    rng = np.random.default_rng(0)
    names = [f"c{j}" for j in range(10)] + [f"n{j}" for j in range(10)]
    vals = [f"v{k}" for k in range(50)]
    tracemalloc.start()
    store = PendingStore(n)
    start = time.perf_counter()
    for lo in range(0, n, 10_000):
        cats = rng.integers(0, 50, size=(10_000, 10)).tolist()
        nums = rng.normal(size=(10_000, 10)).tolist()
        for k in range(10_000):
            x = dict(zip(names, [vals[c] for c in cats[k]] + nums[k]))
            store.add(orjson.dumps(f"ev-{lo + k:09d}"), x, t=float(lo + k), prediction=1, partition="in", offset=lo + k)
        del cats, nums, x
    used = tracemalloc.get_traced_memory()[0]
    print(f"{n:,} pending events of 20 features (10 categorical, 10 numeric): {used / 1e6:.1f} MB allocated "
          f"({used / n:.0f} bytes per event; {time.perf_counter() - start:.0f} s to fill)")
    return used


def predict_on_arrival(n: int, seed: int, repeats: int, new_values: float = 0.0) -> dict:
    """``--predict``: µs of thread CPU per event, unlabeled and labeled, per model. With ``new_values`` P,
    each event also carries a merchant: one of 50 the first half knows, or (a fraction P of the second
    half's events) one never seen before, as a stream of payments meets new merchants every day."""
    stream = drifting_stream(n, seed)
    half = n // 2
    if new_values:
        rng = random.Random(seed + 1)
        for i, (x, _) in enumerate(stream):
            x["merchant"] = f"new-{i}" if i >= half and rng.random() < new_values else f"m{rng.randrange(50)}"
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    out = {}
    print("| model | unlabeled (with feedback) µs/event | labeled (without) µs/event | ratio |")
    print("|---|---:|---:|---:|")
    for make in (NaiveBayes, TAN, AODE):
        trained = make()
        trained.prequential_many(xs[:half], ys[:half])
        cost = {}
        for name, labels in (("unlabeled", [None] * (n - half)), ("labeled", ys[half:])):
            best = float("inf")
            for _ in range(repeats):
                model = type(trained).from_state(*trained.state())
                start = time.thread_time()
                for lo in range(half, n, 500):
                    model.prequential_many(xs[lo : lo + 500], labels[lo - half : lo - half + 500])
                best = min(best, time.thread_time() - start)
            cost[name] = best / (n - half) * 1e6
        out[make.__name__] = cost
        print(f"| {make.__name__} | {cost['unlabeled']:.2f} | {cost['labeled']:.2f} | "
              f"{cost['unlabeled'] / cost['labeled']:.2f} |", flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--throughput", action="store_true")
    p.add_argument("--repeats", type=int, default=3, help="--throughput: runs of each, the least CPU kept")
    p.add_argument("--breakdown", action="store_true", help="--throughput: time the join's steps too")
    p.add_argument("--time-field", action="store_true",
                   help="--throughput: the feedback run joins in event time (--time-field, each event's own time)")
    p.add_argument("--provisional", action="store_true",
                   help="--throughput: also the feedback run with --provisional-label 0 (JSON lines)")
    p.add_argument("--kafka", action="store_true", help="--throughput: in Kafka mode, against a broker")
    p.add_argument("--kafka-client", default="kafka-python", choices=("kafka-python", "confluent"))
    p.add_argument("--breakdown-child", type=int, help=argparse.SUPPRESS)
    p.add_argument("run_args", nargs="*", help=argparse.SUPPRESS)
    p.add_argument("--memory", action="store_true")
    p.add_argument("--predict", action="store_true", help="predictions on arrival: unlabeled against labeled")
    p.add_argument("--new-values", type=float, default=0.0, metavar="P",
                   help="--predict: a merchant feature, never seen before in a fraction P of the events predicted")
    args = p.parse_args()
    if args.breakdown_child:
        breakdown_child(args.breakdown_child, args.run_args)
        return
    if args.memory:
        memory()
        return
    if args.predict:
        predict_on_arrival(args.events, args.seed, args.repeats, args.new_values)
        return
    if args.throughput:
        if args.kafka:
            kafka_throughput(args.events, args.seed, args.repeats, args.kafka_client, args.time_field)
        else:
            throughput(args.events, args.seed, args.repeats, args.breakdown, args.time_field, args.provisional)
        return
    accuracy_table(args.events, args.seed)


if __name__ == "__main__":
    main()
