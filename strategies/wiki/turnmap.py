"""Which trajectory and snapshot each source turn belongs to, and the inventory claims by
subject: the maps ``scoring.score_turns`` needs on every recall, kept in memory per namespace.

Reading them from the wiki tables on every recall meant scanning every trajectory and every
snapshot (with its claims) of the namespace: fine for one LoCoMo conversation, seconds per recall
at 100k turns. They change only when curation (or forget / consolidate) writes those tables, so
they are rebuilt when either table's version moves and reused otherwise. A version check is a
metadata read, not a scan.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from .store import SNAP, TRAJ


@dataclass
class TurnMaps:
    t_of: dict[str, str] = field(default_factory=dict)            # source id -> trajectory id
    s_of: dict[str, str] = field(default_factory=dict)            # source id -> snapshot id
    members: dict[str, list[str]] = field(default_factory=dict)   # trajectory id -> source ids
    inv: dict[str, list[tuple[str, frozenset]]] = field(default_factory=dict)
    # ^ claim subject (lower case) -> [(source id, the claim's facets)]


_lock = threading.Lock()
_cache: dict[tuple, tuple[tuple, TurnMaps]] = {}


def _versions(space) -> tuple:
    out = []
    for kind in (TRAJ, SNAP):
        tbl = space.derived_table(kind)
        out.append(None if tbl is None else (id(tbl), tbl.version))
    return tuple(out)


def turn_maps(space) -> TurnMaps:
    key = (id(space.store), space.namespace)
    ver = _versions(space)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] == ver:
        return hit[1]
    m = TurnMaps()
    for t in space.rows(TRAJ, columns=["id", "source_ids"]):
        m.members[t["id"]] = list(t["source_ids"])
        for i in t["source_ids"]:
            m.t_of[i] = t["id"]
    for s in space.rows(SNAP, columns=["id", "source_ids", "claims"]):
        for i in s["source_ids"]:
            m.s_of[i] = s["id"]
        for c in json.loads(s["claims"]):
            m.inv.setdefault(c["subject"].lower(), []).append(
                (c["source_id"], frozenset(c["facets"])))
    with _lock:
        _cache[key] = (ver, m)
    return m
