"""The schema and encoder of a count store (:class:`Schema`): classes, features and values as indices, one
event, runs and frames encoded, promotions; the value types of categorical features (:class:`ValueTypes`)."""

from ._schema import Promoted, Schema
from ._runs import RunEncoder, frame_events
from ._value_types import ValueTypes
from ._alignment import align, check_feature, check_labels, few_overflow, index_maps, new_entries, turned_numeric

__all__ = [
    "Schema", "Promoted", "RunEncoder", "frame_events", "ValueTypes",
    "align", "check_feature", "check_labels", "few_overflow", "index_maps", "new_entries", "turned_numeric",
]
