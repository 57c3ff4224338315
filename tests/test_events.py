"""The event contract: what decodes into (id, features, label), and why the rest is rejected."""

from __future__ import annotations

import json
import math

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_nb.engine import Event, EventDecoder, validate_label
from stream_nb.exceptions import ConfigError, FeatureTypeError, InvalidEventError


def decode(raw: bytes, **config) -> Event:
    return EventDecoder(config).decode(raw)


# ----------------------------------------------------------------------- valid events


def test_features_are_every_field_but_label_and_id_and_nulls_are_dropped():
    event = decode(b'{"id": "a1", "outlook": "sunny", "temp": 21.5, "n": 3, "wind": true, "rain": null, "label": "yes"}')
    assert event == Event(id="a1", features={"outlook": "sunny", "temp": 21.5, "n": 3, "wind": True}, label="yes")
    assert event.labeled


@pytest.mark.parametrize("raw", [b'{"x": 1}', b'{"x": 1, "label": null}'])
def test_absent_or_null_label_makes_an_unlabeled_event(raw):
    event = decode(raw)
    assert event.label is None
    assert not event.labeled
    assert event.features == {"x": 1}


@pytest.mark.parametrize(
    ("label_json", "expected"),
    [(b'"yes"', "yes"), (b'""', ""), (b"3", 3), (b"-2", -2), (b"true", True), (b"false", False), (b"1.0", 1), (b"-4.0", -4)],
)
def test_usable_labels(label_json, expected):
    label = decode(b'{"x": 1, "label": ' + label_json + b"}").label
    assert label == expected
    assert type(label) is type(expected)


def test_false_and_zero_labels_are_labels_not_missing():
    assert decode(b'{"x": 1, "label": false}').labeled
    assert decode(b'{"x": 1, "label": 0}').labeled


def test_id_is_passed_through_with_its_json_type_and_is_not_a_feature():
    assert decode(b'{"id": 17, "x": 1}').id == 17
    assert decode(b'{"id": 1.5, "x": 1}').id == 1.5
    assert decode(b'{"id": null, "x": 1}').id is None
    assert decode(b'{"x": 1}').id is None
    assert decode(b'{"id": 17, "x": 1}').features == {"x": 1}


def test_id_field_none_makes_id_an_ordinary_feature():
    event = decode(b'{"id": 17, "x": 1}', id_field=None)
    assert event.id is None
    assert event.features == {"id": 17, "x": 1}


def test_custom_label_and_id_fields():
    event = decode(b'{"key": "k", "label": "a feature now", "play": "no"}', label_field="play", id_field="key")
    assert event == Event(id="k", features={"label": "a feature now"}, label="no")


def test_features_list_selects_fields_and_ignores_the_rest_even_nested():
    event = decode(b'{"a": 1, "b": "x", "c": {"deep": [1]}, "d": null, "label": "y"}', features=["a", "d", "missing"])
    assert event.features == {"a": 1}
    assert event.label == "y"


def test_empty_object_is_a_valid_event_without_features():
    assert decode(b"{}") == Event(id=None, features={}, label=None)


def test_event_of_exactly_max_event_bytes_is_accepted():
    raw = b'{"x": "' + b"a" * 20 + b'"}'
    assert decode(raw, max_event_bytes=len(raw)).features == {"x": "a" * 20}


# ----------------------------------------------------------------------- what real producers write

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("raw", [
    b'{"id": 3, "a": "x", "t": 1.5, "label": "yes"}',
    b'  {"id": 3, "a": "x", "t": 1.5, "label": "yes"}  ',
    b'{"id": 3, "a": "x", "t": 1.5, "label": "yes", "n": NaN}',
])
def test_a_leading_byte_order_mark_is_ignored(raw):
    assert decode(BOM + raw) == Event(id=3, features={"a": "x", "t": 1.5}, label="yes")


def test_nan_means_missing_wherever_it_stands():
    event = decode(b'{"id": NaN, "a": NaN, "b": 2.5, "label": NaN}')
    assert event == Event(id=None, features={"b": 2.5}, label=None)
    assert not event.labeled
    assert decode(b'{"a": NaN, "b": "x", "label": "y"}', features=["a", "b"]).features == {"b": "x"}


def test_an_infinite_feature_is_rejected_as_the_models_reject_it():
    from stream_nb import NaiveBayes

    with pytest.raises(FeatureTypeError) as decoded:
        decode(b'{"a": "x", "t": Infinity}')
    with pytest.raises(FeatureTypeError) as learned:
        NaiveBayes().learn_one({"a": "x", "t": math.inf}, "yes")
    assert decoded.value.reason == learned.value.reason == "bad_feature_type"
    assert decoded.value.field == learned.value.field == "t"
    assert str(decoded.value) == str(learned.value) == "feature 't': expected a finite number, got inf"


