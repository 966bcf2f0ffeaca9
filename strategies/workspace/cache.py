"""An in-process snapshot of one namespace's thread graph, so a recall does not re-read it.

The snapshot (thread ids, sessions, unit ids, heads, the head matrix and the adjacency lists) is
keyed by store and namespace and trusted while the thread and edge tables still have the row
counts it was read at and no hook of this process bumped its generation (``invalidate`` is called
by forget and consolidate; curation in this process applies the session it wrote with
``note_session`` instead, so the first recall after a ``remember`` does not re-read the graph). Another process writing the same store changes the row counts
(every curation deletes and re-adds rows), so a stale snapshot is caught within ``RECHECK_S``
seconds in all but the rare equal-count case (counting costs ~15 ms, so it is not done on every
recall); this process's own writes invalidate at once; a restart always reads afresh. Memory: about 1.6 kB per thread
(384 float32 + metadata), i.e. ~270 MB at a million units (~170k threads).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .graph import EDGES, THREADS, declare

UNIT_CACHE = 50_000   # source rows + vectors kept (about 2 kB each: ~100 MB at most)
RECHECK_S = 2.0   # re-count the tables at most this often (another process may have written)
_lock = threading.Lock()
_snaps: dict[tuple, "Snapshot"] = {}
_gen: dict[tuple, int] = {}
_writing: dict[tuple, int] = {}


@dataclass
class Snapshot:
    counts: tuple
    gen: int
    checked: float = 0.0
    ids: dict[str, list[str]] = field(default_factory=dict)          # scheme -> thread ids
    mats: dict[str, np.ndarray] = field(default_factory=dict)        # scheme -> heads (J x d)
    threads: dict[str, dict] = field(default_factory=dict)           # id -> row (no vector)
    adj: dict[str, dict[str, list]] = field(default_factory=dict)    # scheme -> id -> [(k, w, etype)]
    unit_thread: dict[str, dict[str, str]] = field(default_factory=dict)  # scheme -> source -> thread
    units: "OrderedDict[str, tuple]" = field(default_factory=OrderedDict)  # source -> (row, vec)

    def unit_rows(self, space, ids: list[str]) -> tuple[dict[str, dict], dict[str, np.ndarray]]:
        """Source rows and vectors of ``ids``, read through a bounded LRU (sources never change;
        a forget changes the thread table, which replaces the whole snapshot)."""
        miss = [i for i in ids if i not in self.units]
        if miss:
            rows = {r["id"]: r for r in space.get_sources(miss)}
            vecs = space.source_vectors(miss)
            with _lock:
                for i in miss:
                    if i in rows and i in vecs:
                        self.units[i] = (rows[i], vecs[i])
                while len(self.units) > UNIT_CACHE:
                    self.units.popitem(last=False)
        got = {i: self.units[i] for i in ids if i in self.units}
        return {i: r for i, (r, _) in got.items()}, {i: v for i, (_, v) in got.items()}


def _key(space) -> tuple:
    return (id(space.store), space.namespace)


def invalidate(space) -> None:
    with _lock:
        k = _key(space)
        _gen[k] = _gen.get(k, 0) + 1
        _snaps.pop(k, None)


@contextmanager
def writing(space):
    """This process's curation is writing the thread and edge tables: a recall meanwhile keeps
    the cached snapshot (the row counts would show half a session and force a full re-read, of a
    half-written graph); ``note_session`` brings it up to date when the write is done. If the
    write fails half-way, the counts differ afterwards and the next re-check reads afresh."""
    k = _key(space)
    with _lock:
        _writing[k] = _writing.get(k, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _writing[k] -= 1


def note_session(space, session_id: str, threads: list[dict], edges: list[dict]) -> None:
    """Apply one re-curated session (its old threads and their edges gone, ``threads`` and
    ``edges`` written) to the cached snapshot, if one is cached and current, instead of dropping
    it: re-reading the graph took ~2.4 s at 100k units, paid by the first recall after every
    ``remember``. The snapshot is replaced, not changed in place (a recall may be reading it)."""
    k = _key(space)
    with _lock:
        old, gen = _snaps.get(k), _gen.get(k, 0)
    if old is None or old.gen != gen:
        return
    gone = {t for t, r in old.threads.items() if r["session_id"] == session_id}
    snap = Snapshot(old.counts, gen, units=old.units)
    snap.threads = {t: r for t, r in old.threads.items() if t not in gone}
    adj = dict(old.adj)
    for scheme in set(old.ids) | {r["scheme"] for r in threads}:
        ids, mat = old.ids.get(scheme, []), old.mats.get(scheme)
        keep = [i for i, t in enumerate(ids) if t not in gone]
        new = [r for r in threads if r["scheme"] == scheme]
        snap.ids[scheme] = [ids[i] for i in keep] + [r["id"] for r in new]
        parts = ([mat[keep]] if mat is not None and keep else []) + \
            [np.asarray(r["vector"], dtype=np.float64)[None, :] for r in new]
        if not parts:
            del snap.ids[scheme]
            continue
        snap.mats[scheme] = np.concatenate(parts)
        owner = {u: t for u, t in old.unit_thread.get(scheme, {}).items() if t not in gone}
        owner.update((u, r["id"]) for r in new for u in r["source_ids"])
        snap.unit_thread[scheme] = owner
        a = {t: nb for t, nb in adj.get(scheme, {}).items() if t not in gone}
        touched = {n for t in gone for n, _, _ in adj.get(scheme, {}).get(t, ())}
        for t in touched & set(a):
            a[t] = [x for x in a[t] if x[0] not in gone]
        adj[scheme] = a
    for r in threads:
        snap.threads[r["id"]] = {c: v for c, v in r.items() if c != "vector"}
    for e in {e["id"]: e for e in edges}.values():   # one row per id, as the upsert stored them
        a = adj.setdefault(e["scheme"], {})
        if e["src"] in snap.threads and e["dst"] in snap.threads:
            a[e["src"]] = a.get(e["src"], []) + [(e["dst"], float(np.float32(e["weight"])), e["etype"])]
            # ^ as the float32 column returns it
    snap.adj = adj
    snap.counts = (space.count_rows(THREADS), space.count_rows(EDGES))
    snap.checked = time.monotonic()
    with _lock:
        if _gen.get(k, 0) == gen and _snaps.get(k) is old:
            _snaps[k] = snap


def snapshot(space) -> Snapshot:
    k = _key(space)
    declare(space)
    with _lock:
        snap, gen = _snaps.get(k), _gen.get(k, 0)
        busy = _writing.get(k, 0) > 0
    now = time.monotonic()
    if snap is not None and snap.gen == gen and (busy or now - snap.checked < RECHECK_S):
        return snap
    counts = (space.count_rows(THREADS), space.count_rows(EDGES))
    if snap is not None and snap.counts == counts and snap.gen == gen:
        snap.checked = now
        return snap
    snap = Snapshot(counts, gen, now)
    rows = space.rows(THREADS) if counts[0] else []
    for scheme in {r["scheme"] for r in rows}:
        mine = sorted((r for r in rows if r["scheme"] == scheme), key=lambda r: r["id"])
        snap.ids[scheme] = [r["id"] for r in mine]
        snap.mats[scheme] = np.stack([np.asarray(r["vector"], dtype=np.float64) for r in mine])
        snap.unit_thread[scheme] = {s: r["id"] for r in mine for s in r["source_ids"]}
        snap.adj[scheme] = {}
    for r in rows:
        snap.threads[r["id"]] = {c: v for c, v in r.items() if c != "vector"}
    for e in (space.rows(EDGES) if counts[1] else []):
        if e["src"] in snap.threads and e["dst"] in snap.threads:
            snap.adj.setdefault(e["scheme"], {}).setdefault(e["src"], []).append(
                (e["dst"], float(e["weight"]), e["etype"]))
    with _lock:
        if _gen.get(k, 0) == gen:
            _snaps[k] = snap
    return snap
