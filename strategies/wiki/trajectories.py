"""Trajectories: append-only, source-linked sequences of snapshots with claim-level edit ops.

The paper's formulas for g and for the edit operations were lost in extraction; the prose says g
"considers entity continuity, facet overlap, lexical evidence, temporal compatibility, and
semantic drift". Our exact choice, for snapshot s and trajectory T (R = T's last 3 snapshots)::

    g(s,T) = 0.25*ent + 0.15*fac + 0.20*lex + 0.15*temp + 0.25*sem - 0.50*drift
    ent  = |E_s & E_R| / |E_s|               E = named entities + recurring noun heads
    fac  = jaccard(F_s, F_R), or 1 when a claim of s has the slot of an active claim of T
    lex  = |W_s & W_R| / sqrt(|W_s| |W_R|)   W = content stems
    temp = 1 if s is the very next exchange after T's last one in the same session,
           else 0.5 * exp(-days(T.last, s) / 30)
    sem  = (cos(s, T.last) + cos(s, centroid(T))) / 2
    drift= max(0, 0.15 - cos(s, T.head))     (how far s would pull T from where it started)
    + 0.20 when a claim of s has the slot of an active claim of T (same changeable state)

s joins argmax_T g when g >= THETA (0.42) and T holds fewer than m (15) snapshots; otherwise it
starts a new trajectory. If the best T is full, the new trajectory *continues* it: it inherits
T's active slots, so revisions keep working across the chain, and T is closed.

Edit operations, applied claim by claim when s is appended (claims are never deleted)::

    deprecate: the claim carries an end cue (claims.END) and T has an active claim on the same
               slot (or, with no slot, one of the same subject sharing >= 1/3 of its stems):
               that claim becomes status=deprecated (deprecated_by = the new claim).
    revise:    the claim has a slot with an active claim in T (different text), or restates an
               active claim of the same subject (stem jaccard >= 0.7): the old claim becomes
               status=revised (superseded_by = the new claim).
    add:       otherwise.

g is evaluated for every open trajectory at once by ``tindex.TrajIndex`` (same formula).
The builder is deterministic: appending the same snapshots in the same order gives the same
trajectories. Curation appends each new session's snapshots to the stored trajectories in the
order they arrive (``curate.py``); a replay (forget, consolidate) re-appends every snapshot in
time order (session time, session id, exchange index).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Callable

import numpy as np

from . import text as tx
from .claims import hid
from .tindex import TrajIndex, W  # noqa: F401  (W: the weights of g, re-exported)

if TYPE_CHECKING:
    from .rows import Claim, Snapshot

VectorsOf = Callable[[list[str]], dict[str, np.ndarray]]   # snapshot ids -> their vectors

THETA = 0.42
M_DEFAULT = 15


def snap_terms(s: Snapshot) -> tuple[set, set, set]:
    ents = set(s.names) | set(s.heads)
    return ents, set(s.facets), set(tx.tokens(s.text))


@dataclass(frozen=True, slots=True)
class Placed:
    """A snapshot as a trajectory's state keeps it: what g's temporal part reads of its last."""

    id: str
    session_id: str
    idx: int
    timestamp: datetime | None

    def dump(self) -> dict:
        return {"id": self.id, "session_id": self.session_id, "idx": self.idx,
                "timestamp": self.timestamp.isoformat() if self.timestamp else None}

    @classmethod
    def load(cls, d: dict) -> Placed:
        t = d["timestamp"]
        return cls(d["id"], d["session_id"], d["idx"], datetime.fromisoformat(t) if t else None)


@dataclass(frozen=True, slots=True)
class Active:
    """An active claim as a trajectory's state keeps it: what the edit ops compare."""

    id: str
    subject: str
    slot: str | None
    toks: set[str]

    def dump(self) -> dict:
        return {"id": self.id, "subject": self.subject, "slot": self.slot,
                "toks": sorted(self.toks)}

    @classmethod
    def load(cls, d: dict) -> Active:
        return cls(d["id"], d["subject"], d["slot"], set(d["toks"]))


