#!/usr/bin/env python
"""One model across a consumer group (``stream-nb run --model-topic``): what sharing costs, on this machine.

Run it by hand (it is not a test)::

    python bench/group.py                       # 30k events, 1, 2 and 3 members, every model's apply cost
    python bench/group.py --events 10000 --members 1,3 --model nb
    python bench/group.py --events 6000 --members 1,3 --model nb --feedback --apply-models nb

Broker: ``KAFKA_BOOTSTRAP_SERVERS`` if set, else a local single-node broker
(``deploy/kafka/kafka_local.py``) in a temporary directory, stopped at the end.

Events: 12 categorical attributes of 3 to 8 values and a binary label that
depends on three of them (20% noise), over a 6-partition input topic, all in the
topic before the members start.

Two parts:

* **Group runs** (``--members``, e.g. 1,2,3; plus ``0``: one daemon *without*
  ``--model-topic``, the peer): that many ``stream-nb run --model-topic``
  processes with ``--sync-interval 1``. Drain rate = events / (time the group's
  committed offsets reach the end of the input - time the last member logged
  "running model"). While they drain, ``/metrics`` of every member is scraped
  every 0.25 s: the staleness figures are the mean and the largest
  ``stream_nb_model_staleness_seconds`` seen. Bytes published per event = the
  members' ``model_bytes_published`` / events.
* **Delayed labels** (``--feedback``): each group size runs twice, without
  and with ``--feedback-topic``. With it the events carry no label and 85% of
  them get one on a co-partitioned feedback topic (the rest wait for good);
  the drain ends when the committed offsets of both topics reach their ends.
  Bytes per state = the members' ``model_bytes_published`` /
  ``model_records_published``: what one partition costs at each checkpoint
  that moved it (its counts, offsets and held events). In-process, the
  encoded size of one partition's state holding 0, 1,000 and 10,000 held
  events gives the cost of each held event (the bound: ``--pending-max`` of
  them per member).
* **Apply cost per model** (in-process): six partition states of
  ``--events / 6`` events each are encoded as members publish them; one view
  build (decode the five states of other members, merge the six, rebuild the
  structure) is timed; cost per event = that time / the events one sync
  interval brings at the measured 3-member drain rate. State size = the
  encoded bytes of one partition's state.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from _null import Null  # bench/ is the script's directory, first on sys.path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PARTITIONS = 6
ATTRS = {f"a{i}": [f"v{j}" for j in range(3 + i % 6)] for i in range(12)}


def make_events(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        x = {k: rng.choice(v) for k, v in ATTRS.items()}
        y = (x["a0"] == "v0") ^ (x["a1"] in ("v1", "v2")) ^ (x["a5"] == "v3") ^ (rng.random() < 0.2)
        out.append({"id": i, **x, "label": "yes" if y else "no"})
    return out


def split_labels(events: list[dict], seed: int = 8) -> tuple[list[dict], list[dict]]:
    """The events without their labels, and the labels of 85% of them (``{"id", "label"}``)."""
    rng = random.Random(seed)
    bare = [{k: v for k, v in e.items() if k != "label"} for e in events]
    return bare, [{"id": e["id"], "label": e["label"]} for e in events if rng.random() < 0.85]


def broker() -> tuple[str, object]:
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if bootstrap:
        return bootstrap, lambda: None
    sys.path.insert(0, str(REPO / "deploy" / "kafka"))
    import kafka_local  # the bench's own broker, loaded only when none is given

    directory = tempfile.mkdtemp(prefix="bench-group-kafka-")
    return kafka_local.start(directory), lambda: kafka_local.stop(directory)


def produce(bootstrap: str, topic: str, events: list[dict]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=262_144)
    for e in events:  # keyed and partitioned by id: a label lands in its event's partition number
        producer.send(topic, value=json.dumps(e).encode(), key=str(e["id"]).encode(), partition=e["id"] % PARTITIONS)
    producer.flush()
    producer.close()


def committed_total(bootstrap: str, group: str, topic: str) -> int:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group).get(group, {})
    except Exception:  # noqa: BLE001 - the group may not exist yet
        offsets = {}
    finally:
        admin.close()
    return sum(om.offset for tp, om in offsets.items() if tp.topic == topic and om.offset >= 0)


def scrape(url: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    body = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return {s.name: s.value for f in text_string_to_metric_families(body) for s in f.samples}


def group_run(bootstrap: str, members: int, n: int, model: str, log_dir: Path, feedback: bool = False) -> dict:
    """``members`` daemons (0: one without --model-topic) draining ``n`` events (``feedback``: their labels on
    a feedback topic); the figures."""
    from kafka.admin import KafkaAdminClient, NewTopic

    tag = uuid.uuid4().hex[:8]
    source, output, group, labels = f"bg-in-{tag}", f"bg-out-{tag}", f"bg-{tag}", f"bg-lab-{tag}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(source, PARTITIONS, 1), NewTopic(output, PARTITIONS, 1)]
                        + ([NewTopic(labels, PARTITIONS, 1)] if feedback else []))
    admin.close()
    events, later = split_labels(make_events(n)) if feedback else (make_events(n), [])
    produce(bootstrap, source, events)
    if feedback:
        produce(bootstrap, labels, later)
    shared = members > 0
    procs, logs = [], []
    for i in range(max(1, members)):
        log = log_dir / f"{tag}-{i}.log"
        args = [sys.executable, "-m", "stream_nb", "run", "--model", model, "--bootstrap-servers", bootstrap,
                "--input-topic", source, "--output-topic", output, "--group-id", group, "--instance-id", f"m{i}",
                "--metrics-port", "0", "--metrics-interval", "0", "--log-level", "INFO"]
        if shared:
            args += ["--model-topic", f"bg-model-{tag}", "--sync-interval", "1"]
        if feedback:
            args += ["--feedback-topic", labels]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(log, "wb"), env=env))
        logs.append(log)
    urls: list[str] = []
    deadline = time.monotonic() + 120
    while len(urls) < len(procs):
        urls = [m.group(1) for m in (re.search(r"serving /metrics, /healthz and /readyz on (\S+)", p.read_text())
                                     for p in logs) if m]
        if time.monotonic() > deadline:
            raise SystemExit("members did not start: " + "".join(p.read_text()[-2000:] for p in logs))
        time.sleep(0.05)
    while not all("running model" in p.read_text() for p in logs):
        time.sleep(0.05)
    start = time.monotonic()
    staleness: list[float] = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            for url in urls:
                try:
                    staleness.append(scrape(url).get("stream_nb_model_staleness_seconds", 0.0))
                except Exception:  # noqa: BLE001 - a member between rebalances
                    pass
            stop.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    while committed_total(bootstrap, group, source) < n or (
            feedback and committed_total(bootstrap, group, labels) < len(later)):
        if time.monotonic() - start > 900:
            raise SystemExit("the group did not drain in 900 s")
        time.sleep(0.1)
    seconds = time.monotonic() - start
    stop.set()
    sampler.join()
    published = records = 0
    for proc, log in zip(procs, logs):
        proc.terminate()
        proc.wait(timeout=120)
        found = re.findall(r"; metrics (\{.*\})\s*$", log.read_text(), flags=re.M)
        final = json.loads(found[-1]) if found else {}
        published += final.get("model_bytes_published", 0)
        records += final.get("model_records_published", 0)
    return {"members": members, "feedback": feedback, "seconds": seconds, "rate": n / seconds,
            "staleness_mean": statistics.fmean(staleness) if staleness else 0.0,
            "staleness_max": max(staleness, default=0.0), "bytes_per_event": published / n,
            "bytes_per_state": published / records if records else 0.0}


def held_cost(n: int = 10_000) -> dict:
    """Encoded bytes of one partition's NaiveBayes state holding 0, 1,000 and ``n`` held events (its join part)."""
    import stream_nb
    from stream_nb.engine import Engine, Joiner
    from stream_nb.snapshots import encode_state

    events = make_events(n)
    model = stream_nb.NaiveBayes()
    for e in events:
        model.learn_one({k: v for k, v in e.items() if k not in ("id", "label")}, e["label"])
    out = {}
    for k in (0, 1000, n):
        engine = Engine(stream_nb.NaiveBayes(), Null(), Null(), Null())
        joiner = Joiner(engine, Null())
        for e in events[:k]:
            event = {k2: v for k2, v in e.items() if k2 not in ("id", "label")}
            joiner.store.add(str(e["id"]).encode(), event, t=0.0, partition="in-0", offset=e["id"] + 1)
        out[k] = len(encode_state(*model.state(), info={"offset": n, "join": joiner.part("in-0", "lab-0")}))
    return out


