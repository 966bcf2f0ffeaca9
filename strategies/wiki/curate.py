"""Wiki curation: a session's new snapshots, appended to the trajectories, pages updated in step.

``curate_session`` is incremental (its cost does not grow with the sessions already curated):

1. Snapshots are made only for the session's messages no snapshot covers yet: all of them the
   first time, the appended ones after a later ``remember`` with the same session id. Existing
   snapshots are immutable and never rebuilt.
2. Those snapshots are appended to the stored trajectories in time order (TrajWiki's
   append-only growth): g against every open trajectory (``tindex.TrajIndex``, kept in memory
   between curations and validated by the wiki's sync token), then edit ops on the winner, whose
   stored state is read. Nothing else is read or rewritten: not the other sessions' snapshots,
   not the trajectories the new snapshots do not join, not the claims they do not revise.
3. Pages: ``wikiupdate.update`` (only the groups those trajectories and claims belong to).

Our choice where this differs from replaying the namespace in time order (what curation did
before): a session that arrives late (older than sessions already curated) is appended after
them, not re-threaded into the past; and messages appended to a session form new snapshots
instead of re-cutting its exchanges. Past assignments are never re-decided by curation.
``consolidate`` (and ``forget``) still replay every snapshot in time order (``replay``).

Writes go snapshots -> claims -> trajectories -> pages -> groups. A crash between them is repaired
by the next curation of the session (still ``queued``): snapshots no trajectory holds are appended
then, and pages whose count of snapshots differs from the trajectories' are rebuilt.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..base import spoken
from ..nscache import NamespaceCache
from . import turnmap
from .claims import build_snapshots, opener_of
from . import store
from .store import (
    Claim,
    Snapshot,
    Trajectory,
    delete_trajectories,
    ensure,
    index_tables,
    load_snapshots,
    order_key,
    put_snapshots,
    put_trajectories,
    snapshot_vectors,
    traj_row,
    trajectories,
)
from .groups import SumCache
from .tindex import TrajIndex
from .trajectories import Builder
from .wikiupdate import index_group, rebuild_all, update

if TYPE_CHECKING:
    from ..space_api import StrategySpace


class IndexCache:
    """One namespace's open trajectories' ``TrajIndex`` and the edit states of the ``KEEP`` most
    recently extended ones, with the sync token of the wiki state they reflect. Taken out while
    a curation runs; put back only when it succeeded."""

    KEEP = 512

    def __init__(self):
        self._hit: tuple | None = None
        self._lock = threading.Lock()

    def take(self, token: str | None) -> tuple[TrajIndex | None, dict]:
        with self._lock:
            hit, self._hit = self._hit, None
        if hit is None or not token or hit[0] != token:
            return None, {}
        return hit[1], hit[2]

    def put(self, token: str | None, index: TrajIndex, trajs: dict, touched=()) -> None:
        if not token:
            return
        keep = {t: T for t, T in trajs.items() if t not in touched}
        keep.update((t, trajs[t]) for t in sorted(touched) if t in trajs)
        keep = {t: T for t, T in list(keep.items())[-self.KEEP:] if not T.closed}
        with self._lock:
            self._hit = (token, index, keep)


@dataclass
class WikiState:
    """What the wiki keeps for one namespace between calls (in its context: ``state_of``)."""

    maps: NamespaceCache = field(default_factory=turnmap.new_cache)   # turnmap.TurnMaps
    index: IndexCache = field(default_factory=IndexCache)
    sums: SumCache = field(default_factory=SumCache)   # small pages' sums this process wrote

    def invalidate(self) -> None:   # a forget elsewhere (NamespaceContext.invalidate)
        self.maps.invalidate()
        self.sums.invalidate()


def state_of(ns) -> WikiState:
    return ns.state("wiki", WikiState)


def slotted_claims(ns, space: StrategySpace) -> turnmap.SlottedClaims:
    """The namespace's claims with a slot, from its turn maps (what ``revisions.changes`` reads;
    ``auto`` asks after its vote, when wiki's recall has usually read the maps already)."""
    return turnmap.SlottedClaims(turnmap.turn_maps(state_of(ns).maps, space))


def new_snapshots(space: StrategySpace, session_id: str, llm=None) -> list[Snapshot]:
    """Snapshots for the session's messages no snapshot covers yet (stored here), plus any of
    its snapshots that no trajectory holds (a crash between the two writes)."""
    rows = spoken(space.sources.by_session(session_id))
    have = store.snapshots(space, eq={"session_id": session_id}, columns=["id", "idx", "source_ids"])
    covered = {i for s in have for i in s.source_ids}
    new = [r for r in rows if r.id not in covered]
    out = []
    if new:
        when = space.sessions.time(session_id) or rows[0].timestamp
        out = build_snapshots(session_id, new, when, space.sources.vectors([r.id for r in new]),
                              llm, opener=opener_of(rows),
                              idx0=max((s.idx for s in have), default=-1) + 1, dim=space.dim)
        put_snapshots(space, out)
    if have:
        placed = {i for t in trajectories(space, contains={"sessions": session_id},
                                          columns=["id", "snapshot_ids"]) for i in t.snapshot_ids}
        lost = [s.id for s in have if s.id not in placed]
        out += load_snapshots(space, lost) if lost else []
    return out