class Traj:
    """In-memory state of one trajectory while snapshots are appended."""

    def __init__(self, tid: str, continues: str = "", slots: dict | None = None):
        self.id, self.continues, self.closed = tid, continues, False
        self.snapshots: list[Placed] = []
        self.recent: list[tuple[set, set, set]] = []
        self.slots: dict[str, str] = dict(slots or {})
        self.active: dict[str, Active] = {}     # claim id -> its subject, slot, stems
        self.head: np.ndarray | None = None
        self.last: np.ndarray | None = None
        self.sum: np.ndarray | None = None


class Builder:
    """Appends snapshots to trajectories; collects claim rows and claim status changes.

    ``index`` (a ``TrajIndex``) scores g against every open trajectory; ``self.trajs`` holds the
    edit state of the trajectories this builder has touched (all of them in a replay). ``load``
    (ids -> {id: state}) fetches the stored edit state of an open trajectory the first time a
    snapshot joins it, so appending never reads the trajectories it does not touch; ``vectors``
    (snapshot ids -> {id: vector}) gives a loaded trajectory's snapshot vectors, from which its
    head, last and sum are added up again (a state stores none of them)."""

    def __init__(self, m: int = M_DEFAULT, theta: float = THETA, index: TrajIndex | None = None,
                 load: Callable[[list[str]], dict[str, str]] | None = None,
                 vectors: VectorsOf | None = None):
        self.m, self.theta = m, theta
        self.index = index if index is not None else TrajIndex()
        self.load = load
        self.vectors = vectors
        self.trajs: dict[str, Traj] = {}
        self.claims: dict[str, Claim] = {}       # new claim rows, by id
        self.status: dict[str, tuple[str, str]] = {}   # older claim id -> (status, by)
        self.touched: set[str] = set()

    def traj(self, tid: str) -> Traj:
        if tid not in self.trajs:
            if self.load is None:
                raise KeyError(f"trajectory {tid!r} is not loaded and this builder has no load")
            self.trajs[tid] = traj_from_state(tid, self.load([tid])[tid], self.vectors)
        return self.trajs[tid]

    def _new(self, T: Traj) -> Traj:
        self.trajs[T.id] = T
        self.index.add(T.id, T)
        return T

    def append(self, s: Snapshot) -> tuple[str, dict]:
        terms = snap_terms(s)
        claims = s.claims
        slots = {c.slot for c in claims if c.slot}
        tid, parts = self.index.best(s, terms, slots)
        full = tid is not None and self.index.length[self.index.pos[tid]] >= self.m
        if full and tid is not None and parts["g"] >= self.theta:
            old = self.traj(tid)
            old.closed = True
            self.index.close(tid)
            self.touched.add(tid)
            best = Traj(hid("trj", s.id), continues=tid, slots=old.slots)
            best.active = {k: v for k, v in old.active.items()
                           if v.id in set(best.slots.values())}
            self._new(best)
        elif tid is None or parts["g"] < self.theta:
            best = self._new(Traj(hid("trj", s.id)))
        else:
            best = self.traj(tid)
        self._push(best, s, terms, claims)
        self.index.push(best.id, s, terms, best.slots)
        return best.id, parts

    def _push(self, T: Traj, s: Snapshot, terms, claims: list[Claim]) -> None:
        v = s.vector
        if T.head is None or T.sum is None:   # the first snapshot (both are set together)
            T.head, T.sum = v.copy(), np.zeros_like(v)
        T.last, T.sum = v, T.sum + v
        T.snapshots.append(Placed(s.id, s.session_id, s.idx, s.timestamp))
        T.recent = (T.recent + [terms])[-3:]
        for c in claims:
            self._edit(T, replace(c, snapshot_id=s.id, trajectory_id=T.id,
                                  position=len(T.snapshots) - 1))
        self.touched.add(T.id)

    def _edit(self, T: Traj, c: Claim) -> None:
        toks = set(tx.tokens(c.text))
        op, target = "add", None
        if c.slot and c.slot in T.slots and T.slots[c.slot] in T.active:
            target = T.slots[c.slot]
            op = "deprecate" if c.ends else "revise"
        else:
            for cid, a in T.active.items():
                if a.subject != c.subject or not toks:
                    continue
                j = tx.jaccard(toks, a.toks)
                if c.ends and len(toks & a.toks) >= len(a.toks) / 3:
                    target, op = cid, "deprecate"
                    break
                if j >= 0.7:
                    target, op = cid, "revise"
                    break
        if target is not None:
            T.active.pop(target, None)
            status = "deprecated" if op == "deprecate" else "revised"
            if target in self.claims:
                self.claims[target] = replace(self.claims[target], status=status, by=c.id)
            else:
                self.status[target] = (status, c.id)
        if c.slot:
            T.slots[c.slot] = c.id
        if not (op == "deprecate" and not c.slot):
            T.active[c.id] = Active(c.id, c.subject, c.slot or None, toks)
        self.claims[c.id] = replace(c, op=op, target=target or "", status="active", by="")

    # -- persistence of trajectory states (for incremental appends) -------------------------
    @staticmethod
    def dump_state(T: Traj) -> str:
        return dump_state(T)

    def load_states(self, states: dict[str, str]) -> None:
        """Make stored trajectories known to this builder (their edit state and g terms), with
        the vectors of all their snapshots asked for at once."""
        parsed = {tid: json.loads(state) for tid, state in states.items()}
        need = [x["id"] for d in parsed.values() if "sum" not in d for x in d["snapshots"]]
        got = self.vectors(need) if need and self.vectors is not None else {}
        for tid, d in parsed.items():
            T = self.trajs[tid] = _traj(tid, d, got)
            self.index.add(tid, T)


