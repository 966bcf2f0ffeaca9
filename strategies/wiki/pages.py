"""The Memory Wiki: index, entity, topic and inventory pages, rebuilt as memory grows.

A page is (type eta, title y, content h, linked trajectories L_p). The paper's construction
formula was lost; our deterministic choice, recomputed from the trajectories and every claim
(active C^active and historical C^hist, with their source anchors A) after each curation:

- **entity** pages: every named entity in >= 2 claims, every speaker, and every noun head in
  >= 2 trajectories (the "repeated noun phrases"). L_p = trajectories mentioning it. Content:
  current claims (newest first) then history (revised / deprecated, with what replaced them).
- **topic** pages: one per facet (a thematic cluster: trajectories sharing it) and one per
  session (the events of that day: its trajectories and dated claims).
- **inventory** pages: (subject, facet) with >= 2 claims from >= 2 snapshots, for list-like
  facets (``text.INVENTORY_FACETS``): one line per item, with its date and ref, and a count.
- **index**: the directory of all pages. Non-index coverage is guaranteed: every trajectory has
  a session topic page, so none is reachable only through the index.
- A page linking more than ``HUB_SHARE`` of all trajectories (e.g. a speaker's page in a two-person
  chat) is a *hub*: readable and routable, but its links do not enter the candidate universe.
- Page vector: the L2-normalised mean of its trajectories' centroids. Page ``text`` (title +
  content) is what BM25 routing searches.
With an LLM the content could be rewritten as prose; we keep the claim lists verbatim either way
(the paper warns that summaries shift salience), so page text is always grounded in claims.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pyarrow as pa

from . import dates as dt, text as tx
from .store import CLAIM, PAGE, TRAJ, TS, VEC

L, S = pa.list_(pa.string()), pa.string()
PAGE_SCHEMA = pa.schema([("id", S), ("namespace", S), ("type", S), ("key", S), ("title", S),
                         ("text", S), ("trajectory_ids", L), ("names", L), ("facets", L),
                         ("subject", S), ("first_time", TS), ("last_time", TS),
                         ("n_links", pa.int64()), ("hub", pa.bool_()), ("vector", VEC)])
HUB_SHARE = 0.4
MAX_LINES = 40


def page_id(kind: str, key: str) -> str:
    return f"wiki-{kind}-{tx.slug(key)}"


def claim_line(c: dict) -> str:
    when = ""
    ds = json.loads(c["dates"]) if c.get("dates") else []
    if ds:
        when = f" (≈{dt.label(ds[0])})"
    elif c.get("timestamp"):
        when = f" ({c['timestamp'][:10]})"
    return f"- {c['subject']}: {c['text']}{when} [{c['ref'] or c['source_id']}]"


def content(title: str, claims: list[dict], by_id: dict) -> str:
    cur = sorted((c for c in claims if c["status"] == "active"), key=lambda c: c["timestamp"] or "",
                 reverse=True)
    old = [c for c in claims if c["status"] != "active"]
    lines = [f"# {title}", f"{len(cur)} current claims, {len(old)} historical."] + \
        [claim_line(c) for c in cur[:MAX_LINES]]
    if old:
        lines.append("## history")
        for c in sorted(old, key=lambda c: c["timestamp"] or "")[:MAX_LINES // 2]:
            new = by_id.get(c["by"])
            lines.append(f"{claim_line(c)} — {c['status']}" +
                         (f" by: {new['text']} [{new['ref']}]" if new else ""))
    return "\n".join(lines)


def rebuild(space) -> dict:
    """Recompute every page from the stored trajectories and claims; drop stale pages."""
    trajs = space.rows(TRAJ, columns=["id", "names", "heads", "facets", "speakers", "sessions",
                                      "first_time", "last_time", "vector", "title"])
    claims = space.rows(CLAIM)
    if not trajs:
        old = [r["id"] for r in space.rows(PAGE, columns=["id"])]
        if old:
            space.delete_rows(PAGE, {"id": old})
        return {"pages": 0}
    tv = {t["id"]: np.asarray(t["vector"], dtype=np.float32) for t in trajs}
    by_id = {c["id"]: c for c in claims}
    groups: dict[tuple[str, str], dict] = {}

    def add(kind, key, title, tid, claim=None, subject=""):
        key = key.lower() if kind == "entity" else key
        g = groups.setdefault((kind, key), {"title": title, "trajs": set(), "claims": {},
                                            "subject": subject})
        g["trajs"].add(tid)
        if claim is not None:
            g["claims"][claim["id"]] = claim

    name_claims = defaultdict(int)
    for c in claims:
        for n in c["names"]:
            name_claims[n] += 1
    head_trajs = defaultdict(set)
    for t in trajs:
        for h in t["heads"]:
            head_trajs[h].add(t["id"])
    sess_time = {}
    for t in trajs:
        for sp in t["speakers"]:
            if sp:
                add("entity", sp, sp, t["id"])
        for n in t["names"]:
            if name_claims[n] >= 2:
                add("entity", n, n, t["id"])
        for h in t["heads"]:
            if len(head_trajs[h]) >= 2:
                add("entity", h, h, t["id"])
        for f in t["facets"]:
            add("topic", f, f"topic: {f}", t["id"])
        for sid in t["sessions"]:
            add("topic", f"session {sid}", f"events of session {sid}", t["id"])
    for c in claims:
        tid = c["trajectory_id"]
        for key in [c["speaker"], c["subject"], *c["names"], *c["heads"]]:
            g = groups.get(("entity", key.lower())) if key else None
            if g is not None and tid in g["trajs"]:
                g["claims"][c["id"]] = c
        for f in c["facets"]:
            add("topic", f, f"topic: {f}", tid, c)
            if f in tx.INVENTORY_FACETS:
                add("inventory", f"{c['subject']}|{f}", f"{c['subject']} · {f}", tid, c,
                    c["subject"])
        sid = c["session_id"]
        if c["timestamp"] and sid not in sess_time:
            sess_time[sid] = c["timestamp"][:10]
            groups[("topic", f"session {sid}")]["title"] = f"events of {sess_time[sid]} ({sid})"
        if c["dates"] != "[]" or "events" in c["facets"]:
            add("topic", f"session {sid}", "", tid, c)
    n_all = len(trajs)
    tmeta = {t["id"]: t for t in trajs}
    rows, seen = [], set()
    for (kind, key), g in sorted(groups.items()):
        if kind == "inventory" and len({c["snapshot_id"] for c in g["claims"].values()}) < 2:
            continue
        links = sorted(g["trajs"])
        cl = list(g["claims"].values())
        v = np.sum([tv[t] for t in links], axis=0)
        times = [tmeta[t]["first_time"] for t in links if tmeta[t]["first_time"] is not None] + \
            [tmeta[t]["last_time"] for t in links if tmeta[t]["last_time"] is not None]
        body = content(g["title"], cl, by_id)
        if kind == "inventory":
            body += f"\ncount: {len(cl)} mentions in {len({c['session_id'] for c in cl})} sessions"
        pid = page_id(kind, key)
        while pid in seen:
            pid += "-x"
        seen.add(pid)
        rows.append({"id": pid, "type": kind, "key": key, "title": g["title"],
                     "text": body, "trajectory_ids": links,
                     "names": sorted({n for c in cl for n in c["names"]})[:50],
                     "facets": sorted({f for c in cl for f in c["facets"]}),
                     "subject": g["subject"], "first_time": min(times) if times else None,
                     "last_time": max(times) if times else None, "n_links": len(links),
                     "hub": len(links) > HUB_SHARE * n_all and n_all >= 10,
                     "vector": v / (np.linalg.norm(v) or 1.0)})
    rows.append(index_page(rows, list(tv), tv))
    keep = {r["id"] for r in rows}
    stale = [r["id"] for r in space.rows(PAGE, columns=["id"]) if r["id"] not in keep]
    if stale:
        space.delete_rows(PAGE, {"id": stale})
    space.upsert(PAGE, PAGE_SCHEMA, rows)
    return {"pages": len(rows)}


def index_page(rows: list[dict], tids: list[str], tv: dict) -> dict:
    by_type = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)
    lines = ["# index", f"{len(rows)} pages over {len(tids)} trajectories."]
    for kind in ("entity", "inventory", "topic"):
        lines.append(f"## {kind} pages")
        lines += [f"- {r['title']} ({r['n_links']} trajectories) -> {r['id']}"
                  for r in sorted(by_type[kind], key=lambda r: -r["n_links"])]
    v = np.sum(list(tv.values()), axis=0)
    return {"id": "wiki-index", "type": "index", "key": "index", "title": "index",
            "text": "\n".join(lines), "trajectory_ids": sorted(tids), "names": [], "facets": [],
            "subject": "", "first_time": None, "last_time": None, "n_links": len(tids),
            "hub": True, "vector": v / (np.linalg.norm(v) or 1.0)}
