"""What ``trimem view`` reads, through the storage and wiki APIs (never LanceDB directly)."""

from __future__ import annotations

from datetime import datetime, timezone

MAX_TRAJECTORIES = 40   # claim histories shown on one wiki page


def sessions(space) -> list[dict]:
    far = datetime.max.replace(tzinfo=timezone.utc)
    rows = [s for s in space.list_sessions() if s.get("namespace") == space.namespace]
    return sorted(rows, key=lambda s: (s.get("session_time") or far, s["session_id"]))


def wiki_pages(space) -> list[dict]:
    from ..strategies.wiki.store import PAGE, ensure

    ensure(space)
    rows = space.rows(PAGE, columns=["id", "type", "title", "trajectory_ids"])
    order = {"index": 0, "entity": 1, "topic": 2, "inventory": 3}
    return sorted(rows, key=lambda p: (order.get(p["type"], 9), p["title"] or p["id"]))


def page_with_claims(space, page_id: str):
    """(page, its trajectories, trajectory id -> claims) or (None, [], {})."""
    from ..strategies.wiki.store import CLAIM, PAGE, TRAJ, ensure

    ensure(space)
    rows = space.rows(PAGE, eq={"id": page_id}, columns=["id", "type", "title", "text",
                                                          "trajectory_ids"])
    if not rows:
        return None, [], {}
    p = rows[0]
    ids = list(p["trajectory_ids"] or [])[:MAX_TRAJECTORIES]
    if not ids:
        return p, [], {}
    trajs = space.rows(TRAJ, eq={"id": ids}, columns=["id", "title", "n"])
    by_id = {t["id"]: t for t in trajs}
    claims: dict[str, list[dict]] = {}
    for c in space.rows(CLAIM, eq={"trajectory_id": ids},
                        columns=["id", "trajectory_id", "position", "timestamp", "speaker",
                                 "text", "op", "status", "by", "target", "ref"]):
        claims.setdefault(c["trajectory_id"], []).append(c)
    return p, [by_id[i] for i in ids if i in by_id], claims
