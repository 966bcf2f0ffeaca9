"""The wiki strategy's tables and how curation writes them.

Four tables per namespace (through ``space.upsert/rows/nearest/text_search`` only):
``wiki_snapshots`` (immutable, one per exchange), ``wiki_claims`` (every claim ever extracted,
with its edit op and status), ``wiki_trajectories`` (ordered snapshot ids + the serialised
builder state of the trajectory) and ``wiki_pages`` (the Memory Wiki).

``curate_session`` is idempotent: when the session is the newest one and has no snapshots yet,
its snapshots are appended to the stored open trajectories (the common, incremental path);
otherwise (a re-curation, an older session arriving late, a forget) every snapshot of the
namespace is replayed from scratch. Both paths give the same trajectories because the builder is
deterministic and its state is stored completely.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pyarrow as pa

from . import text as tx
from .claims import build_snapshots
from .trajectories import Builder

log = logging.getLogger(__name__)
SNAP, CLAIM, TRAJ, PAGE = "wiki_snapshots", "wiki_claims", "wiki_trajectories", "wiki_pages"
TS = pa.timestamp("us", tz="UTC")
VEC = pa.list_(pa.float32(), 384)
S = pa.string()
L = pa.list_(pa.string())

SNAP_SCHEMA = pa.schema([("id", S), ("namespace", S), ("session_id", S), ("seq", pa.int64()),
                         ("idx", pa.int64()), ("timestamp", TS), ("session_time", TS),
                         ("speakers", L), ("source_ids", L), ("refs", L), ("text", S),
                         ("claims", S), ("names", L), ("heads", L), ("facets", L), ("vector", VEC)])
CLAIM_SCHEMA = pa.schema([("id", S), ("namespace", S), ("snapshot_id", S), ("trajectory_id", S),
                          ("position", pa.int64()), ("session_id", S), ("source_id", S),
                          ("ref", S), ("speaker", S), ("subject", S), ("timestamp", S),
                          ("text", S), ("slot", S), ("op", S), ("target", S), ("status", S),
                          ("by", S), ("names", L), ("facets", L), ("heads", L), ("dates", S)])
TRAJ_SCHEMA = pa.schema([("id", S), ("namespace", S), ("title", S), ("text", S),
                         ("snapshot_ids", L), ("source_ids", L), ("sessions", L), ("names", L),
                         ("heads", L), ("facets", L), ("speakers", L), ("n", pa.int64()),
                         ("first_time", TS), ("last_time", TS), ("status", S), ("continues", S),
                         ("state", S), ("vector", VEC)])
CLAIM_COLS = [f.name for f in CLAIM_SCHEMA if f.name != "namespace"]


def ensure(space) -> None:
    """Declare the vector-bearing schemas, so reads in a fresh process find the model-tagged
    tables (``Space.name`` only knows a derived kind has vectors once it has seen its schema)."""
    from .pages import PAGE_SCHEMA

    for kind, schema in ((SNAP, SNAP_SCHEMA), (TRAJ, TRAJ_SCHEMA), (PAGE, PAGE_SCHEMA)):
        space.derived_table(kind, schema)


def _vec(row: dict) -> dict:
    row["vector"] = np.asarray(row["vector"], dtype=np.float32)
    return row


def load_snapshots(space, ids: list[str] | None = None) -> list[dict]:
    rows = space.rows(SNAP, eq={"id": ids} if ids is not None else None)
    return [_vec(r) for r in rows]


def order_key(s: dict):
    t = s.get("session_time") or s.get("timestamp")
    return (t.timestamp() if t is not None else 0.0, s["session_id"], s["idx"])


def curate_session(space, session_id: str, llm=None, m: int = 15) -> dict:
    """(Re)build this session's snapshots and fold them into the trajectories."""
    ensure(space)
    rows = space.sources_by_session(session_id)
    sess = space.get_session(session_id) or {}
    when = sess.get("session_time") or (rows[0]["timestamp"] if rows else None)
    vectors = space.source_vectors([r["id"] for r in rows])
    snaps = build_snapshots(session_id, rows, when, vectors, llm) if rows else []
    had = space.rows(SNAP, eq={"session_id": session_id}, columns=["id"])
    others = space.rows(SNAP, columns=["id", "session_id", "session_time", "timestamp", "idx"])
    newest = all(order_key(o) < order_key(snaps[0]) for o in others
                 if o["session_id"] != session_id) if snaps else False
    if had:
        space.delete_rows(SNAP, {"session_id": session_id})
    space.upsert(SNAP, SNAP_SCHEMA, [dict(s) for s in snaps])
    if newest and not had:
        return append(space, snaps, m)
    return replay(space, m)


