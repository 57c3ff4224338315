"""Which pair and tuple cells are kept: candidate selection by G-tests on the counts."""

from ._candidates import (cmi_from_cells, edge_supported, mutual_information_with_class, pair_evidence, refresh_selection,
    restore_selection, selected_cells, set_pair_rule, widen_to_either)
from ._informative import prune_pairs
from ._pair_selection import PAIR_RULES, PairSelection
from ._pair_tests import pair_tests
from ._tuple_candidates import (add_selected_tuples, choose_tuples, refresh_tuple_selection, restore_tuple_selection,
    revise_tuples, selected_tuple_cells, settle_tuples, tuple_room, tuples_wait, widen_tuples_to_either)
from ._tuple_selection import TupleSelection
from ._revision import revise_pairs, revision_due
from ._significance import chi2_logsf, chi2_sf

__all__ = ["PAIR_RULES", "PairSelection", "cmi_from_cells", "edge_supported", "mutual_information_with_class", "pair_evidence", "pair_tests", "prune_pairs",
    "refresh_selection", "restore_selection", "selected_cells", "set_pair_rule", "widen_to_either", "TupleSelection", "refresh_tuple_selection", "settle_tuples", "tuple_room", "tuples_wait",
    "add_selected_tuples", "choose_tuples", "restore_tuple_selection", "revise_tuples", "selected_tuple_cells", "widen_tuples_to_either",
    "revise_pairs", "revision_due",
    "chi2_logsf", "chi2_sf"]
