"""Kinds of feature values and labels, their checks, and columns of events."""

from ._values import (BINNED, CAT, EMPTY_FLOAT, EMPTY_INT, GAUSS, KIND_NAMES, NONE_TYPE, NUMERIC_LIMIT,
    PLAIN_TYPES, PROMOTE, TWINNED, VALUE_GROUPS, Encoded, a_noun, categorical_value, check_event, check_types,
    describe_type, hashable, is_nan, json_type, number_column, numeric_value, short_repr)
from ._labels import Labels, is_missing_label, validate_label
from ._columns import Columns

__all__ = ["BINNED", "CAT", "EMPTY_FLOAT", "EMPTY_INT", "GAUSS", "KIND_NAMES", "NONE_TYPE", "NUMERIC_LIMIT",
    "PLAIN_TYPES", "PROMOTE", "TWINNED", "VALUE_GROUPS", "Encoded", "a_noun", "categorical_value",
    "check_event", "check_types", "describe_type", "hashable", "is_nan", "json_type", "number_column",
    "numeric_value", "short_repr", "Labels", "is_missing_label", "validate_label", "Columns"]