def test_an_infinite_value_of_an_ignored_field_is_ignored():
    assert decode(b'{"a": 1, "b": Infinity}', features=["a"]).features == {"a": 1}


def test_integers_beyond_64_bits_read_the_same_with_or_without_the_fallback():
    # orjson reads them as the nearest float; the fallback (taken for NaN here) must agree
    fast = decode(b'{"a": 123456789012345678901234567, "b": 18446744073709551615, "c": -9223372036854775808}')
    slow = decode(b'{"a": 123456789012345678901234567, "b": 18446744073709551615, "c": -9223372036854775808, "d": NaN}')
    assert fast == slow
    assert fast.features == {"a": 1.2345678901234568e26, "b": 2**64 - 1, "c": -(2**63)}
    # an id is written back: one in range stays exact, a float literal stays a float
    assert decode(b'{"id": 18446744073709551615}').id == 2**64 - 1
    assert decode(b'{"id": 1e30}').id == 1e30


def test_deep_nesting_in_the_fallback_is_a_rejection_not_a_crash():
    raw = b'{"x": NaN, "y": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    with pytest.raises(InvalidEventError) as err:
        decode(raw)
    assert err.value.reason == "invalid_json"


def test_duplicate_keys_keep_the_last_value_with_or_without_the_fallback():
    assert decode(b'{"a": 1, "a": 2, "label": "p", "label": "q"}') == Event(None, {"a": 2}, "q")
    assert decode(b'{"a": 1, "a": 2, "label": "p", "label": "q", "n": NaN}') == Event(None, {"a": 2}, "q")


def test_negative_zero_is_a_number_and_a_label_zero():
    event = decode(b'{"a": -0.0, "label": -0.0}')
    assert event.features == {"a": 0.0} and math.copysign(1, event.features["a"]) == -1
    assert event.label == 0 and type(event.label) is int


# ----------------------------------------------------------------------- rejections


@pytest.mark.parametrize(
    ("raw", "reason", "field", "message"),
    [
        (b'{"x": "caf\xe9"}', "invalid_utf8", None, "not valid UTF-8"),
        (b"\xff\xfe{}", "invalid_utf8", None, "not valid UTF-8"),
        (b'{"x": 1', "invalid_json", None, "not valid JSON"),
        (b"", "invalid_json", None, "not valid JSON"),
        (b'{"x": nan}', "invalid_json", None, "not valid JSON"),
        (b'{"x": 1, "\xef\xbb\xbf": 2', "invalid_json", None, "not valid JSON"),
        (b'{"x": "\\ud800", "y": NaN}', "invalid_json", None, "not valid JSON"),
        (b'\xef\xbb\xbf\xef\xbb\xbf{"x": 1}', "invalid_json", None, "not valid JSON"),
        (b'\xef\xbb\xbf{"x": 1', "invalid_json", None, "unexpected end of data: line 1 column 8"),
        (b'\xef\xbb\xbf{"x": "caf\xe9"}', "invalid_utf8", None, "not valid UTF-8"),
        (b'{"x": Infinity}', "bad_feature_type", "x", "feature 'x': expected a finite number, got inf"),
        (b'{"x": -Infinity, "label": "a"}', "bad_feature_type", "x", "got -inf"),
        (b'{"x": 1e400}', "bad_feature_type", "x", "expected a finite number"),
        (b'{"x": 1, "label": Infinity}', "bad_label", "label", "the float inf"),
        (b'{"id": -Infinity, "x": 1}', "bad_id", "id", "got -inf"),
        (b'{"id": 123456789012345678901234567890, "x": 1}', "bad_id", "id",
         "the integer 123456789012345678901234567890, outside the 64-bit range"),
        (b'{"id": -9223372036854775809, "x": NaN}', "bad_id", "id", "send it as a string"),
        (b'{"x": 1} {"x": 2}', "invalid_json", None, "not valid JSON"),
        (b"[1, 2]", "not_an_object", None, "got an array"),
        (b'"text"', "not_an_object", None, "got a string"),
        (b"null", "not_an_object", None, "event must be a JSON object, got null"),
        (b"42", "not_an_object", None, "got a number"),
        (b"4.5", "not_an_object", None, "got a number"),
        (b"true", "not_an_object", None, "event must be a JSON object, got true"),
        (b"false", "not_an_object", None, "got false"),
        (b'{"id": {"n": 1}, "x": 1}', "bad_id", "id", "got an object"),
        (b'{"x": 1, "label": 9007199254740993.0}', "bad_label", "label", "may not be the integer it was written as"),
        (b'{"x": 1, "label": 9007199254740992}', None, None, None),
        (b'{"x": 1, "label": 9007199254740991.0}', None, None, None),
        (b'{"sky": {"cover": 3}}', "nested_value", "sky", "feature 'sky'"),
        (b'{"tags": ["a", "b"]}', "nested_value", "tags", "got an array"),
        (b'{"x": 1, "label": 0.5}', "bad_label", "label", "the float 0.5"),
        (b'{"x": 1, "label": 1e300}', "bad_label", "label", "got the float"),
        (b'{"x": 1, "label": {"y": 1}}', "bad_label", "label", "got an object"),
        (b'{"x": 1, "label": ["y"]}', "bad_label", "label", "got an array"),
        (b'{"id": {"n": 1}, "x": 1}', "bad_id", "id", "id 'id'"),
        (b'{"id": [1], "x": 1}', "bad_id", "id", "got an array"),
    ],
)
def test_rejections_carry_reason_field_and_a_clear_message(raw, reason, field, message):
    if reason is None:  # an integer label as such, or a float below 2**53 that is an integer: that integer
        assert decode(raw).label == int(orjson.loads(raw)["label"])
        return
    with pytest.raises(InvalidEventError) as err:
        decode(raw)
    assert err.value.reason == reason
    assert err.value.field == field
    assert message in str(err.value)


