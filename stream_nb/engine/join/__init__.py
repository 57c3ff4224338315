"""The delayed-label join: events held for labels that come later, and the store that holds them.

* ``_join`` -- :class:`Joiner`: joins feedback records to the events they label;
* ``_join_holds``, ``_join_reads``, ``_join_handover`` -- its three halves: unlabeled events held,
  a read of feedback joined to them, and what it holds released to or adopted from another member;
* ``_label_reads`` -- feedback records parsed (ids, labels, early-label notes, delays);
* ``_join_state`` -- what the join holds, in a snapshot and back (and rewound on an abort);
* ``_pending``, ``_pending_cells`` -- :class:`PendingStore`, the held events and labels in arrays.
"""

from __future__ import annotations

from ._join import Joiner
from ._join_state import join_state, join_summary, load_join_state, rewind_join
from ._label_reads import parse_label_value, parse_on_expire

__all__ = ["Joiner", "join_state", "join_summary", "load_join_state", "parse_label_value", "parse_on_expire",
           "rewind_join"]
