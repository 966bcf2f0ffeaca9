"""The Memory Wiki read from outside recall: its pages as the resources
``trimem://{namespace}/wiki/{page}`` and an index serve them (``server/resources.py``), the pages
and claim histories ``trimem view`` shows, the pages a Markdown export writes, and the threads
the hooks' session-start memory lists. The namespace check is the one every reading tool makes
(``namespaces.require``: a resource read never creates a namespace); the page text comes from the
wiki strategy (``strategies/wiki/resources.py``). Every function here reads through the wiki's
store module (its table names, ``ensure``), so nothing above ``tools/`` knows its tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..strategies.wiki.resources import page_text
from .namespaces import require
from .runtime import Runtime

if TYPE_CHECKING:
    from ..storage.space import Space

MAX_TRAJECTORIES = 40   # claim histories shown on one wiki page
PAGE_ORDER = {"index": 0, "entity": 1, "topic": 2, "inventory": 3}


def read_page(rt: Runtime, namespace: str, page: str) -> str:
    ns = require(rt, namespace)
    return page_text(rt.space(ns), ns, page)


def page_list(space: Space, with_text: bool = False) -> list[dict]:
    """Every page (id, type, title, trajectory ids, and its text ``with_text``): the index
    first, then entities, topics and inventories, each by title."""
    from ..strategies.wiki.store import ensure, pages  # lazy: lancedb (wiki store), not at start-up

    ensure(space)
    cols = ["id", "type", "title", "trajectory_ids"] + (["text"] if with_text else [])
    rows = sorted(pages(space, columns=cols), key=lambda p: (PAGE_ORDER.get(p.type, 9), p.title or p.id))
    return [p.view(cols) for p in rows]


def page_with_claims(space: Space, page_id: str) -> tuple[dict | None, list[dict], dict[str, list[dict]]]:
    """(page, its trajectories, trajectory id -> claims) or (None, [], {})."""
    from ..strategies.wiki import store  # lazy: lancedb (wiki store), not at start-up

    store.ensure(space)
    cols = ["id", "type", "title", "text", "trajectory_ids"]
    rows = store.pages(space, eq={"id": page_id}, columns=cols)
    if not rows:
        return None, [], {}
    p = rows[0].view(cols)    # what the view shows: the page's columns by name
    ids = list(rows[0].trajectory_ids)[:MAX_TRAJECTORIES]
    if not ids:
        return p, [], {}
    cols = ["id", "title", "n"]
    by_id = {t.id: t.view(cols) for t in store.trajectories(space, eq={"id": ids}, columns=cols)}
    claims: dict[str, list[dict]] = {}
    cols = ["id", "trajectory_id", "position", "timestamp", "speaker", "text", "op", "status",
            "by", "target", "ref"]
    for c in store.claims(space, eq={"trajectory_id": ids}, columns=cols):
        claims.setdefault(c.trajectory_id, []).append(c.view(cols))
    return p, [by_id[i] for i in ids if i in by_id], claims


def recurring_threads(space: Space, min_sessions: int, limit: int) -> list[dict]:
    """The wiki's trajectories (title, sessions, last time) that run through at least
    ``min_sessions`` sessions and were not merged into another, most sessions first, then the
    most recent; [] when the wiki has none."""
    from ..strategies.wiki.store import TRAJ, trajectories  # lazy: lancedb (wiki store), not at start-up

    if space.table(TRAJ) is None:
        return []
    cols = ["title", "sessions", "last_time", "status"]
    rows = [r for r in trajectories(space, columns=cols)
            if len(r.sessions) >= min_sessions and r.status != "merged"]
    rows.sort(key=lambda r: (-len(r.sessions), -(r.last_time.timestamp() if r.last_time else 0)))
    return [r.view(cols) for r in rows[:limit]]