def _unb64(x) -> np.ndarray:
    if isinstance(x, str):
        return np.frombuffer(base64.b64decode(x), dtype=np.float32).copy()
    return np.asarray(x, dtype=np.float32)      # states written before vectors were packed


def dump_state(T: Traj) -> str:
    """The edit state; not the vectors (head, last, sum): they are the trajectory's snapshots',
    added up again when it is loaded (``traj_from_state``)."""
    return json.dumps({"continues": T.continues, "closed": T.closed, "slots": T.slots,
                       "snapshots": [x.dump() for x in T.snapshots],
                       "recent": [[sorted(a), sorted(b), sorted(c)] for a, b, c in T.recent],
                       "active": [a.dump() for a in T.active.values()]})


def traj_from_state(tid: str, state: str, vectors: VectorsOf | None = None) -> Traj:
    d = json.loads(state)
    need = [x["id"] for x in d["snapshots"]] if "sum" not in d else []
    return _traj(tid, d, vectors(need) if need and vectors is not None else {})


def _traj(tid: str, d: dict, vectors: dict[str, np.ndarray]) -> Traj:
    T = Traj(tid, d["continues"], d["slots"])
    T.closed = d["closed"]
    T.snapshots = [Placed.load(x) for x in d["snapshots"]]
    T.recent = [(set(a), set(b), set(c)) for a, b, c in d["recent"]]
    T.active = {a["id"]: Active.load(a) for a in d["active"]}
    if "sum" in d:      # a state written when states kept the vectors
        T.head, T.last, T.sum = (_unb64(d[k]) for k in ("head", "last", "sum"))
        return T
    for x in T.snapshots:   # as ``Builder._push`` added them
        v = vectors.get(x.id)
        if v is None:
            continue
        if T.head is None or T.sum is None:
            T.head, T.sum = v.copy(), np.zeros_like(v)
        T.last, T.sum = v, T.sum + v
    return T
