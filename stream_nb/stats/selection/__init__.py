"""Which pair and tuple cells are kept: candidate selection by G-tests on the counts."""

from ._candidates import (Candidates, cmi_from_cells, mutual_information_with_class, pair_evidence,
    restore_selection, selected_cells, set_pair_rule, widen_to_either)
from ._informative import prune_pairs
from ._pair_tests import pair_tests
from ._tuple_candidates import (TupleCandidates, add_selected_tuples, choose_tuples, restore_tuple_selection, revise_tuples,
    selected_tuple_cells, widen_tuples_to_either)
from ._revision import revise_pairs, revision_due
from ._significance import chi2_logsf, chi2_sf

__all__ = ["Candidates", "cmi_from_cells", "mutual_information_with_class", "pair_evidence", "pair_tests", "prune_pairs",
    "restore_selection", "selected_cells", "set_pair_rule", "widen_to_either", "TupleCandidates",
    "add_selected_tuples", "choose_tuples", "restore_tuple_selection", "revise_tuples", "selected_tuple_cells", "widen_tuples_to_either",
    "revise_pairs", "revision_due",
    "chi2_logsf", "chi2_sf"]
