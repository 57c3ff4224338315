"""Captures of the counts and their differences (forgetting); journals of what events added (unlearning)."""

from ._forgetting import (capture, capture_difference, count_difference, subtract_counts, replace_counts,
    scale_counts, capture_nbytes)
from ._journal import JournalReader, JournalWriter
from ._promoted import follow_promotions, follow_waiting

__all__ = ["capture", "capture_difference", "count_difference", "subtract_counts", "replace_counts",
    "scale_counts", "capture_nbytes", "JournalReader", "JournalWriter", "follow_promotions", "follow_waiting"]
