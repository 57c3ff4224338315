"""The streaming engine: decode events, predict then learn, send, checkpoint.

Where things are:

* ``_engine`` -- :class:`Engine`, the run loop, and its settings (:data:`DEFAULT_CONFIG`);
* ``_events`` -- the event contract: decoding and validating one raw event;
* ``_records`` -- the input :class:`Record`, and the output and dead-letter records the engine sends;
* ``_protocols`` -- :class:`Source`, :class:`Sink`, the optional capabilities a
  connector may offer (checked with ``isinstance``), :class:`Checkpointing`, and
  the shape of a connector module;
* ``_checkpoint``, ``_exactly_once`` -- the daemon's snapshot checkpointers,
  which drive the engine through its public methods and leave the files to
  :mod:`stream_nb.snapshots`;
* ``_group``, ``_group_records`` -- one model across a consumer group
  (``--model-topic``): per-partition states published and applied;
* ``_flow`` -- back-pressure; ``_metrics`` -- prequential metrics; ``_observer`` -- reporting hooks.

The engine does no I/O of its own: sources and sinks (``connectors``) read and
write, :class:`~stream_nb.snapshots.SnapshotStore` does the snapshot files.
Public names only below; the modules behind them are private.
"""

from __future__ import annotations

from ..stats import validate_label  # the label rule lives with the count store
from ._checkpoint import COMMIT_METADATA_PREFIX, Checkpointer
from ._engine import DEFAULT_CONFIG, Engine, check_config
from ._events import BOM, Event, EventDecoder
from ._exactly_once import ExactlyOnceCheckpointer
from ._flow import FlowControl
from ._handoff import PartitionHandoff
from ._join import Joiner
from ._label_reads import parse_label_value, parse_on_expire
from ._join_state import join_state, join_summary, load_join_state
from ._group import GroupCheckpointer
from ._group_records import StateLog, merge_states, state_records
from ._metrics import PrequentialMetrics
from ._observer import Observer
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
from ._records import (DeadLetterRecord, OutputRecord, Record, label_key, make_records, output_bytes, output_record,
                       outputs_bytes)

__all__ = [
    "BOM",
    "COMMIT_METADATA_PREFIX",
    "DEAD_LETTER_REASONS",
    "DEFAULT_CONFIG",
    "Checkpointer",
    "Joiner",
    "PartitionHandoff",
    "join_state",
    "join_summary",
    "load_join_state",
    "parse_label_value",
    "parse_on_expire",
    "Checkpointing",
    "ConnectorModule",
    "CountsBlankLines",
    "CountsInFlight",
    "DeadLetterRecord",
    "Engine",
    "Event",
    "EventDecoder",
    "ExactlyOnceCheckpointer",
    "FlowControl",
    "HandlesRevocation",
    "GroupCheckpointer",
    "JointConnectorModule",
    "ModelChannel",
    "NamedInput",
    "Observer",
    "OutputRecord",
    "Pausable",
    "PrequentialMetrics",
    "RebalanceCallback",
    "Rebalancing",
    "Record",
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
    "Sink",
    "Source",
    "StateLog",
    "TracksFiles",
    "Transactional",
    "TwoPhaseSink",
    "check_config",
    "describe_reasons",
    "label_key",
    "make_records",
    "output_bytes",
    "output_record",
    "outputs_bytes",
    "merge_states",
    "state_records",
    "validate_label",
]