def append(space, snaps: list[dict], m: int) -> dict:
    b = Builder(m)
    for r in space.rows(TRAJ, eq={"status": "open"}, columns=["id", "state"]):
        b.load_state(r["id"], r["state"])
    for s in sorted(snaps, key=order_key):
        b.append(s)
    _write(space, b, full=False)
    return {"mode": "append", "snapshots": len(snaps), "touched": len(b.touched)}


def replay(space, m: int) -> dict:
    snaps = sorted(load_snapshots(space), key=order_key)
    b = Builder(m)
    for s in snaps:
        b.append(s)
    _write(space, b, full=True)
    return {"mode": "replay", "snapshots": len(snaps), "trajectories": len(b.trajs)}


def _write(space, b: Builder, full: bool) -> None:
    touched = [b.trajs[t] for t in sorted(b.touched)]
    snap_ids = sorted({x["id"] for T in touched for x in T.snapshots})
    by_id = {s["id"]: s for s in space.rows(SNAP, eq={"id": snap_ids},
                                            columns=[c for c in SNAP_SCHEMA.names if c != "vector"])}
    rows = [traj_row(T, [by_id[x["id"]] for x in T.snapshots if x["id"] in by_id], b)
            for T in touched]
    claims = [claim_row(c) for c in b.claims.values()]
    if b.status:
        old = {r["id"]: r for r in space.rows(CLAIM, eq={"id": sorted(b.status)})}
        for cid, ch in b.status.items():
            if cid in old:
                claims.append({k: v for k, v in dict(old[cid], **ch).items() if k != "namespace"})
    if full:
        keep = {T.id for T in b.trajs.values()}
        stale = [r["id"] for r in space.rows(TRAJ, columns=["id"]) if r["id"] not in keep]
        if stale:
            space.delete_rows(TRAJ, {"id": stale})
        stale = [r["id"] for r in space.rows(CLAIM, columns=["id"]) if r["id"] not in b.claims]
        if stale:
            space.delete_rows(CLAIM, {"id": stale})
    space.upsert(TRAJ, TRAJ_SCHEMA, rows)
    space.upsert(CLAIM, CLAIM_SCHEMA, claims)


def claim_row(c: dict) -> dict:
    out = {k: c.get(k) for k in CLAIM_COLS}
    out["dates"] = json.dumps(c.get("dates") or [])
    for k in ("slot", "target", "by", "timestamp", "ref", "speaker", "subject"):
        out[k] = out[k] or ""
    for k in ("names", "facets", "heads"):
        out[k] = list(out[k] or [])
    return out


def traj_row(T, snaps: list[dict], b: Builder) -> dict:
    claims = [c for s in snaps for c in json.loads(s["claims"])]
    names = [n for c in claims for n in c["names"]]
    heads = [h for c in claims for h in c["heads"]]
    top = sorted(set(names), key=lambda n: -names.count(n))[:3] or \
        sorted(set(heads), key=lambda h: -heads.count(h))[:3]
    times = [s["timestamp"] for s in snaps if s.get("timestamp") is not None]
    return {"id": T.id, "title": ", ".join(top) or (claims[0]["text"][:60] if claims else T.id),
            "text": "\n".join(s["text"] for s in snaps),
            "snapshot_ids": [s["id"] for s in snaps],
            "source_ids": [i for s in snaps for i in s["source_ids"]],
            "sessions": sorted({s["session_id"] for s in snaps}), "names": sorted(set(names)),
            "heads": sorted(set(heads)), "facets": sorted({f for s in snaps for f in s["facets"]}),
            "speakers": sorted({p for s in snaps for p in s["speakers"]}), "n": len(snaps),
            "first_time": min(times) if times else None, "last_time": max(times) if times else None,
            "status": "closed" if T.closed else "open", "continues": T.continues,
            "state": b.dump_state(T), "vector": T.sum / (np.linalg.norm(T.sum) or 1.0)}


def forget_sources(space, source_ids: set[str], m: int = 15) -> int:
    """Delete the snapshots and claims citing ``source_ids``; replay the rest; pages follow."""
    ensure(space)
    snaps = [s for s in space.rows(SNAP, columns=["id", "source_ids"])
             if source_ids & set(s["source_ids"])]
    claims = [c["id"] for c in space.rows(CLAIM, columns=["id", "source_id", "snapshot_id"])
              if c["source_id"] in source_ids or c["snapshot_id"] in {s["id"] for s in snaps}]
    if not snaps and not claims:
        return 0
    space.delete_rows(SNAP, {"id": [s["id"] for s in snaps]})
    space.delete_rows(CLAIM, {"id": claims})
    replay(space, m)
    return len(snaps) + len(claims)


def tokens_of_row(row: dict) -> set[str]:
    return set(tx.tokens(row.get("text") or ""))
