"""The compatibility g(s, T) of a new snapshot against every open trajectory, in one pass.

``trajectories.py`` defines g; this index evaluates it for all open trajectories at once instead of
one Python call per trajectory: the vector parts (sem, drift) are two matrix-vector products, the
set parts (ent, fac, lex) come from posting lists (term -> trajectories whose last 3 snapshots
contain it) counted with ``np.bincount``, and temp from arrays of each trajectory's last snapshot.
The result is the same g as the per-trajectory formula (up to float rounding), so the argmax is
the same: nothing is approximated or pruned.

The index holds only what g needs (vectors, last-snapshot fields, the recent window's terms and
the slot names); the claim-level edit state of a trajectory stays in ``Traj``. The strategy keeps
one index per namespace in memory between curations (see ``curate.py``), so a new session costs
O(its snapshots x open trajectories) arithmetic and no reads of the other trajectories.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .rows import Snapshot
    from .trajectories import Placed, Traj

W = {"ent": 0.25, "fac": 0.15, "lex": 0.20, "temp": 0.15, "sem": 0.25, "drift": 0.50,
     "slot": 0.20}
KINDS = 3   # entities, facets, words


class TrajIndex:
    """``dim``: the vectors' size; None until the first vector arrives (the model says it)."""

    # the columns, one row per trajectory, set (and grown) by _alloc through setattr
    head: np.ndarray
    last: np.ndarray
    sum: np.ndarray
    idx: np.ndarray
    ts: np.ndarray
    size: np.ndarray
    alive: np.ndarray
    length: np.ndarray

    def __init__(self, dim: int | None = None):
        self.dim, self.n = dim, 0
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self._alloc(64)
        self.sess: list[str] = []
        self.recent: list[list[tuple[set, set, set]]] = []
        self.counts: list[list[Counter]] = []
        self.post: list[dict[str, set[int]]] = [{} for _ in range(KINDS)]
        self.slots: list[set[str]] = []
        self.spost: dict[str, set[int]] = {}

    def _alloc(self, cap: int) -> None:
        old = getattr(self, "head", None)
        d = self.dim or 0
        new = {"head": np.zeros((cap, d), np.float32), "last": np.zeros((cap, d), np.float32),
               "sum": np.zeros((cap, d), np.float32),
               "idx": np.zeros(cap, np.int64), "ts": np.full(cap, np.nan),
               "size": np.zeros((cap, KINDS)), "alive": np.zeros(cap, bool),
               "length": np.zeros(cap, np.int64)}
        for k, arr in new.items():
            if old is not None:
                arr[:self.n] = getattr(self, k)[:self.n]
            setattr(self, k, arr)

    def _fit(self, v) -> None:
        """Size the vector arrays on the first vector (none was held before: all zero)."""
        if self.dim is None:
            self.dim = len(v)
            for k in ("head", "last", "sum"):
                setattr(self, k, np.zeros((len(self.alive), self.dim), np.float32))

    # -- updates --------------------------------------------------------------------------
    def add(self, tid: str, T: Traj) -> int:
        """Register trajectory ``T`` (a ``Traj``, possibly with snapshots already)."""
        if self.n == len(self.alive):
            self._alloc(2 * self.n)
        p = self.n
        self.n += 1
        self.ids.append(tid)
        self.pos[tid] = p
        self.sess.append("")
        self.recent.append([])
        self.counts.append([Counter() for _ in range(KINDS)])
        self.slots.append(set())
        self.alive[p] = not T.closed
        if T.head is not None:
            self._fit(T.head)
            self.head[p], self.last[p], self.sum[p] = T.head, T.last, T.sum
            x = T.snapshots[-1]
            self._last(p, x)
            self.length[p] = len(T.snapshots)
            for terms in T.recent:
                self._window(p, terms)
        self.add_slots(p, T.slots)
        return p

    def _last(self, p: int, x: Placed | Snapshot) -> None:
        self.sess[p], self.idx[p] = x.session_id, x.idx
        self.ts[p] = x.timestamp.timestamp() if x.timestamp is not None else np.nan

    def _window(self, p: int, terms) -> None:
        self.recent[p].append(terms)
        drop = self.recent[p].pop(0) if len(self.recent[p]) > 3 else None
        for k in range(KINDS):
            c, post = self.counts[p][k], self.post[k]
            for t in terms[k]:
                c[t] += 1
                if c[t] == 1:
                    post.setdefault(t, set()).add(p)
            for t in (drop[k] if drop else ()):
                c[t] -= 1
                if not c[t]:
                    del c[t]
                    post[t].discard(p)
            self.size[p, k] = len(c)

    def add_slots(self, p: int, slots) -> None:
        for sl in slots:
            if sl not in self.slots[p]:
                self.slots[p].add(sl)
                self.spost.setdefault(sl, set()).add(p)

    def push(self, tid: str, s: Snapshot, terms, slots) -> None:
        """Snapshot ``s`` was appended to ``tid``."""
        p = self.pos[tid]
        v = np.asarray(s.vector, dtype=np.float32)
        self._fit(v)
        if not self.length[p]:
            self.head[p], self.sum[p] = v, 0.0
        self.last[p] = v
        self.sum[p] += v
        self.length[p] += 1
        self._last(p, s)
        self._window(p, terms)
        self.add_slots(p, slots)

    def close(self, tid: str) -> None:
        p = self.pos[tid]
        self.alive[p] = False
        for k in range(KINDS):
            for t in self.counts[p][k]:
                self.post[k][t].discard(p)
        for sl in self.slots[p]:
            self.spost[sl].discard(p)

    # -- query ----------------------------------------------------------------------------
    def _count(self, k: int, terms) -> np.ndarray:
        hits = [p for t in terms for p in self.post[k].get(t, ())]
        return np.bincount(hits, minlength=self.n).astype(float) if hits else np.zeros(self.n)

    def best(self, s: Snapshot, terms, slots: set) -> tuple[str | None, dict]:
        """The open trajectory maximising g(s, T), with g's parts; (None, {g: -1}) if none."""
        if not self.n or not self.alive[:self.n].any():
            return None, {"g": -1.0}
        parts = self.scores(s, terms, slots)
        p = int(np.argmax(parts["g"]))
        return self.ids[p], {k: float(x[p]) for k, x in parts.items()}

    def scores(self, s: Snapshot, terms, slots: set) -> dict[str, np.ndarray]:
        """g(s, T) and its parts for every trajectory (position order; -inf if closed)."""
        n = self.n
        es, fs, ws = terms
        v = np.asarray(s.vector, dtype=np.float32)
        self._fit(v)
        slot = np.zeros(n, bool)
        for sl in slots:
            slot[list(self.spost.get(sl, ()))] = True
        ce, cf, cw = (self._count(k, t) for k, t in enumerate(terms))
        sz = self.size[:n]
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = ce / len(es) if es else np.zeros(n)
            jac = np.where((sz[:, 1] > 0) & bool(fs), cf / (len(fs) + sz[:, 1] - cf), 0.0)
            fac = np.where(slot, 1.0, np.nan_to_num(jac))
            lex = np.where((sz[:, 2] > 0) & bool(ws),
                           cw / np.sqrt(len(ws) * np.maximum(sz[:, 2], 1)), 0.0)
        ts = s.timestamp.timestamp() if s.timestamp is not None else np.nan
        days = np.abs(ts - self.ts[:n]) / 86400.0
        days = np.where(np.isnan(days), 30.0, days)
        adj = (np.asarray(self.sess, dtype=object) == s.session_id) & \
            (self.idx[:n] == s.idx - 1)
        temp = np.where(adj, 1.0, 0.5 * np.exp(-days / 30))
        sums = self.sum[:n]
        norms = np.linalg.norm(sums, axis=1)
        norms[norms == 0] = 1.0
        sem = (self.last[:n] @ v + (sums @ v) / norms) / 2
        drift = np.maximum(0.0, 0.15 - self.head[:n] @ v)
        g = (W["ent"] * ent + W["fac"] * fac + W["lex"] * lex + W["temp"] * temp +
             W["sem"] * sem - W["drift"] * drift + W["slot"] * slot)
        return {"ent": ent, "fac": fac, "lex": lex, "temp": temp, "sem": sem, "drift": drift,
                "g": np.where(self.alive[:n], g, -np.inf)}
