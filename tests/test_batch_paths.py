"""The engine's per-poll paths give the bytes of its one-event paths.

* ``EventDecoder.decode_many`` against ``EventDecoder.decode`` one record at a
  time: the same events (features in the same order) and the same rejections
  (type, reason, field, message), on the fuzzers' records.
* ``output_bytes`` against ``orjson.dumps(output_record(...))`` (``json.dumps``
  where orjson refuses), the serialisation the engine used for every output:
  probabilities keyed by strings, integers, booleans or a mix, of floats,
  integers or numpy floats, ids and predictions of every JSON type.
* ``Engine.process_many`` end to end: its outputs equal those built from the
  one-event functions around the same model's ``prequential_iter``.
"""

from __future__ import annotations

import json

import numpy as np
import orjson
from hypothesis import given
from hypothesis import strategies as st
import pytest

import stream_nb
from stream_nb import Tree
from stream_nb.engine import Engine, EventDecoder, Record, output_bytes, output_record
from stream_nb.exceptions import InvalidEventError
from test_fuzz_events import ListSink, fuzz_settings, json_scalars, streams


def one_at_a_time(decoder: EventDecoder, raw: bytes):
    try:
        return decoder.decode(raw)
    except InvalidEventError as exc:
        return exc


def described(result) -> tuple:
    if isinstance(result, InvalidEventError):
        return type(result), result.reason, result.field, str(result)
    return result.id, repr(list(result.features.items())), result.label


@fuzz_settings(80)
@given(values=streams(most=15), config=st.sampled_from([{}, {"features": ["a", "b"]}, {"id_field": None},
                                                  {"label_field": "a", "id_field": "b"}, {"max_event_bytes": 16}]))
def test_decode_many_equals_decode_one_at_a_time(values, config):
    decoder = EventDecoder(config)
    many = decoder.decode_many(values)
    assert [described(r) for r in many] == [described(one_at_a_time(decoder, v)) for v in values]


def reference_bytes(*args) -> bytes:
    """What the engine sent before ``output_bytes``: ``output_record`` through orjson, else ``json``."""
    output = output_record(*args)
    try:
        return orjson.dumps(output)
    except TypeError:
        return json.dumps(output, separators=(",", ":"), ensure_ascii=False).encode()


labels = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.integers(), st.booleans())
probabilities = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 5e-324, 1e-20]), st.integers(0, 1),
                          st.floats(0, 1).map(np.float64))


@fuzz_settings(200)
@given(
    proba=st.one_of(st.dictionaries(st.text(max_size=4), probabilities, max_size=4),
                    st.dictionaries(st.integers() | st.booleans(), probabilities, max_size=4),
                    st.dictionaries(labels, probabilities, max_size=4)),
    event_id=json_scalars,
    prediction=st.none() | labels,
    learned=st.booleans(),
    n_learned=st.integers(0, 2**40),
    imputed=st.none() | st.dictionaries(st.text(max_size=3), labels, max_size=2),
)
def test_output_bytes_equal_the_output_record_serialised(proba, event_id, prediction, learned, n_learned, imputed):
    args = (event_id, prediction, proba, "nb", learned, n_learned, {"topic": "t", "partition": 1, "offset": 7},
            imputed)
    assert output_bytes(*args) == reference_bytes(*args)


class Polls:
    """A finite source handing out the records in polls of ``batch``."""

    def __init__(self, records: list[Record], batch: int):
        self.records, self.batch, self.exhausted = list(records), batch, False

    def poll(self, max_records, timeout):
        out, self.records = self.records[:self.batch], self.records[self.batch:]
        self.exhausted = not out
        return out

    def commit(self, positions):
        pass

    def seek(self, positions):
        pass

    def close(self):
        pass


@pytest.mark.parametrize("make", [stream_nb.NaiveBayes, lambda: stream_nb.TAN(search=Tree(rebuild_every=50)),
                                  stream_nb.AODE], ids=["nb", "tan", "aode"])
def test_process_many_sends_the_outputs_of_the_one_event_functions(make):
    from recovery import make_events

    events = make_events(600, seed=19, poison_every=37)
    raw = [e["raw"] for e in events]
    mixed = [b'{"id": 1.5, "color": "red", "label": "yes"}', b'{"id": [1], "color": "red"}',
             b'{"color": null, "shape": "flat", "label": true}', b'{"color": "red", "weight": 2.5, "label": "no"}']
    raw[100:100] = mixed  # floats, a bad id, a null feature, a label of another type, a new feature
    records = [Record(v, f"k{i}".encode(), f"in-{i % 3}", {"topic": "in", "partition": i % 3, "offset": i // 3},
                      i // 3 + 1) for i, v in enumerate(raw)]
    out, dead = ListSink(), ListSink()
    Engine(make(), Polls(records, 50), out, dead, config={"model_name": "m", "log_metrics_interval_s": 0}).run()

    decoder, model, expected, n_learned = EventDecoder(), make(), [], 0
    for start in range(0, len(records), 50):
        poll = [(r, one_at_a_time(decoder, r.value)) for r in records[start:start + 50]]
        valid = [(r, e) for r, e in poll if not isinstance(e, InvalidEventError)]
        for (record, event), result in zip(valid, model.prequential_iter([e.features for _, e in valid],
                                                                         [e.label for _, e in valid])):
            if isinstance(result, InvalidEventError):
                continue
            prediction, proba = result
            n_learned += event.label is not None
            expected.append(reference_bytes(event.id, prediction, proba, "m", event.label is not None, n_learned,
                                            record.position))
    assert out.sent == expected
    assert len(out.sent) + len(dead.sent) == len(records)
