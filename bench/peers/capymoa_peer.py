"""CapyMOA's NaiveBayes on the events ``bench/learners.py --part peers`` gives every peer (run in CapyMOA's venv).

    python -I capymoa_peer.py EVENTS.arff EVENTS.jsonl REPEATS WARMUP

Started by ``bench/peers/capymoa_host.py`` with the interpreter of a venv that holds
``capymoa`` (it needs Python 3.11 or later and pins its own pandas, so it does not share
stream_nb's environment); it imports neither stream_nb nor anything of ``bench/``.

- ``EVENTS.arff``: the events as the MOA peer reads them (same nominal and numeric
  declarations); CapyMOA's schema is that file's header.
- ``EVENTS.jsonl``: the same events as a Python user holds them. Its first line is the
  declaration ``{"attributes": [[name, values or null], ...], "classes": [...]}`` (values of
  a nominal attribute in the ARFF file's order, ``null`` for a numeric one); every other line
  one event ``[x, y]`` with ``x`` a dict by attribute name.

Three prequential loops (predict, then train, each event in order) of a fresh
``capymoa.classifier.NaiveBayes``:

- ``python values``: each event's instance is built in the loop from its dict, as a Python
  user would (an array of the values, a nominal value looked up in a dict of its index,
  ``LabeledInstance.from_array``), then ``predict`` and ``train``;
- ``ready instances``: the loop over instances read from the ARFF file by CapyMOA's
  ``ARFFStream`` before timing;
- ``prequential_evaluation``: CapyMOA's own evaluation, a Java loop over its ``ARFFStream``
  (which reads the file again in Java on each run: that is inside its time).

Timing: ``protocol.measure``, as stream_nb's learners are timed: the CPU time of the whole process
(``time.process_time``: the JVM's JIT and GC threads count), ``WARMUP`` untimed runs of each loop,
then ``REPEATS`` timed runs, the loops interleaved; a fresh learner for each run.
Prints one JSON object: per loop the timed seconds and the correct predictions, and the
``ready instances`` loop's predicted class indexes (-1: no prediction) for the agreement check.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run with -I: the script's folder is not on the path
from protocol import measure  # noqa: E402  (bench/peers/protocol.py: the timing stream_nb's learners get)


def read_events(path):
    with open(path, encoding="utf-8") as fh:
        header = json.loads(fh.readline())
        events = [json.loads(line) for line in fh]
    return header, events


def user_attributes(header):
    """What a Python user keeps to turn a dict into an instance: each attribute's name and, for a
    nominal one, a dict of each value's index (``None`` for a numeric one); the index of each class."""
    attributes = [(name, None if values is None else {v: i for i, v in enumerate(values)})
                  for name, values in header["attributes"]]
    return attributes, {c: i for i, c in enumerate(header["classes"])}


def values_row(x, attributes):
    """The instance's values of the event ``x`` (a dict): a numeric value as it is, a nominal one's
    index, NaN for a missing one; in the order of the schema's attributes."""
    row = np.empty(len(attributes))
    for j, (name, index) in enumerate(attributes):
        v = x.get(name)
        if v is None:
            row[j] = math.nan
        else:
            row[j] = v if index is None else index[v]
    return row


def main(argv):
    arff, jsonl, repeats, warmup = argv[0], argv[1], int(argv[2]), int(argv[3])
    import capymoa
    from capymoa.classifier import NaiveBayes
    from capymoa.core import LabeledInstance
    from capymoa.evaluation import prequential_evaluation
    from capymoa.stream import ARFFStream

    header, events = read_events(jsonl)
    stream = ARFFStream(arff)
    schema = stream.get_schema()
    ready = list(stream)
    if len(ready) != len(events):
        raise SystemExit(f"capymoa_peer: {arff} holds {len(ready)} events, {jsonl} {len(events)}")
    attributes, class_index = user_attributes(header)
    moa_header = schema.get_moa_header()
    declared = [str(moa_header.attribute(j).name()) for j in range(len(attributes))]
    if declared != [name for name, _ in attributes]:
        raise SystemExit(f"capymoa_peer: {arff} declares {declared}, {jsonl} {[n for n, _ in attributes]}")

    def python_values(learner):
        correct = 0
        for x, y in events:
            instance = LabeledInstance.from_array(schema, values_row(x, attributes), class_index[y])
            correct += learner.predict(instance) == instance.y_index
            learner.train(instance)
        return correct, None

    def ready_instances(learner):
        correct, predicted = 0, []
        for instance in ready:
            p = learner.predict(instance)
            predicted.append(-1 if p is None else int(p))
            correct += p == instance.y_index
            learner.train(instance)
        return correct, predicted

    def evaluation(learner):
        results = prequential_evaluation(stream, learner, window_size=len(events))
        return round(results["cumulative"].accuracy() / 100 * len(events)), None

    loops = {"python values": python_values, "ready instances": ready_instances,
             "prequential_evaluation": evaluation}
    timings = measure({name: (lambda: NaiveBayes(schema), loop) for name, loop in loops.items()},
                      repeats=repeats, warmup=warmup)
    out = {"capymoa": capymoa.__version__, "events": len(events),
           "runs": {name: {"seconds": t.seconds, "correct": int(t.result[0])} for name, t in timings.items()},
           "predictions": timings["ready instances"].result[1]}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
