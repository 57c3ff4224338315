#!/usr/bin/env python
"""What the daemon's observer (metrics, health, latency histogram) costs per event.

Run it by hand (it is not a test)::

    python bench/ops_overhead.py                   # 50,000 Agrawal events, nb and tan
    python bench/ops_overhead.py --events 20000 --models nb --scrape-every 1

The engine runs in-process over pre-encoded events (a list source, sinks that
drop what they get), so only the engine and the model are measured, once with
the engine's default no-op observer and once with the daemon's
:class:`~stream_nb.ops.DaemonObserver` attached and its HTTP endpoint up,
scraped by a thread every ``--scrape-every`` seconds. Rates are events per
CPU second of the whole process (the HTTP thread included), so other load on
the machine does not skew them. Runs alternate between the two set-ups; the
best of ``--repeat`` runs of each is reported.

With ``--observer none`` only the no-op set-up runs, so the same script also
measures a checkout that predates :mod:`stream_nb.ops` (``PYTHONPATH=<that
tree> python bench/ops_overhead.py --observer none``).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import urllib.request

FLOAT_FEATURES = ("salary", "commission", "age", "hvalue", "hyears", "loan")


def make_events(n: int) -> list[bytes]:
    import orjson
    from river.datasets import synth

    out = []
    for i, (x, y) in enumerate(synth.Agrawal(seed=42).take(n)):
        event = {"id": i}
        for name, value in x.items():
            event[name] = float(value) if name in FLOAT_FEATURES else int(value)
        event["label"] = int(y)
        out.append(orjson.dumps(event))
    return out


class ListSource:
    exhausted = False

    def __init__(self, values: list[bytes]):
        from stream_nb.engine import Record

        self.records = [Record(v, None, "bench", {"line": i + 1}, i + 1) for i, v in enumerate(values)]
        self.at = 0

    def poll(self, max_records, timeout):
        batch = self.records[self.at:self.at + max_records]
        self.at += len(batch)
        self.exhausted = not batch
        return batch

    def commit(self, positions):
        pass

    def seek(self, positions):
        pass

    def close(self):
        pass


class NullSink:
    def send(self, value, key=None):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def run_once(model_name: str, events: list[bytes], observed: bool, scrape_every: float) -> float:
    import stream_nb
    from stream_nb.engine import Engine

    model = {"nb": stream_nb.NaiveBayes, "tan": stream_nb.TAN, "aode": stream_nb.AODE}[model_name]()
    engine = Engine(model, ListSource(events), NullSink(), NullSink(),
                    config={"model_name": model_name, "log_metrics_interval_s": 0})
    ops = stop = scraper = None
    if observed:
        from stream_nb.ops import Operations

        ops = Operations(model_name=model_name, mode="jsonl", host="127.0.0.1", port=0, summary_interval=0)
        ops.attach(engine)
        stop = threading.Event()
        url = ops.server.url + "/metrics"

        def scrape():
            while not stop.wait(scrape_every):
                urllib.request.urlopen(url, timeout=5).read()

        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
    start = time.process_time()  # CPU of every thread of this process: robust on a busy machine
    engine.run()
    elapsed = time.process_time() - start
    if ops is not None:
        stop.set()
        scraper.join()
        ops.detach()
        ops.close()
    return len(events) / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--models", default="nb,tan", help="comma-separated: nb, tan, aode")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scrape-every", type=float, default=1.0, help="seconds between two scrapes")
    parser.add_argument("--observer", choices=("both", "none"), default="both")
    args = parser.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    events = make_events(args.events)
    setups = (False,) if args.observer == "none" else (False, True)
    print(f"| model | observer | events per CPU second (best of {args.repeat}) | overhead |")
    print("|---|---|---:|---:|")
    for model_name in [m.strip() for m in args.models.split(",") if m.strip()]:
        best = {s: 0.0 for s in setups}
        for _ in range(args.repeat):
            for observed in setups:
                best[observed] = max(best[observed], run_once(model_name, events, observed, args.scrape_every))
        base = best[False]
        for observed in setups:
            rate = best[observed]
            label = f"DaemonObserver + HTTP, scraped every {args.scrape_every:g} s" if observed else "no-op (default)"
            overhead = f"{(base / rate - 1) * 100:+.1f}%" if observed else "-"
            print(f"| {model_name} | {label} | {rate:,.0f} | {overhead} |")
    print(f"\n{args.events:,} Agrawal events in-process, list source, null sinks; "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
