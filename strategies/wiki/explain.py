"""``explain`` for the wiki's own ids: claims (their history), snapshots, trajectories, pages.

A claim's history walks back through ``target`` (what it revised or deprecated) and forward
through ``by`` (what revised or deprecated it), so every version is listed in time order with its
op, status, snapshot and source (ref and text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import store
from .sampled import written_by
from .store import ensure, pages, trajectories

if TYPE_CHECKING:
    from ..space_api import StrategySpace


def _sources(space: StrategySpace, ids: list[str]) -> list[dict]:
    return [r.view("id", "ref", "session_id", "speaker", "timestamp", "text")
            for r in space.sources.get(ids)]


def claim_history(space: StrategySpace, cid: str) -> list[dict]:
    rows = {r.id: r for r in store.claims(space, eq={"id": cid})}
    if not rows:
        return []
    chain, cur = [rows[cid]], rows[cid]
    while cur.target:
        prev = store.claims(space, eq={"id": cur.target})
        if not prev or prev[0].id in {c.id for c in chain}:
            break
        cur = prev[0]
        chain.insert(0, cur)
    cur = rows[cid]
    while cur.by:
        nxt = store.claims(space, eq={"id": cur.by})
        if not nxt or nxt[0].id in {c.id for c in chain}:
            break
        cur = nxt[0]
        chain.append(cur)
    return [{"id": c.id, "op": c.op, "status": c.status, "text": c.text,
             "subject": c.subject, "slot": c.slot, "timestamp": c.timestamp,
             "snapshot": c.snapshot_id, "trajectory": c.trajectory_id,
             "source_id": c.source_id, "ref": c.ref, "replaced_by": c.by} for c in chain]


def explain_id(space: StrategySpace, id: str) -> dict | None:
    ensure(space)
    if id.startswith("clm_"):
        hist = claim_history(space, id)
        if not hist:
            return None
        me = next(h for h in hist if h["id"] == id)
        cur = hist[-1]
        me["written_by"] = by = written_by(space, me["snapshot"], id)
        return {"type": "claim", "claim": me, "current": cur, "history": hist,
                "summary": f"claim {me['status']} ({me['op']}{', written by ' + by if by else ''}); "
                           f"{len(hist)} versions; current: {cur['text']!r} [{cur['ref']}]",
                "sources": _sources(space, [h["source_id"] for h in hist])}
    if id.startswith("snp_"):
        cols = ["id", "session_id", "idx", "timestamp", "speakers", "source_ids", "refs"]
        rows = store.snapshots(space, eq={"id": id}, columns=cols + ["claims"])
        if not rows:
            return None
        s = rows[0]
        return {"type": "snapshot", "snapshot": s.view(cols),
                "claims": [{"id": c.id, "text": c.text, "subject": c.subject, "ref": c.ref,
                            "dates": c.dates} for c in s.claims],
                "summary": f"snapshot of session {s.session_id} (exchange {s.idx}), "
                           f"{len(s.claims)} claims", "sources": _sources(space, s.source_ids)}
    if id.startswith("trj_"):
        cols = ["id", "title", "snapshot_ids", "source_ids", "sessions", "status", "continues", "n"]
        rows = trajectories(space, eq={"id": id}, columns=cols)
        if not rows:
            return None
        t = rows[0]
        claims = sorted(store.claims(space, eq={"trajectory_id": id}),
                        key=lambda c: (c.position, c.id))
        return {"type": "trajectory", "trajectory": t.view(cols),
                "edits": [{"id": c.id, "position": c.position, "op": c.op, "status": c.status,
                           "target": c.target, "by": c.by, "text": c.text, "ref": c.ref}
                          for c in claims],
                "summary": f"trajectory {t.title!r}: {t.n} snapshots over "
                           f"{len(t.sessions)} sessions ({t.status})",
                "sources": _sources(space, t.source_ids)}
    if id.startswith("wiki-"):
        cols = ["id", "type", "title", "text", "trajectory_ids", "hub"]
        rows = pages(space, eq={"id": id}, columns=cols)
        if not rows:
            return None
        p = rows[0]
        return {"type": "page", "page": p.view(cols), "summary": f"{p.type} page {p.title!r} "
                f"linking {len(p.trajectory_ids)} trajectories", "sources": []}
    return None