def apply_cost(model: str, n: int, rate: float) -> dict:
    """Time of one view build from six partition states, and per event at ``rate`` events/s with 1 s syncs."""
    import stream_nb
    from stream_nb.engine import merge_states
    from stream_nb.snapshots import decode_state, encode_state

    cls = {"nb": stream_nb.NaiveBayes, "aode": stream_nb.AODE, "tan": stream_nb.TAN, "spode": stream_nb.SPODE,
           "kdb": stream_nb.KDB}[model]
    events = make_events(n)
    parts = []
    for p in range(PARTITIONS):
        m = cls()
        for e in events[p::PARTITIONS]:
            m.learn_one({k: v for k, v in e.items() if k not in ("id", "label")}, e["label"])
        parts.append((f"in-{p}", m, encode_state(*m.state(), info={"offset": len(events[p::PARTITIONS])})))
    times = []
    for _ in range(5):
        t = time.perf_counter()
        states = [(name, decode_state(blob)[0] if i else m) for i, (name, m, blob) in enumerate(parts)]
        merge_states(cls(), states)
        times.append(time.perf_counter() - t)
    build = min(times)
    return {"model": model, "state_bytes": len(parts[0][2]), "build_seconds": build,
            "per_event_us": build / max(rate, 1.0) * 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--members", default="0,1,2,3", help="group sizes to run; 0: one daemon without a model topic")
    parser.add_argument("--model", default="tan", help="the daemons' model")
    parser.add_argument("--apply-models", default="nb,aode,tan,spode,kdb")
    parser.add_argument("--feedback", action="store_true",
                        help="run each group size without and with --feedback-topic (85%% of the labels, later)")
    args = parser.parse_args(argv)
    bootstrap, stop_broker = broker()
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-group-") as tmp:
            for k in [int(x) for x in args.members.split(",") if x]:
                for feedback in (False, True) if args.feedback else (False,):
                    runs.append(group_run(bootstrap, k, args.events, args.model, Path(tmp), feedback))
                    print(runs[-1], flush=True)
    finally:
        stop_broker()
    print(f"\n{args.events} events, --model {args.model}, {PARTITIONS} partitions, --sync-interval 1, "
          f"{os.cpu_count()} cores (shared)\n")
    print("| members | labels | drain, events/s | per member | vs. no model topic | staleness mean / max, s "
          "| published bytes/event | bytes/state |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        peer = next((p["rate"] for p in runs if p["members"] == 0 and p["feedback"] == r["feedback"]), None)
        name = "1, no --model-topic" if r["members"] == 0 else str(r["members"])
        ratio = f"{r['rate'] / peer:.2f}" if peer else "-"
        print(f"| {name} | {'--feedback-topic' if r['feedback'] else 'in place'} | {r['rate']:,.0f} "
              f"| {r['rate'] / max(1, r['members']):,.0f} | {ratio} "
              f"| {r['staleness_mean']:.2f} / {r['staleness_max']:.2f} | {r['bytes_per_event']:.1f} "
              f"| {r['bytes_per_state']:,.0f} |")
    if args.feedback:
        sizes = held_cost()
        print("\none partition's NaiveBayes state on the model topic, by the events its join holds\n")
        print("| held events | state, bytes | per held event, bytes |")
        print("|---|---|---|")
        for k, size in sizes.items():
            print(f"| {k:,} | {size:,} | {(size - sizes[0]) / k if k else 0:.0f} |")
    rate = max((r["rate"] for r in runs if r["members"] > 0), default=1000.0)
    print(f"\napply cost: one view build from {PARTITIONS} partition states of {args.events // PARTITIONS} events "
          f"each; per event at {rate:,.0f} events/s with 1 s syncs\n")
    print("| model | one partition's state, bytes | view build, ms | per event, µs |")
    print("|---|---|---|---|")
    for model in args.apply_models.split(","):
        c = apply_cost(model, args.events, rate)
        print(f"| {model} | {c['state_bytes']:,} | {c['build_seconds'] * 1e3:.1f} | {c['per_event_us']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
