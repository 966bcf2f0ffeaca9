"""Keeping the Memory Wiki in step with the trajectories: after each curation, or from scratch.

``update`` (after a curation) reads and rewrites only the groups the new snapshots are about
(their trajectories are linked to them), of the new claims and of the older claims those
revised, then the pages of those groups that are pages, hub flags that the growing trajectory
count turned, and the index. ``rebuild_all`` (forget, consolidate, or pages found out of step)
folds every snapshot and claim into empty groups with the same operations, so both give the
same pages. The index group carries ``sync`` = {token, assigned}: a new token per
write (it validates the trajectory index ``curate.py`` keeps in memory) and how many snapshots
the pages account for (compared with the trajectories' total when the index is loaded).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .groups import Group, SumCache, gid, load, upgrade
from .pages import (
    INDEX,
    accepts,
    claim_keys,
    index_row,
    is_hub,
    is_live,
    mention,
    note_claim,
    page_id,
    page_row,
    snap_keys,
)
from . import store
from .store import SNAP_COLUMNS, Claim, Page, Snapshot, ensure, load_snapshots, order_key

if TYPE_CHECKING:
    from ..space_api import StrategySpace


def index_group(space: StrategySpace) -> Group:
    """The stored index group (empty if none): its ``sync`` tells whether the pages are in step
    with the trajectories, and :func:`update` takes it rather than reading it again (its state
    holds the page directory and every trajectory id: 393 KB of JSON at 30,000 turns, a read
    of 40-80 ms from LanceDB once its table is past the copies' bound)."""
    return load(space, {INDEX})[INDEX]


def _replacements(space: StrategySpace, claims: list[Claim]) -> dict[str, Claim]:
    by = {c.id: c for c in claims}
    missing = sorted({c.by for c in claims if c.by} - set(by))
    if missing:
        by.update({c.id: c for c in store.claims(space, eq={"id": missing})})
    return by


def update(space: StrategySpace, placed: list[tuple[Snapshot, str]], fresh: list[Claim],
           changed: list[Claim], index: Group | None = None,
           sums: SumCache | None = None) -> str:
    """Fold one curation into the wiki. ``placed``: the new snapshots with the trajectory each
    joined, ``fresh``: the claims it created, ``changed``: older claims it revised or deprecated
    (rows as written); ``index``: the index group as :func:`index_group` read it in this
    curation (nothing else writes the groups meanwhile: curation holds the namespace), else it
    is read here; ``sums``: the small pages' sums this process kept (``groups.SumCache``),
    taken for the groups stored as it wrote them and given the sums this write stores without."""
    sk = [(s, tid, snap_keys(s)) for s, tid in placed]
    keys = {k for _, _, ks in sk for k in ks}
    keys |= {k for c in fresh + changed for k in claim_keys(c)}
    groups = load(space, (keys | {INDEX}) if index is None else keys - {INDEX}, sums)
    if index is not None:
        groups[INDEX] = index
    joined = defaultdict(set)          # trajectory -> entities it is new to
    for s, tid, ks in sk:
        for key, roles in ks.items():
            g = groups[key]
            if g.link(tid) and key[0] == "entity":
                joined[tid].add(key)
            g.add_snapshot(s)
            mention(g, roles, tid)
    by = _replacements(space, fresh + changed)
    added = defaultdict(set)
    for c in _older(space, joined, {c.id for c in fresh}):
        for key in claim_keys(c) & joined[c.trajectory_id]:
            groups[key].add_claim(c, by.get(c.by))
            added[key].add(c.id)
    for c in sorted(fresh, key=lambda c: c.id):
        note_claim(groups, c)
        for key in claim_keys(c):
            if accepts(groups[key], c):
                groups[key].add_claim(c, by.get(c.by))
                added[key].add(c.id)
    for c in changed:
        for key in claim_keys(c):
            if accepts(groups[key], c) and c.id not in added[key]:
                groups[key].move_claim(c, by.get(c.by))
    idx = groups[INDEX]
    idx.sync = {"token": uuid.uuid4().hex,
                "assigned": (idx.sync or {}).get("assigned", 0) + len(placed)}
    _write(space, groups, full=False, sums=sums)
    return idx.sync["token"]


def _older(space: StrategySpace, joined: dict[str, set], fresh_ids: set[str]) -> list[Claim]:
    """Earlier claims of trajectories new to an entity that name it only as their subject (an
    LLM's subject; the heuristic subject is a speaker or a name, so the trajectory had the key)."""
    if not joined:
        return []
    hit = [c.id for c in store.claims(space, eq={"trajectory_id": sorted(joined)},
                                      columns=["id", "subject", "trajectory_id"])
           if c.id not in fresh_ids and ("entity", c.subject.lower()) in joined[c.trajectory_id]]
    return store.claims(space, eq={"id": hit}) if hit else []


def rebuild_all(space: StrategySpace) -> dict:
    """Recompute every group and page from all snapshots, trajectories and claims."""
    ensure(space)
    trajs = store.trajectories(space, columns=["id", "snapshot_ids", "n"])
    claims = store.claims(space)
    if not trajs:
        old = store.page_ids(space)
        if old:
            store.delete_pages(space, old)
        old = store.group_ids(space)
        if old:
            store.delete_groups(space, old)
        return {"pages": 0, "token": None}
    owner = {i: t.id for t in trajs for i in t.snapshot_ids}
    by = {c.id: c for c in claims}
    groups: dict[tuple[str, str], Group] = {}
    for s in sorted(load_snapshots(space), key=lambda s: s.id):
        if s.id not in owner:
            continue
        for key, roles in snap_keys(s).items():
            g = groups.setdefault(key, Group(*key, dim=space.vector_dim))
            g.link(owner[s.id])
            g.add_snapshot(s)
            mention(g, roles, owner[s.id])
    for c in sorted(claims, key=lambda c: c.id):
        note_claim(groups, c)
        for key in claim_keys(c):
            if key in groups and accepts(groups[key], c):
                groups[key].add_claim(c, by.get(c.by))
    token = uuid.uuid4().hex
    groups[INDEX].sync = {"token": token, "assigned": sum(t.n for t in trajs)}
    n = _write(space, groups, full=True)
    return {"pages": n, "token": token}


def _assign_pids(space: StrategySpace, gs: list[Group], full: bool) -> None:
    """A page id per new page: ``wiki-<type>-<slug>``, ``-x`` appended while another key has it."""
    taken: dict[str, str] = {}
    base = {page_id(g.kind, g.key) for g in gs}
    while base and not full:
        got = store.page_keys(space, sorted(base))
        taken.update(got)
        base = {i + "-x" for i in got}
    for g in sorted(gs, key=lambda g: (g.kind, g.key)):
        pid = page_id(g.kind, g.key)
        while pid in taken and taken[pid] != g.key:
            pid += "-x"
        g.pid, taken[pid] = pid, g.key


def _write(space: StrategySpace, groups: dict, full: bool, sums: SumCache | None = None) -> int:
    upgrade(space)
    idx = groups[INDEX]
    n_all = len(idx.trajs)
    live = [g for k, g in groups.items() if k != INDEX and is_live(g)]
    _assign_pids(space, [g for g in live if full or not g.pid], full)
    _complete(space, live)
    rows = [page_row(g, n_all) for g in live]
    idx.pages = _directory(space, idx, rows, n_all, full)
    index = index_row([Page(i, type=x[0], key=x[1], title=x[2], n_links=x[3])
                       for i, x in idx.pages.items()], idx)
    if full:
        _drop_stale(space, groups, {r.id for r in rows} | {index.id})
    store.put_pages(space, rows + [index])
    kept = [(g, g.row(k == INDEX or is_live(g))) for k, g in groups.items()
            if g.trajs or g.n_act or g.n_hist or g.name_claims]
    store.put_groups(space, [r for _, r in kept])
    if sums is not None:   # a page's group stored without its sum, summed in full here
        for g, r in kept:
            if r.live and not r.sum and not g.partial:
                sums.put(r, g.v)
    return len(rows) + 1


def _complete(space: StrategySpace, live: list[Group]) -> None:
    """Give the pages' groups what their rows need: the vector sum of a group stored without it
    (:func:`resum`), the claim buffer of one revisions emptied (:func:`_refill`)."""
    resum(space, *(g for g in live if g.partial))
    for g in live:
        if g.needs_refill():
            _refill(space, g)


def _directory(space: StrategySpace, idx: Group, rows: list[Page], n_all: int,
               full: bool) -> dict:
    """The index's page directory after this write (id -> [type, key, title, links, hub]):
    ``rows`` over the stored one (none when ``full``). Pages no curation touched whose hub flag
    the trajectory count turned are read, and their rows added to ``rows``."""
    pages = {} if full else dict(idx.pages)
    pages.update((r.id, [r.type, r.key, r.title, r.n_links, r.hub]) for r in rows)
    flip = [i for i, x in pages.items() if x[4] != is_hub(x[3], n_all)]
    if flip:
        for r in store.pages(space, eq={"id": flip}):
            rows.append(replace(r, hub=is_hub(r.n_links, n_all)))
            pages[r.id][4] = rows[-1].hub
    return pages


def _drop_stale(space: StrategySpace, groups: dict, pages: set[str]) -> None:
    """Delete the stored pages not in ``pages`` and the stored groups not in ``groups`` (a
    rebuild from scratch)."""
    stale = [i for i in store.page_ids(space) if i not in pages]
    if stale:
        store.delete_pages(space, stale)
    keep = {gid(*k) for k in groups}
    stale = [i for i in store.group_ids(space) if i not in keep]
    if stale:
        store.delete_groups(space, stale)


def resum(space: StrategySpace, *gs: Group) -> None:
    """The vector sum of each group in ``gs`` stored without it (it was no page, or a small
    one), from the snapshots of its trajectories that are about it, added in time order as
    curation added them. The snapshots are read without their text (and without their claims
    unless a group is an inventory: only claims name inventories) and only those about a group
    get a vector: a small page is rewritten by most sessions that touch it, and computing every
    snapshot's vector of its trajectories was a fifth of curation's time. The groups of one
    write are summed from one read of their trajectories and one of their snapshots (they
    share most of them: the session's own trajectories link to all its groups); at 30,000
    turns a read per group was ~8 reads of ~125 snapshots a session, a fifth of the wiki's
    time. Each group's sum is the same float64 numbers either way."""
    if not gs:
        return
    trajs = sorted(set().union(*(g.trajs for g in gs)))
    held = {t.id: t.snapshot_ids for t in store.trajectories(space, eq={"id": trajs},
                                                            columns=["id", "snapshot_ids"])}
    ids = sorted({i for t in trajs for i in held.get(t, ())})
    skip = {"text", "refs"} | (set() if any(g.kind == "inventory" for g in gs) else {"claims"})
    read = store.snapshots(space, eq={"id": ids}, columns=[c for c in SNAP_COLUMNS if c not in skip])
    about = {s.id: snap_keys(s) for s in read}
    wanted = {(g.kind, g.key) for g in gs}
    vec = {s.id: s for s in store.with_vectors(space, [s for s in read if about[s.id].keys() & wanted])}
    for g in gs:
        key = (g.kind, g.key)
        mine = {i for t in g.trajs for i in held.get(t, ())}
        g.v = np.zeros_like(g.v)
        # in the order of the read, as a read of this group's snapshots alone gave them
        for s in sorted((vec[r.id] for r in read if r.id in mine and r.id in vec
                         and key in about[r.id]), key=order_key):
            g.v += np.asarray(s.vector, dtype=np.float64)
        g.partial = False


def _refill(space: StrategySpace, g: Group) -> None:
    """Rebuild the buffer of newest current claims after revisions emptied it (rare)."""
    eq: dict[str, Any] = {"status": "active"}
    if len(g.trajs) <= 500:
        eq["trajectory_id"] = sorted(g.trajs)
    key = (g.kind, g.key)
    g.refill([c for c in store.claims(space, eq=eq) if key in claim_keys(c) and accepts(g, c)])
