"""Which pair and tuple cells are kept: candidate selection by G-tests on the counts."""

from ._candidates import Candidates, SelectedTable, apply_selection, cmi_from_cells, edge_costs, edge_scores, edge_supported, mirror_selection, mutual_information_with_class, padded, pair_evidence, parent_scores, prune_pairs, restore_selection, selected_cells, set_pair_rule, widen_to_either
from ._tuple_candidates import CANDIDATES_PER_K, TupleCandidates, TupleSelectedTable, choose_tuples, prune_tuples, restore_tuple_selection, selected_tuple_cells
from ._revision import REVISE_EVERY, SCREEN, TRIAL_EVENTS, events_learned, revise_pairs, revision_due
from ._significance import chi2_logsf, chi2_sf

__all__ = [
    "Candidates",
    "SelectedTable",
    "apply_selection",
    "cmi_from_cells",
    "edge_costs",
    "edge_scores",
    "edge_supported",
    "mirror_selection",
    "mutual_information_with_class",
    "padded",
    "pair_evidence",
    "parent_scores",
    "prune_pairs",
    "restore_selection",
    "selected_cells",
    "set_pair_rule",
    "widen_to_either",
    "CANDIDATES_PER_K",
    "TupleCandidates",
    "TupleSelectedTable",
    "choose_tuples",
    "prune_tuples",
    "restore_tuple_selection",
    "selected_tuple_cells",
    "REVISE_EVERY",
    "SCREEN",
    "TRIAL_EVENTS",
    "events_learned",
    "revise_pairs",
    "revision_due",
    "chi2_logsf",
    "chi2_sf",
]
