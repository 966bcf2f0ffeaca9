"""An in-process snapshot of one namespace's thread graph, so a recall does not re-read it.

The snapshot holds thread ids, sessions, unit ids, heads, the head matrix and the adjacency
lists, in the namespace's context (``Env.ns``, see ``of``). It is kept current by the rules of
``strategies/nscache.py``:

- curation in this process patches in the session it wrote (``note_session``), so the first
  recall after a ``remember`` does not re-read the graph (~2.4 s at 100k units);
- forget and consolidate call ``of(env.ns).invalidate()``;
- another process's writes move the row counts of the thread and edge tables, re-counted at most
  every ``RECHECK_S`` seconds (counting costs ~15 ms, so it is not done on every recall). An
  equal-count rewrite by another process is only seen after a restart.

Memory: about 1.6 kB per thread (384 float32 at the packaged model's size, + metadata), i.e.
~270 MB at a million units
(~170k threads).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ...storage.budget import ENTRY_BYTES, sample_bytes
from ..nscache import NamespaceCache
from . import store
from .store import Edge, Thread
from ...storage.rows import Source

if TYPE_CHECKING:
    from ..space_api import StrategySpace

# source rows + vectors kept (about 2 kB each: ~100 MB at most) while the sources' copy is not
# held (past ``Store.source_copy_max_rows``); with it, ``unit_rows`` reads the copy instead
UNIT_CACHE = 50_000
RECHECK_S = 2.0   # re-count the tables at most this often (another process may have written)


@dataclass
class Snapshot:
    counts: tuple
    gen: int
    checked: float = 0.0
    ids: dict[str, list[str]] = field(default_factory=dict)          # scheme -> thread ids
    mats: dict[str, np.ndarray] = field(default_factory=dict)        # scheme -> heads (J x d)
    threads: dict[str, Thread] = field(default_factory=dict)         # id -> row (no vector)
    adj: dict[str, dict[str, list]] = field(default_factory=dict)    # scheme -> id -> [(k, w, etype)]
    unit_thread: dict[str, dict[str, str]] = field(default_factory=dict)  # scheme -> source -> thread
    units: "OrderedDict[str, tuple]" = field(default_factory=OrderedDict)  # source -> (row, vec)
    units_lock: threading.Lock = field(default_factory=threading.Lock)    # guards ``units``
    _pos: dict[str, dict[str, int]] = field(default_factory=dict)   # scheme -> id -> row of mats

    @property
    def nbytes(self) -> int:
        """What the snapshot holds, estimated for the RAM budget (``strategies/nscache.py``):
        the head matrices, the thread rows, one ``ENTRY_BYTES`` per adjacency, owner and
        position entry, and the unit rows and vectors kept."""
        entries = sum(len(a) + sum(len(nb) for nb in a.values()) for a in self.adj.values())
        entries += sum(len(o) for o in self.unit_thread.values())
        entries += sum(len(i) for i in self.ids.values())
        units = list(self.units.values())
        return (sum(m.nbytes for m in self.mats.values()) + store.thread_bytes(list(self.threads.values()))
                + ENTRY_BYTES * entries + sample_bytes([r for r, _ in units])
                + sum(v.nbytes for _, v in units[:1]) * len(units))

    def position(self, scheme: str) -> dict[str, int]:
        """Each thread id's row in ``ids[scheme]`` / ``mats[scheme]``, made once per snapshot
        (a snapshot is replaced, never changed, so it cannot go stale; two recalls making it at
        once make the same map)."""
        pos = self._pos.get(scheme)
        if pos is None:
            pos = self._pos[scheme] = {t: n for n, t in enumerate(self.ids.get(scheme, ()))}
        return pos

    def unit_rows(self, space: StrategySpace,
                  ids: list[str]) -> tuple[dict[str, Source], dict[str, np.ndarray]]:
        """Source rows and vectors of ``ids``: from the sources' in-process copy while it is
        held (it answers as fast, and a unit kept here too was a second copy of its vector: at
        20,000 turns 120 recalls kept 17,258 units, 25 MB of vectors), else through a bounded
        LRU (sources never change; a forget changes the thread table, which replaces the whole
        snapshot)."""
        if space.sources.copied():
            return {r.id: r for r in space.sources.get(ids)}, space.sources.vectors(ids)
        miss = [i for i in ids if i not in self.units]
        if miss:
            rows = {r.id: r for r in space.sources.get(miss)}
            vecs = space.sources.vectors(miss)
            with self.units_lock:
                for i in miss:
                    if i in rows and i in vecs:
                        self.units[i] = (rows[i], vecs[i])
                while len(self.units) > UNIT_CACHE:
                    self.units.popitem(last=False)
        got = {i: self.units[i] for i in ids if i in self.units}
        return {i: r for i, (r, _) in got.items()}, {i: v for i, (_, v) in got.items()}


def of(ns) -> NamespaceCache:
    """The namespace's snapshot cache. While this process's curation writes the thread and edge
    tables (``of(ns).writing()``), a recall keeps the cached snapshot instead of re-reading a
    half-written graph; ``note_session`` ends the write."""
    return ns.state("workspace.snapshot", lambda: NamespaceCache(store.counts))


def note_session(cache: NamespaceCache, space: StrategySpace, session_id: str,
                 threads: list[Thread], edges: list[Edge]) -> None:
    """Apply one re-curated session (its old threads and their edges gone, ``threads`` and
    ``edges`` written) to the cached snapshot, if one is cached and current, instead of dropping
    it: re-reading the graph took ~2.4 s at 100k units, paid by the first recall after every
    ``remember``. The snapshot is replaced, not changed in place (a recall may be reading it)."""
    old = cache.current()
    if old is None:
        return
    gone = {t for t, r in old.threads.items() if r.session_id == session_id}
    snap = Snapshot(old.counts, old.gen, units=old.units, units_lock=old.units_lock)
    snap.threads = {t: r for t, r in old.threads.items() if t not in gone}
    adj = dict(old.adj)
    for scheme in set(old.ids) | {r.scheme for r in threads}:
        _rescheme(old, snap, adj, scheme, gone, [r for r in threads if r.scheme == scheme])
    for r in threads:
        snap.threads[r.id] = replace(r, vector=None)
    _add_edges(snap, adj, edges)
    snap.adj = adj
    cache.replace(space, old, snap)


def _rescheme(old: Snapshot, snap: Snapshot, adj: dict, scheme: str, gone: set[str],
              new: list[Thread]) -> None:
    """One scheme of ``snap``: the thread ids, vectors, units' owners and adjacency of ``old``
    without the ``gone`` threads and with the ``new`` ones (a scheme left with no thread keeps
    none of them, and its adjacency stays as ``old`` had it)."""
    ids, mat = old.ids.get(scheme, []), old.mats.get(scheme)
    keep = [i for i, t in enumerate(ids) if t not in gone]
    parts = ([mat[keep]] if mat is not None and keep else []) + \
        [np.asarray(r.vector, dtype=np.float64)[None, :] for r in new]
    if not parts:
        return
    snap.ids[scheme] = [ids[i] for i in keep] + [r.id for r in new]
    snap.mats[scheme] = np.concatenate(parts)
    owner = {u: t for u, t in old.unit_thread.get(scheme, {}).items() if t not in gone}
    owner.update((u, r.id) for r in new for u in r.source_ids)
    snap.unit_thread[scheme] = owner
    a = {t: nb for t, nb in adj.get(scheme, {}).items() if t not in gone}
    touched = {n for t in gone for n, _, _ in adj.get(scheme, {}).get(t, ())}
    for t in touched & set(a):
        a[t] = [x for x in a[t] if x[0] not in gone]
    adj[scheme] = a


def _add_edges(snap: Snapshot, adj: dict, edges: list[Edge]) -> None:
    """The session's new ``edges`` into ``adj``, those between threads ``snap`` holds."""
    for e in {e.id: e for e in edges}.values():   # one row per id, as the upsert stored them
        a = adj.setdefault(e.scheme, {})
        if e.src in snap.threads and e.dst in snap.threads:
            w = float(np.float32(e.weight))   # as the float32 column returns it
            a[e.src] = a.get(e.src, []) + [(e.dst, w, e.etype)]


