"""The count tables' room and layout: dense, pair blocks or sparse, under the memory budget.

The count arrays of a :class:`~stream_nb.stats.Stats` are allocated with spare capacity and grow by doubling
as the schema asks for room (:meth:`Layout.reserve`, before it takes a new class, value, feature or Gaussian
slot). The t-way tables of KDB grow exactly, as they are V^t. Past the memory budget the pair tables are held
in pair blocks (:class:`~stream_nb.stats.tables.PairBlocks`) where a model reads them and they fit, else
sparse, and the t-way tables sparse (:mod:`stream_nb.stats.budget._budget`: one rule for both families). A
t-way table that would pass an explicit ``max_table_cells`` raises :class:`~stream_nb.exceptions.CapacityError`
before anything changes, and so does an event that could take the sparse pair tables past the budget when no
pair or candidate parent is left to drop (:meth:`Layout.check_event`).

:class:`Layout` is the part of the store that decides this; the store holds it (``layout``) and hands itself
to its methods as ``s``. The layout reads the store's public names (its classes, values and features, what
it keeps: ``pairs``, ``tuples``, the observed-only twin), asks the budget (``s.budget``) what fits, beside the
arrays the store says it holds (``s.count_arrays()``), and acts through the count tables' methods
(``s.tables``: ``grow``, ``grow_dense``, ``to_blocks``, ``grow_blocks``, ``to_sparse``) and the selections'
functions (:mod:`stream_nb.stats.selection`: pairs and candidate parents dropped rather than outgrow the budget).
Its own state is whether the model reads pair blocks (:attr:`Layout.blocks_ok`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ...exceptions import CapacityError
from ..selection import prune_pairs, refresh_selection, refresh_tuple_selection, revise_pairs, selected_cells
from ..selection import settle_tuples, tuple_room, tuples_wait
from ..tables import PairBlocks, SparseTable
from ._budget import PAIR_TABLES, TUPLE_TABLES, Budget

__all__ = ["Layout"]

_PAIR_ATTRIBUTES = PAIR_TABLES + tuple("obs_" + name for name in PAIR_TABLES)  # the tables, and their observed-only twins


class Layout:
    """How a store's count tables are held (dense, pair blocks, sparse) and the room they are given; its
    methods take the store (``s``) as an argument (see the module notes).

    Parameters
    ----------
    blocks_ok
        Whether the pair counts may be held in pair blocks when dense tables would pass the budget and the
        blocks do not (a model that reads them asks for them).
    """

    #: The room pair blocks keep to grow, as a share of their cells (:meth:`blocks_spare`): room for the
    #: values of the first events, which bring most of them (the blocks start after a few events, when dense
    #: tables pass the budget). Room never written takes no memory (zeroed pages the system maps as touched).
    BLOCK_SPARE = 2.0

    #: Whether the store has begun to learn (set by :meth:`check_event`, which every event and run learned
    #: asks before anything registers or grows). Until then (a store made, or read from a state) its pair
    #: tables hold exactly their cells: they take no buffer of room (:meth:`room`) and move between layouts
    #: in numpy, not in the compiled passes, so restoring a snapshot reserves no memory beyond its tables and
    #: imports no compiled code. The moves give the same cells either way; a restored store takes its room
    #: with the first table that grows while it learns. (A class default: a store pickled before it was kept
    #: reads False.)
    learning = False

    def __init__(self, blocks_ok: bool = False):
        #: Whether the pair counts may be held in pair blocks (:class:`~stream_nb.stats.tables.PairBlocks`) when
        #: dense tables would pass the budget and the blocks do not: set by a model that reads them (TAN; KDB with
        #: k >= 2, whose structure reads the pairs and whose scores read the (k+1)-way tables).
        self.blocks_ok = bool(blocks_ok)

    def allow_blocks(self, ok: bool) -> None:
        """Say whether the model reads pair blocks (:attr:`blocks_ok`)."""
        self.blocks_ok = bool(ok)

    # ------------------------------------------------------------------ room

    def alloc(self, s, cc: int, cv: int, cf: int, cg: int, need=None) -> None:
        """Give the store's arrays room for ``cc`` classes, ``cv`` values, ``cf`` features and ``cg`` Gaussian
        slots: the base tables and the Gaussian moments, the schema's arrays, then the pair and t-way tables
        (``need``: what the store needs now, when dense pair tables fit only without the spare room)."""
        C, V, F, G = (len(s.classes), len(s.value_keys), len(s.features), s.n_gauss)
        if s.tables.get("class_count") is not None:  # (the store's first allocation: moments of that room already)
            s.moments.resize(cc, cg, C, G)
        s.tables.grow(cc, cv, cf, cg, (C, V, F))
        s.schema.make_room(cv, cf)  # its value_feature and n_values keep the tables' room
        if s.pairs:
            self.alloc_pairs(s, cc, cv, cf, need)
        if s.tuples:
            self.alloc_tuples(s, cc, cv, cf)
        s.epoch += 1

    def alloc_pairs(self, s, cc: int, cv: int, cf: int, need=None) -> None:
        """The pair tables, with the base arrays' spare room: dense while they fit the memory budget,
        pair blocks beyond where a model reads them and they fit (:meth:`take_blocks`), else sparse (see
        ``_budget.py``). Dense tables that fit only without the spare room get
        the classes of ``need`` and a sixteenth more values and features, and grow in :meth:`reserve`."""
        C, V, F = len(s.classes), len(s.value_keys), len(s.features)
        if not s.pairs_sparse and not self.dense_fits(s, PAIR_TABLES, 2, cc, cv, cf):
            nc, nv, nf = need or (C, V, F)
            cc, cv, cf = min(cc, max(nc, 1)), min(cv, nv + 8 + nv // 16), min(cf, nf + 4 + nf // 16)
        if self.take_blocks(s, cc, cv, cf) or self.go_sparse(s, PAIR_TABLES, 2, cc, cv, cf):
            return
        s.tables.grow_dense(PAIR_TABLES, ((cc, cv, cv), (cc, cv, cf)), ((C, V, V), (C, V, F)), self.room(s),
                            self.learning)

    def alloc_tuples(self, s, cc: int, cv: int, cf: int) -> None:
        """The t-way tensors grow as V^t, so they get no spare capacity beyond the base arrays'."""
        t = s.tuples
        old = s.tables.get("tuple_count")
        if old is not None and old.shape[0] >= cc and old.shape[1] >= cv and s.tables.get("tuple_feat").shape[-1] >= cf:
            return
        C, V, F = len(s.classes), len(s.value_keys), len(s.features)
        cc, cv, cf = min(cc, C + 2), min(cv, V + 8), min(cf, F + 4)
        # Spare room only while it costs little: with many dimensions even 8 spare values multiply
        # the table (KDB(k=8) would take 9 GB before its first event). Otherwise no more than asked
        # for, which is at most one class, value and feature beyond those in use.
        if cc * cv**t > max(8 * max(C, 1) * max(V, 1) ** t, 1 << 16):
            cc, cv, cf = min(cc, C + 1), min(cv, V + 1), min(cf, F + 1)
        if self.go_sparse(s, TUPLE_TABLES, t, cc, cv, cf):  # past the memory budget: sparse (see _budget.py)
            return
        s.tables.grow_dense(TUPLE_TABLES, ((cc,) + (cv,) * t, (cc,) + (cv,) * (t - 1) + (cf,)),
                            ((C,) + (V,) * t, (C,) + (V,) * (t - 1) + (F,)))

    def reserve(self, s, c: int = 0, v: int = 0, f: int = 0, g: int = 0) -> None:
        """Make room for ``c`` more classes, ``v`` columns, ``f`` features, ``g`` slots (the schema asks before it
        grows; a state read asks for all of them at once)."""
        cc, cv, cf, cg = s.tables.capacity
        need = (len(s.classes) + c, len(s.value_keys) + v, len(s.features) + f, s.n_gauss + g)
        if need[0] <= cc and need[1] <= cv and need[2] <= cf and need[3] <= cg:
            if s.pairs and not s.pairs_sparse and not s.pairs_blocks and (  # dense pair tables without spare room: grown here
                    need[0] > s.pair_count.shape[0] or need[1] > s.pair_count.shape[1]
                    or need[2] > s.pair_feat.shape[2]):
                self.alloc_pairs(s, cc, cv, cf, need[:3])
            if s.pairs and s.pairs_sparse and (  # sparse tables made from dense ones without spare room
                    need[0] > s.pair_count.shape[0] or need[1] > s.pair_count.shape[1]
                    or need[2] > s.pair_feat.shape[-1]):
                self.go_sparse(s, PAIR_TABLES, 2, *need[:3])
            if s.tuples:
                self.alloc_tuples(s, *need[:3])
            return

        def grow(cap, n):
            while cap < n:
                cap *= 2
            return cap

        self.alloc(s, grow(cc, need[0]), grow(cv, need[1]), grow(cf, need[2]), grow(cg, need[3]), need[:3])

    @staticmethod
    def table_cells(s, extra_values: int = 0, extra_classes: int = 0) -> int:
        """Cells of the store's t-way count table with that many more values and classes (0 without one)."""
        if not s.tuples:
            return 0
        return (len(s.classes) + extra_classes) * (len(s.value_keys) + extra_values) ** s.tuples

    def check_cells(self, s, extra_values: int, extra_classes: int) -> None:
        """CapacityError when that many more values and classes would take the t-way table past the store's
        ``max_table_cells`` (nothing without a bound)."""
        if not s.tuples or s.max_table_cells is None:
            return
        cells = self.table_cells(s, extra_values, extra_classes)
        if cells > s.max_table_cells:
            raise CapacityError(
                f"the {s.tuples}-way count table would need {cells:,} cells "
                f"({len(s.classes) + extra_classes} classes x {len(s.value_keys) + extra_values} values^{s.tuples}), "
                f"more than max_table_cells={s.max_table_cells:,}; lower k or the number of bins (fine_bins with discretiser=mdl), "
                f"or raise max_table_cells"
            )

    # ------------------------------------------------------------------ pair blocks

    def blocks_allowed(self, s) -> bool:
        """Whether the store may hold pair blocks: a model that reads them asked for them, pairs, no
        observed-only twin (EM's expected pairs fill the two orientations of a pair differently,
        :mod:`~stream_nb.stats.tables._pair_blocks`: the first expected counts turn blocks sparse,
        :meth:`blocks_to_sparse`), and one layer of pair counts (a two-layer store's while its fine layer shares
        them: a fine layer of its own turns them sparse first, :mod:`~stream_nb.stats.budget._shared_pairs`).
        Otherwise sparse tables."""
        return self.blocks_ok and s.pairs and not s.keeps_observed and (s.count_layer() is s or s.shared_pairs)

    @staticmethod
    def blocks_fit(s, n_values, n_classes: int) -> bool:
        """Whether pair blocks of features of ``n_values`` values and ``n_classes`` classes keep the store
        within its budget, beside its other arrays."""
        held = Budget.held(s.count_arrays(), PAIR_TABLES + TUPLE_TABLES)
        return s.memory_budget is None or PairBlocks.bytes_for(n_values, n_classes) <= s.memory_budget - held

    def room(self, s) -> int:
        """Cells of the buffer a dense pair table, or the pair blocks, may grow in (in place: a new table would
        fault in every page it writes): the most either takes within the memory budget (0 without one, and
        before the store learns: :attr:`learning`)."""
        return 0 if s.memory_budget is None or not self.learning else int(s.memory_budget) // 8

    def blocks_spare(self, s, n_values, n_classes: int) -> int:
        """Cells of room the pair blocks of features of ``n_values`` values and ``n_classes`` classes may keep
        beyond their layout when they take a new buffer (:meth:`PairBlocks.grow`): a share
        (:attr:`BLOCK_SPARE`) of their cells, within what the budget leaves beside the store's other arrays,
        so that the values that come later move the cells within the buffer."""
        need = PairBlocks.bytes_for(n_values, n_classes)
        want = int(need * self.BLOCK_SPARE) // 8
        if s.memory_budget is None:
            return want
        held = Budget.held(s.count_arrays(), PAIR_TABLES + TUPLE_TABLES)
        return max(0, min(want, (s.memory_budget - held - need) // 8))

    def take_blocks(self, s, cc: int, cv: int, cf: int) -> bool:
        """Hold the pair counts in pair blocks when dense tables with room for ``cc`` classes, ``cv`` values
        and ``cf`` features would pass the budget and blocks of about as many fit (the values spread evenly
        over the features; :meth:`sync_pairs` checks them exactly as they grow), the dense counts moved over;
        True when the pair counts are blocks, or were and are now sparse (past the budget). False: dense
        or sparse tables as before."""
        held = s.tables.get("pair_count")
        if isinstance(held, PairBlocks):
            self.sync_pairs(s)
            return True
        if not self.blocks_allowed(s) or isinstance(held, SparseTable) or self.dense_fits(s, PAIR_TABLES, 2, cc, cv, cf):
            return False
        per = np.full(max(cf, 1), max(cv - 1, 0) // max(cf, 1))
        if not self.blocks_fit(s, per, cc):
            return False
        C, V, F = len(s.classes), len(s.value_keys), len(s.features)
        vf = s.value_feature[:V]
        s.tables.to_blocks(vf, F, C, self.blocks_spare(s, np.bincount(vf[vf >= 0], minlength=F), C), self.room(s),
                           self.learning)
        return True

    def sync_pairs(self, s, within_budget: bool = True) -> None:
        """Grow pair blocks to the columns, features and classes the store has now (before any kernel reads
        or adds to them); pair tables sparse instead when the blocks would pass the budget, unless
        ``within_budget`` is False (a kernel about to read a run whose values are registered already: the
        blocks grow, and turn sparse at the next call that may change the layout). Nothing for other
        layouts."""
        blocks = s.tables.get("pair_count")
        if not isinstance(blocks, PairBlocks):
            return
        C, V, F = len(s.classes), len(s.value_keys), len(s.features)
        if len(blocks.vf) == V and len(blocks.n) == F and blocks.n_classes == C:
            return
        vf = s.value_feature[:V]
        s.epoch += 1
        n = np.bincount(vf[vf >= 0], minlength=F)
        if within_budget and not self.blocks_fit(s, n, C):
            self.go_sparse(s, PAIR_TABLES, 2, *s.tables.capacity[:3])
            return
        s.tables.grow_blocks(vf, F, C, self.blocks_spare(s, n, C), self.room(s))

    def blocks_to_sparse(self, s) -> None:
        """Pair blocks to sparse tables, the same counts (before anything blocks cannot hold: EM's expected
        pairs, a promotion's moved columns). Nothing for other layouts."""
        if s.pairs_blocks:
            s.epoch += 1
            self.go_sparse(s, PAIR_TABLES, 2, *s.tables.capacity[:3])

    # ------------------------------------------------------------------ dense or sparse

    @staticmethod
    def dense_fits(s, family: tuple, t: int, cc: int, cv: int, cf: int) -> bool:
        """Whether dense tables of ``family`` with room for ``cc`` classes, ``cv`` values and ``cf``
        features (and their twin, if EM will want one) keep the store within its budget, beside its
        other arrays (the t-way tables too, when ``family`` is the pairs')."""
        skip = set(family) | (set(TUPLE_TABLES) if family == PAIR_TABLES else set())
        held = Budget.held(s.count_arrays(), skip, s.wants_observed and not s.keeps_observed)
        return s.budget.dense_fits(t, cc, cv, cf, held, 2 if s.wants_observed else 1)

    @staticmethod
    def pair_limit(s) -> int:
        """Bytes the sparse pair tables of the store may take: the budget's sparse limit, halved between the
        two layers of a two-layer store that drops pairs, and again when the t-way tables of candidate
        parents take the other half (_tuple_candidates.py)."""
        return s.budget.pair_limit((s.selection.rule is not None and s.selection_peer is not None) + bool(s.tuple_rule))

    def go_sparse(self, s, family: tuple, t: int, cc: int, cv: int, cf: int) -> bool:
        """One rule for both families of tables: the t-way table ``family[0]`` (C·V^t cells) and its
        twin with a feature last ``family[1]`` (C·V^(t-1)·F) go sparse, both, when dense ones with room
        for ``cc`` classes, ``cv`` values and ``cf`` features would take the store past its budget; from
        then on for good, with the same counts. False, and nothing done, when they stay dense."""
        if not isinstance(s.tables.get(family[0]), (SparseTable, PairBlocks)) and self.dense_fits(
                s, family, t, cc, cv, cf):
            return False
        # capacity grows by doubling with the other arrays' and a sparse table's keys are renumbered
        # (every cell rehashed) when it grows: it is given room for 16 times as many values and
        # features, or 4, while its keys (62 bits) allow
        cc, cv, cf = (max(a, b) for a, b in zip((cc, cv, cf), s.tables.capacity[:3]))
        held = s.tables.get(family[0])
        if isinstance(held, SparseTable) and cc <= held.shape[0] and cv <= held.shape[1] and cf <= held.shape[-1]:
            return True
        for room in (16, 4, 1):
            if (cc * room) * (cv * room) ** t < 1 << 62 and (cc * room) * (cv * room) ** (t - 1) * cf * room < 1 << 62:
                cc, cv, cf = cc * room, cv * room, cf * room
                break
        C, V, F = len(s.classes), len(s.value_keys), len(s.features)
        if (family == PAIR_TABLES and held is not None and not isinstance(held, (SparseTable, PairBlocks))
                and s.selection.rule is not None):
            # dense tables whose cells, sparse, would pass the budget: the pairs are chosen first (as the next
            # event would choose them), so that only the kept cells move over
            cells = sum(int(np.count_nonzero(s.tables.get(p + k)[tuple(slice(0, d) for d in dims)]))
                        for p in s.tables.sets() for k, dims in ((PAIR_TABLES[0], (C, V, V)), (PAIR_TABLES[1], (C, V, F))))
            if 32 * cells > self.pair_limit(s):
                prune_pairs(s, self.pair_limit(s))
        shapes = {family[0]: (cc,) + (cv,) * t, family[1]: (cc,) + (cv,) * (t - 1) + (cf,)}
        used = {family[0]: (C,) + (V,) * t, family[1]: (C,) + (V,) * (t - 1) + (F,)}
        s.tables.to_sparse(family, tuple(shapes.values()), tuple(used.values()),
                           partial(tuples_wait, s) if family == TUPLE_TABLES else None, self.learning)
        if family == TUPLE_TABLES:
            settle_tuples(s)
        return True

    # ------------------------------------------------------------------ the next event's room

    def check_event(self, s, k: int) -> None:
        """Refuse to learn more (CapacityError, before anything changes) when one event of ``k``
        observed values could take the sparse pair tables past ``memory_budget`` (or
        :data:`~stream_nb.stats.budget.SPARSE_FLOOR`, if larger): if all its cells were new, or the tables
        had to grow (double) to hold them. A vectorised run is checked as one event before it is added. The
        store learns from here on (:attr:`learning`)."""
        self.learning = True
        refresh_selection(s)
        if s.memory_budget is None:
            return
        room = partial(self.sparse_room, s)
        self.make_room(room, k)  # a model with a pair rule drops pairs rather than refuse
        if revise_pairs(s, self.pair_limit(s)):  # and revises its choice as the events come (_revision.py)
            self.make_room(room, k)
        refresh_tuple_selection(s)
        self.make_room(partial(tuple_room, s), k)  # KDB drops candidate parents rather than outgrow the budget

    @staticmethod
    def make_room(room, k: int) -> None:
        """Ask ``room(k)`` again until the next event fits: each False answer dropped some of the kept
        pairs or candidates (CapacityError when nothing is left to drop)."""
        fits = room(k)
        while not fits:
            fits = room(k)

    def sparse_room(self, s, k: int) -> bool:
        """:meth:`check_event` once: True when the next event fits, False when pairs were just
        dropped to make room (see :mod:`stream_nb.stats.selection._candidates`); CapacityError when neither."""
        # the pair tables only: KDB's sparse t-way tables are not bounded here (river's checks learn
        # ImageSegments with KDB's defaults, whose 3-way cells alone pass 256 MiB). Dense ones (the usual
        # store) have nothing to check: said without listing the arrays, as every event learned asks
        for name in _PAIR_ATTRIBUTES:
            if isinstance(s.tables.get(name), SparseTable):
                break
        else:
            return True
        sparse = {name: a for name, a in s.count_arrays().items()
                  if isinstance(a, SparseTable) and name.removeprefix("obs_") in PAIR_TABLES}
        limit = self.pair_limit(s)
        one = selected_cells(s, k)  # the distinct cells one event can add to each pair table
        if s.budget.event_fits(sparse, one, k, limit):
            return True
        if prune_pairs(s, limit):
            return False
        raise s.budget.refusal(sparse, one, Budget.held(s.count_arrays(), (), s.wants_observed and not s.keeps_observed))