def load_index(space: StrategySpace) -> tuple[TrajIndex, dict, int]:
    """Every open trajectory from its stored state, and the number of snapshots placed."""
    b = Builder(vectors=lambda ids: snapshot_vectors(space, ids))
    b.load_states({r.id: r.state
                   for r in trajectories(space, eq={"status": "open"}, columns=["id", "state"])})
    placed = sum(r.n for r in trajectories(space, columns=["id", "n"]))
    return b.index, b.trajs, placed


def curate_session(space: StrategySpace, st: WikiState, session_id: str, llm=None, m: int = 15) -> dict:
    ensure(space)
    cache = st.index
    snaps = new_snapshots(space, session_id, llm)
    idx = index_group(space)
    sync = idx.sync or {}
    index, trajs = cache.take(sync.get("token"))
    in_step = True
    if index is None:
        index, trajs, placed = load_index(space)
        in_step = placed == sync.get("assigned", 0)
    if not in_step:
        st.sums.invalidate()   # the groups are made again from scratch
    if not snaps:
        token = sync.get("token") if in_step else rebuild_all(space)["token"]
        cache.put(token, index, trajs)
        return {"mode": "append", "snapshots": 0, "pages": "kept" if in_step else "rebuilt"}

    def stored(ids):
        return {r.id: r.state for r in trajectories(space, eq={"id": ids}, columns=["id", "state"])}

    b = Builder(m, index=index, load=stored, vectors=lambda ids: snapshot_vectors(space, ids))
    b.trajs.update(trajs)
    placed = [(s, b.append(s)[0]) for s in sorted(snaps, key=order_key)]
    w = write(space, st, b, full=False)
    turnmap.note_append(st.maps, space, snaps, w.rows)
    if in_step:
        token = update(space, placed, w.fresh, w.changed, idx, st.sums)
    else:
        token = rebuild_all(space)["token"]
    cache.put(token, index, b.trajs, b.touched)
    index_tables(space)
    return {"mode": "append", "snapshots": len(snaps), "touched": len(b.touched),
            "pages": "updated" if in_step else "rebuilt"}


def replay(space: StrategySpace, st: WikiState, m: int) -> dict:
    """Rebuild every trajectory by appending all snapshots in time order (forget, consolidate)."""
    snaps = sorted(load_snapshots(space), key=order_key)
    st.sums.invalidate()   # the pages are rebuilt from the replayed trajectories
    b = Builder(m)
    for s in snaps:
        b.append(s)
    write(space, st, b, full=True)
    return {"mode": "replay", "snapshots": len(snaps), "trajectories": len(b.trajs)}


@dataclass(frozen=True, slots=True)
class Written:
    """What ``write`` stored: the new claims, the older ones whose status changed, and the
    rows of the trajectories touched."""

    fresh: list[Claim]
    changed: list[Claim]
    rows: list[Trajectory]


def write(space: StrategySpace, st: WikiState, b: Builder, full: bool) -> Written:
    touched = [b.trajs[t] for t in sorted(b.touched)]
    snap_ids = sorted({x.id for T in touched for x in T.snapshots})
    by_id = {s.id: s for s in store.snapshots(space, eq={"id": snap_ids})}
    rows = [traj_row(T, [by_id[x.id] for x in T.snapshots if x.id in by_id])
            for T in touched]
    claims = list(b.claims.values())
    changed = []
    if b.status:
        old = {r.id: r for r in store.claims(space, eq={"id": sorted(b.status)})}
        for cid, (status, by) in b.status.items():
            if cid in old:
                changed.append(replace(old[cid], status=status, by=by))
    if full:
        st.maps.invalidate()
        keep = {T.id for T in b.trajs.values()}
        stale = [r.id for r in trajectories(space, columns=["id"]) if r.id not in keep]
        if stale:
            delete_trajectories(space, stale)
        stale = [c.id for c in store.claims(space, columns=["id"]) if c.id not in b.claims]
        if stale:
            store.delete_claims(space, stale)
    store.put_claims(space, claims + changed)
    put_trajectories(space, rows)
    if full:
        st.maps.invalidate()   # again: a recall in between may have read half a replay
    return Written(claims, changed, rows)


def forget_sources(space: StrategySpace, st: WikiState, source_ids: set[str], m: int = 15) -> int:
    """Delete the snapshots and claims citing ``source_ids``; replay the rest; pages follow."""
    ensure(space)
    snaps = [s for s in store.snapshots(space, columns=["id", "source_ids"])
             if source_ids & set(s.source_ids)]
    gone = {s.id for s in snaps}
    claims = [c.id for c in store.claims(space, columns=["id", "source_id", "snapshot_id"])
              if c.source_id in source_ids or c.snapshot_id in gone]
    if not snaps and not claims:
        return 0
    store.delete_snapshots(space, sorted(gone))
    store.delete_claims(space, claims)
    st.maps.invalidate()
    replay(space, st, m)
    return len(snaps) + len(claims)
