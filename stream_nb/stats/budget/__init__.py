"""The memory budget: dense tables while they fit, sparse beyond; the part that holds a two-layer store's
pair tables once while its layers are one (:class:`SharedPairs`); the part that decides the tables' room and layout
(:class:`Layout`)."""

from ._budget import Budget, DEFAULT_MEMORY_BUDGET, PAIR_TABLES, TUPLE_TABLES, scatter_add
from ._shared_pairs import SharedPairs
from ._layout import Layout

__all__ = ["Budget", "DEFAULT_MEMORY_BUDGET", "PAIR_TABLES", "TUPLE_TABLES", "scatter_add", "SharedPairs", "Layout"]