def test_oversize_is_checked_before_decoding():
    with pytest.raises(InvalidEventError) as err:
        decode(b'{"x": "' + b"\xff" * 30 + b'"}', max_event_bytes=16)
    assert err.value.reason == "oversize"
    assert "max_event_bytes=16" in str(err.value)


def test_float_label_beyond_exact_integers_is_rejected():
    assert validate_label(float(2**53 - 1)) == 2**53 - 1 and validate_label(-float(2**53 - 1)) == -(2**53 - 1)
    for beyond in (float(2**53), float(2**54), -float(2**53)):  # 2**53 is also what 2**53 + 1 reads as
        with pytest.raises(InvalidEventError) as err:
            validate_label(beyond)
        assert err.value.reason == "bad_label" and "send it as an integer or a string" in str(err.value)


def test_bad_label_message_names_the_configured_field():
    with pytest.raises(InvalidEventError) as err:
        decode(b'{"x": 1, "play": 0.25}', label_field="play")
    assert err.value.field == "play"
    assert "'play'" in str(err.value)


# ----------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"label": "y"}, "unknown event setting 'label'; expected one of: features, id_field, label_field, max_event_bytes"),
        ({"label_field": ""}, "label_field must be a non-empty string"),
        ({"id_field": 3}, "id_field must be a non-empty string or None"),
        ({"id_field": "k", "label_field": "k"}, "must differ"),
        ({"features": "a,b"}, "features must be a list"),
        ({"features": ["a", "label"]}, "must not contain 'label': it is the label_field"),
        ({"features": ["id"]}, "must not contain 'id': it is the id_field"),
        ({"max_event_bytes": 0}, "max_event_bytes must be a positive integer"),
        ({"max_event_bytes": True}, "max_event_bytes must be a positive integer"),
    ],
)
def test_bad_configuration_is_rejected_clearly(config, match):
    with pytest.raises(ConfigError) as err:
        EventDecoder(config)
    assert match in str(err.value)


# ----------------------------------------------------------------------- property

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
)


@given(st.dictionaries(st.text(max_size=6), scalars, max_size=8))
def test_any_object_of_scalars_decodes_to_its_non_null_fields(obj):
    raw = orjson.dumps(obj)
    label = obj.get("label")
    if isinstance(label, float) and not (label.is_integer() and abs(label) < 2**53):
        with pytest.raises(InvalidEventError) as err:
            decode(raw)
        assert err.value.reason == "bad_label"
        return
    event = decode(raw)
    assert event.id == obj.get("id")
    assert event.label == label and (label is None or type(event.label) in (str, int, bool))
    assert event.features == {k: v for k, v in obj.items() if k not in ("id", "label") and v is not None}


finite_or_not = st.one_of(scalars, st.sampled_from([math.nan, math.inf, -math.inf]))


@given(st.dictionaries(st.sampled_from(["id", "label", "a", "b", "c"]), finite_or_not, max_size=5), st.booleans())
def test_what_pythons_json_dumps_writes_decodes_with_nan_as_missing_and_infinity_rejected(obj, bom):
    raw = (BOM if bom else b"") + json.dumps(obj).encode()
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in obj.items()}
    infinite = [k for k, v in clean.items() if isinstance(v, float) and math.isinf(v)]
    try:
        expected = decode(orjson.dumps({k: (0.0 if k in infinite else v) for k, v in clean.items()}))
    except InvalidEventError as exc:  # e.g. a fractional label, whatever the other fields hold
        expected = exc
    try:
        event = decode(raw)
    except InvalidEventError as exc:
        assert infinite or isinstance(expected, InvalidEventError), (raw, exc)
        if not isinstance(expected, InvalidEventError) or expected.field in infinite:
            assert exc.field in infinite
            assert exc.reason == {"id": "bad_id", "label": "bad_label"}.get(exc.field, "bad_feature_type")
        return
    assert not infinite
    assert event == expected
