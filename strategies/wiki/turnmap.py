"""Which trajectory and snapshot each source turn belongs to, and the inventory claims by
subject: the maps ``scoring.score_turns`` needs on every recall, kept in memory per namespace.

Reading them from the wiki tables on every recall meant scanning every trajectory and every
snapshot (with its claims) of the namespace: ~1 s per recall at 100k turns. So they are read once
and then kept current:

* curation in this process (the server's own worker) appends a session's new snapshots and
  rewrites the trajectories they joined; ``note_append`` applies exactly those rows to the maps,
  so a recall right after a ``remember`` does not pay a full re-read (and while it writes,
  ``writing`` keeps recalls on the maps they have);
* the other writes of this process to those two tables (forget, and the replay that forget
  and consolidate run) call the cache's ``invalidate``; the next recall reads afresh;
* another process writing the same store (a second server, the ``consolidate`` CLI) changes the
  row counts of the two tables, which are re-checked at most every ``RECHECK_S`` seconds (the same
  trade-off as the workspace snapshot: an equal-count rewrite by another process is only seen after
  a restart). Table versions are not used as the key: background compaction bumps them without
  changing a row, and dropped the maps after every compaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...storage.budget import ENTRY_BYTES, SAMPLE, sample_bytes
from ..nscache import NamespaceCache
from . import store
from .revisions import COLS
from .store import SNAP, Claim, Snapshot, Trajectory, count_trajectories, trajectories

if TYPE_CHECKING:
    from ..space_api import StrategySpace

RECHECK_S = 2.0


@dataclass
class TurnMaps:
    t_of: dict[str, str] = field(default_factory=dict)            # source id -> trajectory id
    s_of: dict[str, str] = field(default_factory=dict)            # source id -> snapshot id
    members: dict[str, list[str]] = field(default_factory=dict)   # trajectory id -> source ids
    inv: dict[str, list[tuple[str, frozenset]]] = field(default_factory=dict)
    # ^ claim subject (lower case) -> [(source id, the claim's facets)]
    snaps: set[str] = field(default_factory=set)                  # snapshot ids read
    slotted: dict[str, list[Claim]] = field(default_factory=dict)
    # ^ source id -> its claims that have a slot, as ``by_slot`` below
    by_slot: dict[str, list[Claim]] = field(default_factory=dict)    # slot -> its claims
    counts: tuple = ()
    gen: int = 0
    checked: float = 0.0

    @property
    def nbytes(self) -> int:
        """What the maps hold, estimated for the RAM budget (``strategies/nscache.py``): one
        ``ENTRY_BYTES`` per map entry and listed id, and the slotted claims' rows."""
        entries = len(self.t_of) + len(self.s_of) + len(self.snaps) + len(self.members)
        entries += sum(len(v) for v in self.members.values())
        entries += len(self.inv) + sum(len(v) for v in self.inv.values())
        claims = [c for v in self.by_slot.values() for c in v]
        return ENTRY_BYTES * (entries + len(self.slotted) + len(self.by_slot)) + \
            _claim_bytes(claims)


def _claim_bytes(claims: list[Claim]) -> int:
    """What ``claims`` take, estimated as ``budget.sample_bytes`` does for the fields
    ``revisions`` reads of them (``COLS``) as dicts."""
    if not claims:
        return 0
    sample = claims[::max(1, len(claims) // SAMPLE)][:SAMPLE]
    return sample_bytes([{k: getattr(c, k) for k in COLS} for c in sample]) * \
        len(claims) // len(sample)


def _counts(space: StrategySpace) -> tuple:
    return (count_trajectories(space), space.derived.count_rows(SNAP))


def new_cache() -> NamespaceCache:
    """The maps' cache of one namespace (kept in its context: ``curate.state_of``). While this
    process's curation appends (``writing()``), recalls keep the maps they have."""
    return NamespaceCache(_counts)


def turn_maps(cache: NamespaceCache, space: StrategySpace) -> TurnMaps:
    m, gen, counts = cache.get(space, RECHECK_S)
    if m is not None:
        return m
    m = TurnMaps(counts=counts, gen=gen, checked=time.monotonic())
    for t in trajectories(space, columns=["id", "source_ids"]):
        _set_members(m, t.id, list(t.source_ids))
    for s in store.snapshots(space, columns=["id", "source_ids", "claims"]):
        _add_snapshot(m, s)
    cache.put(m)
    return m


def note_append(cache: NamespaceCache, space: StrategySpace, snapshots: list[Snapshot],
                traj_rows: list[Trajectory]) -> None:
    """Apply what an append-mode curation just wrote (new snapshots, the rewritten rows of the
    trajectories they joined) to the cached maps, if any are cached and current. The maps are
    replaced, not changed in place, so a recall reading the old ones is not disturbed."""
    old = cache.current()
    if old is None:
        return
    m = TurnMaps(t_of=dict(old.t_of), s_of=dict(old.s_of), members=dict(old.members),
                 inv={s: list(v) for s, v in old.inv.items()}, snaps=set(old.snaps), gen=old.gen,
                 slotted={i: list(v) for i, v in old.slotted.items()},
                 by_slot={k: list(v) for k, v in old.by_slot.items()})
    for t in traj_rows:
        _set_members(m, t.id, list(t.source_ids))
    for s in snapshots:
        if s.id not in m.snaps:   # a re-placed snapshot is already in the maps
            _add_snapshot(m, s)
    cache.replace(space, old, m)


def _set_members(m: TurnMaps, tid: str, ids: list[str]) -> None:
    for i in m.members.get(tid, ()):
        if m.t_of.get(i) == tid:
            del m.t_of[i]
    m.members[tid] = ids
    for i in ids:
        m.t_of[i] = tid


def _add_snapshot(m: TurnMaps, s: Snapshot) -> None:
    m.snaps.add(s.id)
    for i in s.source_ids:
        m.s_of[i] = s.id
    for c in s.claims:
        m.inv.setdefault(c.subject.lower(), []).append((c.source_id, frozenset(c.facets)))
        if c.slot:   # what ``revisions.changes`` reads: a snapshot's claims are the rows
            m.slotted.setdefault(c.source_id, []).append(c)   # curation writes to wiki_claims
            m.by_slot.setdefault(c.slot, []).append(c)


class SlottedClaims:
    """``revisions.changes``' two look-ups (claims with a slot, by turn and by slot) answered
    from the maps instead of two queries of ``wiki_claims`` (the table's copy serves only up to
    10,000 rows; past it LanceDB took ~20 ms a recall at 30k turns, in wiki and again in auto).
    The fields read (id, turn, slot, sentence, time) never change once a claim is written, and
    the snapshots hold the same claims as the table (``tests/strategies/wiki``)."""

    def __init__(self, m: TurnMaps):
        self._m = m

    def by_source(self, ids: list[str]) -> list[Claim]:
        return [c for i in ids for c in self._m.slotted.get(i, ())]

    def by_slot(self, slots: list[str]) -> list[Claim]:
        return [c for k in slots for c in self._m.by_slot.get(k, ())]
