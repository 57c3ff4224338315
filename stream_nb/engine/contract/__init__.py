"""What crosses the engine's edge: events in, records out, dead-letter reasons, the connectors' protocols.

* ``_events`` -- the event contract: decoding and validating one raw event;
* ``_records`` -- the input :class:`Record`, and the output and dead-letter records the engine sends;
* ``_reasons`` -- the registry of dead-letter reason codes;
* ``_protocols`` -- :class:`Source`, :class:`Sink`, the optional capabilities a
  connector may offer (checked with ``isinstance``), :class:`Checkpointing`, and
  the shape of a connector module.

Every other part of the engine (the loop, the join, the checkpointers, the
group model) speaks in these terms; this package imports none of them.
"""

from __future__ import annotations

from ._events import BOM, Event, EventDecoder, json_objects, oversize_error
from ._events import DEFAULT_CONFIG as EVENT_DEFAULTS
from ._protocols import (
    Checkpointing,
    ConnectorModule,
    CountsBlankLines,
    CountsInFlight,
    HandlesRevocation,
    JointConnectorModule,
    ModelChannel,
    NamedInput,
    Pausable,
    RebalanceCallback,
    Rebalancing,
    Repositionable,
    ReportsCommitted,
    ReportsLag,
    ResumePolicy,
    ResumesByPolicy,
    RevocationHandler,
    SendsInTransaction,
    SendsMany,
    SharesLearning,
    SharesQueue,
    Sink,
    Source,
    TracksFiles,
    Transactional,
    TwoPhaseSink,
)
from ._reasons import DEAD_LETTER_REASONS, describe_reasons
from ._records import (OUTPUT_DEFAULTS, DeadLetterRecord, OutputRecord, PositionColumns, Record, RecordColumns,
                       ShownProba, dead_letter_record,
                       label_key, make_records, output_bytes, output_record, outputs_bytes, shown_proba)

__all__ = [
    "BOM",
    "DEAD_LETTER_REASONS",
    "EVENT_DEFAULTS",
    "OUTPUT_DEFAULTS",
    "Checkpointing",
    "ConnectorModule",
    "CountsBlankLines",
    "CountsInFlight",
    "DeadLetterRecord",
    "Event",
    "EventDecoder",
    "HandlesRevocation",
    "JointConnectorModule",
    "ModelChannel",
    "NamedInput",
    "OutputRecord",
    "Pausable",
    "PositionColumns",
    "RebalanceCallback",
    "Rebalancing",
    "Record",
    "RecordColumns",
    "Repositionable",
    "ReportsCommitted",
    "ReportsLag",
    "ResumePolicy",
    "ResumesByPolicy",
    "RevocationHandler",
    "SendsInTransaction",
    "SendsMany",
    "SharesLearning",
    "SharesQueue",
    "ShownProba",
    "Sink",
    "Source",
    "TracksFiles",
    "Transactional",
    "TwoPhaseSink",
    "dead_letter_record",
    "describe_reasons",
    "json_objects",
    "label_key",
    "make_records",
    "output_bytes",
    "output_record",
    "outputs_bytes",
    "oversize_error",
    "shown_proba",
]
