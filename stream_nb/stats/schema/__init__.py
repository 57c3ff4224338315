"""Classes, features and values as indices: the schema, promotions, and the encoding of one event, runs and frames."""

from ._schema import Schema
from ._promotion import Promotion
from ._encoding import Encoding
from ._frames import Frames
from ._frame_runs import ArrayRuns, frame_events
from ._value_types import ValueTypes

__all__ = ["Schema", "Promotion", "Encoding", "Frames", "ArrayRuns", "frame_events", "ValueTypes"]
