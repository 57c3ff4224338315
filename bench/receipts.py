"""What keeping the receipts of provisional labels in the join's snapshot state costs.

Every held event has one missing value of 20 categorical features and is
learned provisionally under EM (``missing=EM()``), so each has a receipt the
snapshot must hold (its journal: the expected counts, and for TAN the pair
indicators). Reported per receipt: the bytes of its arrays (``join.receipt_int``,
``join.receipt_float``) and of its JSON, and the time of ``join_state`` (writing
the join, receipts included) and ``load_join_state`` (reading it back, each
receipt checked against the model).

    PYTHONPATH=. python bench/receipts.py --events 20000 --model nb
    PYTHONPATH=. python bench/receipts.py --events 5000 --model tan
"""

from __future__ import annotations

import argparse
import json
import random
import time

import orjson

from stream_nb import EM, TAN, NaiveBayes, Tree
from delayed import Collect, Events  # the in-memory source and sink of bench/delayed.py (this folder)
from stream_nb.engine import Engine, Joiner, join_state, load_join_state


def engine_of(model, events):
    engine = Engine(model, Events(events), Collect(), Collect(), config={"poll_max_records": 500})
    engine.joiner = Joiner(engine, Events([]), {"provisional_label": 0})
    return engine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--model", choices=["nb", "tan"], default="nb")
    args = ap.parse_args()
    rng = random.Random(0)
    events = []
    for i in range(args.events):
        x = {f"f{j}": rng.choice("abcde") for j in range(20)}
        x.pop(f"f{rng.randrange(20)}")  # one missing value: EM's expected counts, a receipt each
        events.append({"id": f"e{i}", **x})
    model = NaiveBayes(missing=EM()) if args.model == "nb" else TAN(missing=EM(), search=Tree(rebuild_every=10**9))
    model.learn_one({f"f{j}": "a" for j in range(20)}, 1)
    engine = engine_of(model, events)
    engine.run()
    n = len(engine.joiner.receipts)
    start = time.perf_counter()
    arrays, meta = join_state(engine.joiner)
    t_save = time.perf_counter() - start
    array_bytes = sum(v.nbytes for k, v in arrays.items() if k.startswith("join.receipt_"))
    json_bytes = len(orjson.dumps(meta["receipts"]))
    meta = json.loads(orjson.dumps(meta))  # as a snapshot reads it
    fresh = engine_of(type(model).from_state(*model.state()), [])
    start = time.perf_counter()
    load_join_state(fresh.joiner, arrays, meta)
    t_load = time.perf_counter() - start
    assert len(fresh.joiner.receipts) == n
    print(f"{args.model}: {n:,} receipts; per receipt {array_bytes / n:,.0f} B of arrays and {json_bytes / n:,.0f} B "
          f"of JSON; join_state {t_save:.2f} s ({t_save / n * 1e6:.0f} us each), load_join_state {t_load:.2f} s "
          f"({t_load / n * 1e6:.0f} us each)")


if __name__ == "__main__":
    main()
