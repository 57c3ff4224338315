"""Receipts as plain data (``receipts_state`` / ``receipts_from_state``): a restored model takes an event back
with a restored receipt exactly as the model that issued it would have."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest

from stream_nb import AODE, EM, KDB, MDL, SPODE, TAN, EqualFrequency, NaiveBayes, Parents, SuperParent, Tree, Window
from test_fine_layer import int_then_float_events

MAKERS = {
    "aode-mdl": lambda: AODE(numeric=MDL(fine_bins=16, warmup=40), missing=EM()),
    "tan-mdl": lambda: TAN(numeric=MDL(fine_bins=16, warmup=40), missing=EM(), search=Tree(rebuild_every=50)),
    "spode-mdl": lambda: SPODE(numeric=MDL(fine_bins=16, warmup=40), missing=EM(), search=SuperParent(parent="k")),
    "kdb": lambda: KDB(k=2, numeric=EqualFrequency(warmup=40), missing=EM(), search=Parents(rebuild_every=50)),
    "nb-window": lambda: NaiveBayes(forgetting=Window(size=60), missing=EM()),
}


def json_round_trip(arrays, meta):
    """As a snapshot keeps them: arrays as they are, the rest through JSON."""
    return {k: np.array(v) for k, v in arrays.items()}, json.loads(orjson.dumps(meta, option=orjson.OPT_SERIALIZE_NUMPY))


@pytest.mark.parametrize("name", MAKERS)
def test_a_restored_receipt_takes_back_what_the_original_would(name):
    """Events learned with receipts while the fine edges did not exist yet (they wait, and the receipt knows
    them by a key the store's state now keeps), the model and the receipts saved and restored, more events
    learned (the waiting values counted), then the events taken back with the restored receipts: the store
    equals, array for array, the one that was never restored and used the original receipts."""
    events = int_then_float_events(200, ints=0, missing=0.2)
    drop = [5, 12, 33, 61, 90]
    a, b = MAKERS[name](), MAKERS[name]()
    receipts = {}
    for i, (x, y) in enumerate(events[:100]):
        receipts[i] = a.learn_one_receipt(x, y)
        b.learn_one_receipt(x, y)
    waiting = [i for i in drop if any(e[0] == "waiting" for e in receipts[i].entries)]
    if name.endswith("mdl"):
        assert waiting  # the two-layer store keeps some of them until their edges exist
    arrays, meta = json_round_trip(*a.receipts_state([receipts[i] for i in drop]))
    restored = type(a).from_state(*json_round_trip(*a.state()))
    back = dict(zip(drop, restored.receipts_from_state(arrays, meta)))
    for x, y in events[100:]:
        restored.learn_one(x, y)
        b.learn_one(x, y)
    for i in drop:
        restored.unlearn_one(*events[i], receipt=back[i])
        b.unlearn_one(*events[i], receipt=receipts[i])
    got, want = restored.state(), b.state()
    assert got[1] == json.loads(orjson.dumps(want[1], option=orjson.OPT_SERIALIZE_NUMPY))
    for k in want[0]:
        np.testing.assert_array_equal(got[0][k], want[0][k], err_msg=k)


def test_the_store_keeps_the_keys_of_its_waiting_events_and_refuses_keys_that_do_not_fit():
    events = int_then_float_events(60, ints=0, missing=0.2)
    model = MAKERS["tan-mdl"]()
    for x, y in events[:30]:
        model.learn_one_receipt(x, y)
    arrays, meta = json_round_trip(*model.state())
    tl = meta["stats"]["two_layer"]
    assert tl["receipts"] == 30 and all(len(e) == 7 for e in tl["backlog"])
    tl["backlog"][1][6] = tl["backlog"][0][6]  # two events, one key
    with pytest.raises(ValueError, match=r"stats.two_layer: expected receipt keys of the waiting and counted "
                                         r"events distinct, each in 1\.\.30"):
        type(model).from_state(arrays, meta)
    tl["backlog"][1][6] = "k"
    with pytest.raises(ValueError, match=r"stats.two_layer.backlog\[1\]\[6\]: expected null or the key a receipt"):
        type(model).from_state(arrays, meta)
