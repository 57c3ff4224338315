"""A consumer group's members: one model across the group, and held events handed over with their partitions.

* ``_group`` -- :class:`GroupCheckpointer` (``--model-topic``): per-partition states published and applied;
* ``_group_records`` -- the model topic's records: :class:`StateLog`, :func:`merge_states`, :func:`state_order`,
  :func:`state_records`;
* ``_handoff`` -- :class:`PartitionHandoff` (``--feedback-topic`` without ``--model-topic``): on a rebalance,
  what the join holds for a partition goes to its new owner over the pending topic (with ``--model-topic`` it
  goes in the partition's state).
"""

from __future__ import annotations

from ._group import GroupCheckpointer
from ._group_records import StateLog, merge_states, state_order, state_records
from ._handoff import PartitionHandoff

__all__ = ["GroupCheckpointer", "PartitionHandoff", "StateLog", "merge_states", "state_order", "state_records"]
