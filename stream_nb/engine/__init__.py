"""The streaming engine: decode events, predict then learn, send, checkpoint.

Where things are, one folder per concept:

* ``contract/`` -- what crosses the engine's edge: the event contract
  (:class:`EventDecoder`), the input :class:`Record` and the output and
  dead-letter records, the dead-letter reason codes, and the protocols a
  connector implements (:class:`Source`, :class:`Sink`, the optional
  capabilities checked with ``isinstance``, :class:`Checkpointing`);
* ``loop/`` -- :class:`Engine`, the run loop, and its settings
  (:data:`DEFAULT_CONFIG`); back-pressure, prequential metrics, reporting hooks;
* ``checkpoint/`` -- the daemon's snapshot checkpointers (at least once and
  exactly once), which drive the engine through its public methods and leave
  the files to :mod:`stream_nb.snapshots`;
* ``join/`` -- the delayed-label join (:class:`Joiner`) and its pending store;
* ``group/`` -- one model across a consumer group (``--model-topic``), and the
  join's held events handed over with their partitions on a rebalance.

The engine does no I/O of its own: sources and sinks (``connectors``) read and
write, :class:`~stream_nb.snapshots.SnapshotStore` does the snapshot files.
Public names only below; the modules behind them are private, and each folder
offers the rest of the engine only the names of its ``__all__``.
"""

from __future__ import annotations

from ..stats import validate_label  # the label rule lives with the count store
from .checkpoint import COMMIT_METADATA_PREFIX, Checkpointer, ExactlyOnceCheckpointer
from .contract import (
    BOM,
    DEAD_LETTER_REASONS,
    Checkpointing,
    ConnectorModule,
    CountsBlankLines,
    CountsInFlight,
    DeadLetterRecord,
    Event,
    EventDecoder,
    HandlesRevocation,
    JointConnectorModule,
    ModelChannel,
    NamedInput,
    OutputRecord,
    Pausable,
    PositionColumns,
    RebalanceCallback,
    Rebalancing,
    Record,
    RecordColumns,
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
    describe_reasons,
    label_key,
    make_records,
    output_bytes,
    output_record,
    outputs_bytes,
)
from .group import GroupCheckpointer, PartitionHandoff, StateLog, merge_states, state_order, state_records
from .join import Joiner, join_state, join_summary, load_join_state, parse_label_value, parse_on_expire
from .loop import DEFAULT_CONFIG, Engine, FlowControl, Observer, PrequentialMetrics, check_config

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
    "PositionColumns",
    "PrequentialMetrics",
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
    "state_order",
    "state_records",
    "validate_label",
]