def snapshot(cache: NamespaceCache, space: StrategySpace) -> Snapshot:
    store.declare(space)
    snap, gen, counts = cache.get(space, RECHECK_S)
    if snap is not None:
        return snap
    snap = Snapshot(counts, gen, time.monotonic())
    # read column-wise (``store.every_thread``): at 100k units, 24k threads and 239k edges as
    # row dicts (the heads as lists of floats) took seconds, at every start and after every
    # other process's curation
    rows, vecs = store.every_thread(space, counts[0])
    for scheme in {r.scheme for r in rows}:
        mine = sorted((n for n, r in enumerate(rows) if r.scheme == scheme),
                      key=lambda n: rows[n].id)
        snap.ids[scheme] = [rows[n].id for n in mine]
        assert vecs is not None
        snap.mats[scheme] = vecs[mine].astype(np.float64)
        snap.unit_thread[scheme] = {s: rows[n].id for n in mine for s in rows[n].source_ids}
        snap.adj[scheme] = {}
    for r in rows:
        snap.threads[r.id] = r
    if counts[1]:
        for scheme, src, dst, w, etype in store.every_edge(space):
            if src in snap.threads and dst in snap.threads:
                snap.adj.setdefault(scheme, {}).setdefault(src, []).append((dst, float(w), etype))
    cache.put(snap)
    return snap
