"""Classes, features and values as indices: the schema, promotions, and the encoding of one event, runs and frames."""

from ._schema import ObservedView, Schema
from ._promotion import Promotion
from ._encoding import Encoding
from ._shapes import EventShape, shape_of
from ._frames import Frames
from ._frame_runs import ArrayRuns, frame_events

__all__ = [
    "ObservedView",
    "Schema",
    "Promotion",
    "Encoding",
    "EventShape",
    "shape_of",
    "Frames",
    "ArrayRuns",
    "frame_events",
]
