"""The count tables' building blocks: sparse tables, pair blocks, Gaussian moments, work in bounded chunks,
and the part that holds a store's count tables (:class:`CountTables`)."""

from ._pair_blocks import PairBlocks, PairFeat
from ._sparse import FilteredTable, SparseTable, add_pair_rows, cells_of, chunks_of, sparse_add, sparse_of
from ._working import row_chunks
from ._gaussian import GaussianMoments, gaussian_loglik, moments_rest, variance_floor
from ._counts import BASE_TABLES, COUNT_TABLES, CountTables, scatter_add, selected_room

__all__ = ["FilteredTable", "PairBlocks", "PairFeat", "SparseTable", "add_pair_rows", "cells_of", "chunks_of", "sparse_add", "sparse_of", "row_chunks",
    "GaussianMoments", "gaussian_loglik", "moments_rest", "variance_floor", "BASE_TABLES", "COUNT_TABLES", "CountTables", "scatter_add", "selected_room"]
