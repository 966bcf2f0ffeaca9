"""Keeping the Memory Wiki in step with the trajectories: after each curation, or from scratch.

``update`` (after a curation) reads and rewrites only the groups of the trajectories the new
snapshots joined (their links, centroid sums and time spans moved), of the new claims and of the
older claims those revised, then the pages of those groups that are pages, hub flags that the
growing trajectory count turned, and the index. ``rebuild_all`` (forget, consolidate, or pages
found out of step) folds every trajectory and claim into empty groups with the same operations,
so both give the same pages. The index group carries ``sync`` = {token, assigned}: a new token per
write (it validates the trajectory index ``curate.py`` keeps in memory) and how many snapshots
the pages account for (compared with the trajectories' total when the index is loaded).
"""

from __future__ import annotations

import uuid
from collections import defaultdict

from .groups import GROUP, GROUP_SCHEMA, Group, gid, load
from .pages import (INDEX, PAGE, PAGE_SCHEMA, accepts, claim_keys, index_row, is_hub, is_live, mention,
                    note_claim, page_id, page_row, traj_keys)
from .store import CLAIM, TRAJ, ensure

PAGE_COLS = ["id", "type", "key", "title", "n_links", "hub"]
TRAJ_COLS = ["id", "names", "heads", "facets", "speakers", "sessions", "first_time",
             "last_time", "vector", "n"]


def sync_state(space) -> dict | None:
    rows = space.rows(GROUP, eq={"id": gid(*INDEX)}, columns=["id", "state"])
    return Group(*INDEX, rows[0]["state"]).sync if rows else None


def _claims(rows) -> list[dict]:
    return [{k: v for k, v in c.items() if k != "namespace"} for c in rows]


def _replacements(space, claims: list[dict]) -> dict[str, dict]:
    by = {c["id"]: c for c in claims}
    missing = sorted({c["by"] for c in claims if c["by"]} - set(by))
    if missing:
        by.update({c["id"]: c for c in _claims(space.rows(CLAIM, eq={"id": missing}))})
    return by


def update(space, rows: list[dict], prev: dict[str, dict], changed: list[dict],
           fresh_ids: set[str], n_snaps: int) -> str:
    """Fold one curation into the wiki. ``rows``: the touched trajectories as written, ``prev``:
    their rows before (by id; absent when new), ``changed``: older claims the curation revised or
    deprecated (as written), ``fresh_ids``: the claims it created."""
    claims = _claims(space.rows(CLAIM, eq={"trajectory_id": [t["id"] for t in rows]}))
    by_t = defaultdict(list)
    for c in claims:
        by_t[c["trajectory_id"]].append(c)
    fresh = sorted((c for c in claims if c["id"] in fresh_ids), key=lambda c: c["id"])
    tk = {t["id"]: traj_keys(t, by_t[t["id"]]) for t in rows}
    keys = {INDEX} | {k for ks in tk.values() for k in ks}
    keys |= {k for c in fresh + changed for k in claim_keys(c)}
    groups = load(space, keys)
    by = _replacements(space, claims + changed)
    added = defaultdict(set)
    for t in rows:
        p = prev.get(t["id"])
        for key, roles in tk[t["id"]].items():
            g = groups[key]
            if g.link(t, p["vector"] if p else None) and key[0] == "entity":
                for c in by_t[t["id"]]:      # older claims of a trajectory new to this entity
                    if c["id"] not in fresh_ids and key in claim_keys(c):
                        g.add_claim(c, by.get(c["by"]))
                        added[key].add(c["id"])
            mention(g, roles, t["id"])
    for c in fresh:
        note_claim(groups, c)
        for key in claim_keys(c):
            if accepts(groups[key], c):
                groups[key].add_claim(c, by.get(c["by"]))
                added[key].add(c["id"])
    for c in changed:
        for key in claim_keys(c):
            if accepts(groups[key], c) and c["id"] not in added[key]:
                groups[key].move_claim(c, by.get(c["by"]))
    idx = groups[INDEX]
    idx.sync = {"token": uuid.uuid4().hex, "assigned": (idx.sync or {}).get("assigned", 0) + n_snaps}
    _write(space, groups, full=False)
    return idx.sync["token"]


