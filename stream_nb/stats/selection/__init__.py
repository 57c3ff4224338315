"""Which pair and tuple cells are kept: candidate selection by G-tests on the counts."""

from ._candidates import Candidates, SelectedTable, apply_selection, cmi_from_cells, mutual_information_with_class, narrow_to_both, prune_pairs, restore_selection, selected_cells, set_pair_rule
from ._tuple_candidates import CANDIDATES_PER_K, TupleCandidates, TupleSelectedTable, choose_tuples, prune_tuples, restore_tuple_selection, selected_tuple_cells

__all__ = [
    "Candidates",
    "SelectedTable",
    "apply_selection",
    "cmi_from_cells",
    "mutual_information_with_class",
    "narrow_to_both",
    "prune_pairs",
    "restore_selection",
    "selected_cells",
    "set_pair_rule",
    "CANDIDATES_PER_K",
    "TupleCandidates",
    "TupleSelectedTable",
    "choose_tuples",
    "prune_tuples",
    "restore_tuple_selection",
    "selected_tuple_cells",
]
