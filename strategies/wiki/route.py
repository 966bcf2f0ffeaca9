"""Query-time routing: pages by S_p, candidate trajectories from their links, coverage-aware
selection of the top k. The paper's formulas were lost in extraction; our exact choices:

Page score, over the pages found by vector search, BM25 over page text, and exact key/subject
lookup of the query's entities and facets (top ``t`` = 15 kept, the index page never)::

    S_p = 0.35*sem + 0.25*lex + 0.20*ent + 0.10*fac + 0.10*temp
    sem = cos(q, page vector);  lex = BM25(q, page text) / max BM25 over the pages found
    ent = share of the query's entities (names, noun heads) the page is about (its key or
          subject) or mentions (its names), max of the two
    fac = share of the query's facets the page carries
    temp= 1 when a date span in the query overlaps the page's time span, else 0

Candidates C_q = union of L_p over the routed non-hub pages (``pages.HUB_SHARE``), at most
``MAX_CANDIDATES`` of them, those with the most page support (a choice for large namespaces:
at 100k turns the pages of two common names link ~5k trajectories, most of the namespace, and
reading and scoring them all cost ~0.2 s per attempt; on LoCoMo C_q stays far below the cap).
``routing="direct"`` skips the wiki: C_q = every trajectory (the paper's ablation).

Trajectory relevance, with turn-level evidence from the raw sources (BM25 + dense fused by RRF,
exactly as ``plain`` searches)::

    b(q,T) = 0.45*src + 0.25*sem + 0.20*route + 0.10*ent
    src  = best fused score of a turn of T / best fused score of any turn
    sem  = cos(q, centroid of T);  route = sum of S_p of routed pages linking T / max over C_q
    ent  = share of query entities among T's names, heads and speakers

Greedy selection of k (= 15): at each step take argmax over remaining T of
``b(q,T) + lam*cov(T | chosen) - mu*red(T, chosen)`` where ``cov`` is the share of T's coverage
units not yet covered (units: the sessions of T and the query-relevant entities/facets/items it
has; list/count/temporal/multi-hop intent doubles ``lam``) and ``red`` = max cosine between T's
centroid and a chosen centroid. lam = 0.15, mu = 0.15.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import dates as dt
from . import text as tx
from . import store
from .store import Page, Trajectory

if TYPE_CHECKING:
    from ..space_api import StrategySpace

LIST_RX = re.compile(r"\b(how many|how often|how much|which|what (?:kinds?|types?|sorts?)|list|"
                     r"activities|things|ways|events|hobbies|both|all|times|places|books|pets)\b")
TIME_RX = re.compile(r"\b(when|what (?:year|month|day|date|time)|how long|before|after|since)\b")
W_PAGE = {"sem": 0.35, "lex": 0.25, "ent": 0.20, "fac": 0.10, "temp": 0.10}
W_TRAJ = {"src": 0.45, "sem": 0.25, "route": 0.20, "ent": 0.10}
MAX_CANDIDATES = 500
PAGE_COLS = ["id", "type", "key", "title", "trajectory_ids", "names", "facets", "subject",
             "first_time", "last_time", "hub", "n_links"]
TRAJ_COLS = ["id", "title", "names", "heads", "facets", "speakers", "sessions", "source_ids",
             "snapshot_ids", "n", "first_time", "last_time", "vector"]


def query_features(query: str, ref_time=None) -> dict:
    names = [n.lower() for n in tx.named_entities(query)]
    heads = tx.noun_heads(query)
    toks = set(tx.tokens(query))
    spans = dt.resolve(query, ref_time) if ref_time is not None else []
    low = query.lower()
    return {"names": names, "heads": heads, "tokens": toks, "facets": tx.facets(query),
            "ents": set(names) | set(heads) | toks, "dates": spans,
            "list": bool(LIST_RX.search(low)), "temporal": bool(TIME_RX.search(low))}


def _overlap(span: dict, a, b) -> bool:
    if a is None or b is None:
        return False
    return span["start"] <= b.date().isoformat() and a.date().isoformat() <= span["end"]


@dataclass(frozen=True, slots=True)
class Routed:
    """A page routed to, with its score parts (``W_PAGE``'s and their sum ``S_p``)."""

    page: Page
    parts: dict[str, float]


def route_pages(space: StrategySpace, qv: np.ndarray, query: str, f: dict, t: int) -> list[Routed]:
    """The top-t non-index pages by S_p, each with its score parts."""
    found: dict[str, Page] = {}
    for r in store.nearest_pages(space, qv, 60, PAGE_COLS + ["vector"]):
        found[r.id] = r
    lex = store.page_bm25(space, query, 60)
    keys = sorted(f["names"] + f["heads"] + f["facets"])
    extra = set(lex) - set(found)
    rows = store.pages(space, eq={"key": keys}, columns=PAGE_COLS + ["vector"]) if keys else []
    if extra:
        rows += store.pages(space, eq={"id": sorted(extra)}, columns=PAGE_COLS + ["vector"])
    for r in rows:
        found.setdefault(r.id, r)
    top_lex = max(lex.values(), default=0.0) or 1.0
    out = []
    for r in found.values():
        if r.type == "index":
            continue
        v = np.asarray(r.vector, dtype=np.float32)
        about = {r.key.lower(), r.subject.lower()} | {k.lower() for k in r.key.split("|")}
        pn = {n.lower() for n in r.names}
        ents = f["names"] + f["heads"]
        ent = max(sum(e in about for e in ents), 0.5 * sum(e in pn for e in ents)) / len(ents) \
            if ents else 0.0
        fac = len(set(r.facets) & set(f["facets"])) / len(f["facets"]) if f["facets"] else 0.0
        if r.type == "topic" and r.key in f["facets"]:
            fac = 1.0
        temp = float(any(_overlap(s, r.first_time, r.last_time) for s in f["dates"]))
        p = {"sem": float(qv @ v), "lex": lex.get(r.id, 0.0) / top_lex, "ent": min(ent, 1.0),
             "fac": fac, "temp": temp}
        p["S_p"] = sum(W_PAGE[k] * p[k] for k in W_PAGE)
        out.append(Routed(r, {k: round(x, 4) for k, x in p.items()}))
    out.sort(key=lambda x: (-x.parts["S_p"], x.page.id))
    return out[:t]


def candidates(space: StrategySpace, routed: list[Routed], direct: bool,
               read=None) -> tuple[list[Trajectory], dict[str, float]]:
    """C_q (trajectory rows) and each trajectory's summed page support. ``read(ids, columns)``
    reads trajectory rows (default: from ``space``; wiki's recall passes its per-recall reads)."""
    support: dict[str, float] = {}
    if not direct:
        for x in routed:
            if x.page.hub:
                continue
            for tid in x.page.trajectory_ids:
                support[tid] = support.get(tid, 0.0) + x.parts["S_p"]
        ids = sorted(support, key=lambda t: (-support[t], t))[:MAX_CANDIDATES]
        rows = ((read or _read(space))(sorted(ids), TRAJ_COLS)) if ids else []
    else:
        rows = store.trajectories(space, columns=TRAJ_COLS)   # centroids as float32 arrays
    return rows, support


def _read(space: StrategySpace):
    return lambda ids, columns: store.trajectories(space, eq={"id": ids}, columns=columns)


def traj_keys(r: Trajectory) -> frozenset:
    """A trajectory's names, heads and speakers in lower case, and its facets."""
    return frozenset({x.lower() for x in r.names + r.heads + r.speakers} | set(r.facets))


def base_scores(rows, support, qv, f, turn_score: dict[str, float], keys=traj_keys) -> dict[str, dict]:
    """Each candidate's b (W_TRAJ over its parts). ``keys``: ``traj_keys``, or a reader that
    keeps what it made (wiki's recall: ``_Reads.keys``)."""
    top_turn = max(turn_score.values(), default=0.0) or 1.0
    top_sup = max(support.values(), default=0.0) or 1.0
    ents = set(f["names"]) | set(f["heads"])
    out = {}
    for r in rows:
        have = keys(r)
        p = {"src": max((turn_score.get(s, 0.0) for s in r.source_ids), default=0.0) / top_turn,
             "sem": float(qv @ r.vector), "route": support.get(r.id, 0.0) / top_sup,
             "ent": len(ents & have) / len(ents) if ents else 0.0}
        p["b"] = sum(W_TRAJ[k] * p[k] for k in W_TRAJ)
        out[r.id] = p
    return out


def units(r: Trajectory, f: dict) -> set:
    rel = {x.lower() for x in r.names + r.heads + r.facets} & (f["ents"] | set(f["facets"]))
    return {("session", s) for s in r.sessions} | {("item", x) for x in rel} | \
        {("head", h) for h in r.heads if f["list"]}


def select(rows, scores, f, k: int, lam: float = 0.15, mu: float = 0.15) -> list[dict]:
    """Greedy relevance + coverage gain - redundancy; returns chosen rows with score parts."""
    lam = lam * (2 if f["list"] or f["temporal"] else 1)
    by_id = {r.id: r for r in rows}
    left = sorted(by_id, key=lambda i: -scores[i]["b"])[:max(4 * k, 40)]
    covered: set = set()
    chosen: list[dict] = []
    # each candidate's units and its greatest similarity to the chosen ones, kept up to date as
    # rows are chosen (one matrix-vector product per choice, not one dot per pair and round)
    unit_of = {tid: units(by_id[tid], f) for tid in left}
    pos = {tid: n for n, tid in enumerate(left)}
    mat = np.asarray([by_id[tid].vector for tid in left]) if left else None
    nearest: np.ndarray | None = None   # None until something is chosen (redundancy 0)
    while left and len(chosen) < k:
        best, best_g, best_p = None, -1e9, {}
        for tid in left:
            u = unit_of[tid]
            cov = len(u - covered) / len(u) if u else 0.0
            red = float(nearest[pos[tid]]) if nearest is not None else 0.0
            g = scores[tid]["b"] + lam * cov - mu * red
            if g > best_g:
                best, best_g, best_p = tid, g, {"cov": round(cov, 4), "red": round(red, 4)}
        left.remove(best)
        covered |= unit_of[best]
        if mat is not None:
            sims = mat @ np.asarray(by_id[best].vector)
            nearest = sims if nearest is None else np.maximum(nearest, sims)
        chosen.append({"row": by_id[best], "gain": round(best_g, 4),
                       "parts": {**{k2: round(v, 4) for k2, v in scores[best].items()}, **best_p}})
    return chosen