def rebuild_all(space) -> dict:
    """Recompute every group and page from all trajectories and claims; drop stale ones."""
    ensure(space)
    trajs = space.rows(TRAJ, columns=TRAJ_COLS)
    claims = _claims(space.rows(CLAIM))
    if not trajs:
        for kind in (PAGE, GROUP):
            old = [r["id"] for r in space.rows(kind, columns=["id"])]
            if old:
                space.delete_rows(kind, {"id": old})
        return {"pages": 0, "token": None}
    by_t = defaultdict(list)
    for c in claims:
        by_t[c["trajectory_id"]].append(c)
    by = {c["id"]: c for c in claims}
    groups: dict[tuple[str, str], Group] = {}
    for t in trajs:
        for key, roles in traj_keys(t, by_t[t["id"]]).items():
            g = groups.setdefault(key, Group(*key))
            g.link(t, None)
            mention(g, roles, t["id"])
    for c in sorted(claims, key=lambda c: c["id"]):
        note_claim(groups, c)
        for key in claim_keys(c):
            if key in groups and accepts(groups[key], c):
                groups[key].add_claim(c, by.get(c["by"]))
    groups[INDEX].sync = {"token": uuid.uuid4().hex, "assigned": sum(t["n"] for t in trajs)}
    n = _write(space, groups, full=True)
    return {"pages": n, "token": groups[INDEX].sync["token"]}


def _assign_pids(space, gs: list[Group], full: bool) -> None:
    """A page id per new page: ``wiki-<type>-<slug>``, ``-x`` appended while another key has it."""
    taken: dict[str, str] = {}
    base = {page_id(g.kind, g.key) for g in gs}
    while base and not full:
        got = {r["id"]: r["key"] for r in space.rows(PAGE, eq={"id": sorted(base)},
                                                     columns=["id", "key"])}
        taken.update(got)
        base = {i + "-x" for i in got}
    for g in sorted(gs, key=lambda g: (g.kind, g.key)):
        pid = page_id(g.kind, g.key)
        while pid in taken and taken[pid] != g.key:
            pid += "-x"
        g.pid, taken[pid] = pid, g.key


def _write(space, groups: dict, full: bool) -> int:
    idx = groups[INDEX]
    n_all = len(idx.trajs)
    live = [g for k, g in groups.items() if k != INDEX and is_live(g)]
    _assign_pids(space, [g for g in live if full or not g.pid], full)
    for g in live:
        if g.needs_refill():
            _refill(space, g)
    rows = [page_row(g, n_all) for g in live]
    mine = {r["id"] for r in rows}
    pages = [] if full else [r for r in space.rows(PAGE, columns=PAGE_COLS)
                             if r["id"] not in mine and r["type"] != "index"]
    flip = [r["id"] for r in pages if r["hub"] != is_hub(r["n_links"], n_all)]
    if flip:    # pages no curation touched whose hub flag the trajectory count turned
        for r in space.rows(PAGE, eq={"id": flip}):
            rows.append(dict(r, hub=is_hub(r["n_links"], n_all)))
    index = index_row(rows + [r for r in pages if r["id"] not in set(flip)], idx)
    if full:
        keep = {r["id"] for r in rows} | {index["id"]}
        stale = [r["id"] for r in space.rows(PAGE, columns=["id"]) if r["id"] not in keep]
        if stale:
            space.delete_rows(PAGE, {"id": stale})
        keep = {gid(*k) for k in groups}
        stale = [r["id"] for r in space.rows(GROUP, columns=["id"]) if r["id"] not in keep]
        if stale:
            space.delete_rows(GROUP, {"id": stale})
    space.upsert(PAGE, PAGE_SCHEMA, rows + [index])
    space.upsert(GROUP, GROUP_SCHEMA, [g.row(k == INDEX or is_live(g)) for k, g in groups.items()
                                       if g.trajs or g.n_act or g.n_hist or g.name_claims])
    return len(rows) + 1


def _refill(space, g: Group) -> None:
    """Rebuild the buffer of newest current claims after revisions emptied it (rare)."""
    eq = {"status": "active"}
    if len(g.trajs) <= 500:
        eq["trajectory_id"] = sorted(g.trajs)
    key = (g.kind, g.key)
    g.refill([c for c in _claims(space.rows(CLAIM, eq=eq))
              if key in claim_keys(c) and accepts(g, c)])
