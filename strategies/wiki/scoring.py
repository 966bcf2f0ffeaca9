"""Final evidence scoring: every candidate turn gets relevance smoothed by its snapshot and
trajectory and supported by the wiki. Exact choice (tuned coarsely on the LoCoMo dev split)::

    turn(i) = base(i) + 0.4 * max_{j in T(i)} base(j) + 0.3 * max_{j in snap(i)} base(j)
              + 0.3 * route(T(i))
    base(i) = fused(i) / max fused + 0.1 * cos(q, i) + 0.2 * inv(i)

fused = BM25 + dense (+ the name-free query's dense list, + the named speakers' list)
reciprocal rank fusion (``search.rrf``) with k = 20 (sharper than plain's 60, so a strong hit
keeps its lead over smoothed neighbours), normalised by its maximum; inv(i) = 1 when a claim of
turn i is on an inventory page of a subject the query names with a facet the query has;
route(T) = summed S_p of routed pages linking T / max. For list/count queries a turn's score
drops by 0.02 per turn of its trajectory already ranked (complementary evidence first).

A message too long to quote whole that the search did not rank among its best
(``search.unsearched_long``) keeps its own ``base`` but not the lift of its snapshot,
trajectory and routing (:func:`unlift_unsearched`): its exchange's evidence is quoted on its own
merits, not its opening for the evidence's sake.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from ..search import BEST_HITS, best_searched, ranked_lists, rrf

if TYPE_CHECKING:
    from ..space_api import StrategySpace

RRF_K = 20
POOL_HITS, POOL_ROUTED = BEST_HITS, 40
W = {"content": 1.0, "speaker": 1.0, "traj": 0.4, "snap": 0.3, "route": 0.3, "cos": 0.1, "inv": 0.2,
     "list_red": 0.02}


def fused_scores(parts: dict[str, dict], k: int = RRF_K) -> dict[str, float]:
    """The turn search's lists fused again with wiki's k, each score over the best one."""
    lists = ranked_lists(parts, ("bm25", "dense", "content", "speaker"))
    s = {i: p["score"] for i, p in rrf(lists, k=k, weights={"content": W["content"],
                                                           "speaker": W["speaker"]}).items()}
    top = max(s.values(), default=0.0) or 1.0
    return {i: v / top for i, v in s.items()}


def score_turns(space: StrategySpace, qv, f: dict, parts: dict, support: dict[str, float],
                m, vectors=None, selected: set[str] | None = None,
                sel_w: float = 0.0) -> tuple[list[str], dict]:
    """The pool scored: the searched turns, every turn of a trajectory holding one of the best
    of them or among the best routed to (``support``), and the turns with an inventory claim the
    query asks about. Other turns would score at most the smoothing of their own weak cosine
    (< 0.2 of a top hit), below
    the 2x-budget cut of every caller; leaving them out keeps recall independent of the
    namespace's size (``turnmap.py``; ``m``: its ``TurnMaps``). ``vectors(ids)``: the ids that
    exist, in order, and their vectors as a matrix (default ``Space.sources.matrix``)."""
    t_of, s_of = m.t_of, m.s_of
    names, fq = set(f["names"]), set(f["facets"])
    inv = {sid: 1.0 for n in names for sid, fac in m.inv.get(n, ()) if fac & fq}
    # bounded so the pool does not grow with the namespace: the trajectories of the best
    # POOL_HITS searched turns and the POOL_ROUTED best-supported routed ones (at 100k turns
    # routed pages link hundreds of trajectories, ~20k turns, whose vectors cost seconds to read)
    best = best_searched(parts)
    routed = sorted(support, key=lambda t: (-support[t], t))[:POOL_ROUTED]
    trajs = {t_of[i] for i in best if i in t_of} | set(routed)
    if sel_w and selected:
        trajs |= selected
    pool = set(parts) | set(inv) | {i for t in trajs for i in m.members.get(t, ())}
    ids, mat = (vectors or space.sources.matrix)(sorted(pool))
    fused = fused_scores(parts)
    # side by side over the pool (up to ~4,000 turns at scale; one dict per turn and one dot
    # per turn cost ~40 ms a recall at 30k turns): the same sums, in the same order, as floats
    if not ids:
        return [], {"t_of": t_of, "parts": {}}
    cos = (mat @ qv).astype(np.float64)
    base = (np.fromiter((fused.get(i, 0.0) for i in ids), np.float64, len(ids)) + W["cos"] * cos
            + W["inv"] * np.fromiter((inv.get(i, 0.0) for i in ids), np.float64, len(ids)))
    t_ids = [t_of.get(i, i) for i in ids]
    s_ids = [s_of.get(i, i) for i in ids]
    tmax, smax = _group_max(base, t_ids), _group_max(base, s_ids)
    top_sup = max(support.values(), default=0.0) or 1.0
    route = np.fromiter((support.get(t, 0.0) for t in t_ids), np.float64, len(ids)) / top_sup
    score = base + W["traj"] * tmax + W["snap"] * smax + W["route"] * route
    sel = np.zeros(len(ids), dtype=bool)
    if sel_w and selected:
        sel = np.fromiter((t in selected for t in t_ids), bool, len(ids))
        score = np.where(sel, score + sel_w, score)
    cols = zip(ids, base.tolist(), tmax.tolist(), smax.tolist(), route.tolist(), score.tolist(),
               sel.tolist())
    out = {i: ({"base": b, "traj": t, "snap": sn, "route": r, "score": sc, "sel": 1.0} if se else
               {"base": b, "traj": t, "snap": sn, "route": r, "score": sc})
           for i, b, t, sn, r, sc, se in cols}
    order = [i for _, i in sorted(zip((-score).tolist(), ids))]
    if f.get("list"):
        order = _diversify(order, out, t_of)
    return order, {"t_of": t_of, "parts": out}


def unlift_unsearched(order: list[str], info: dict, drop: set[str], listing: bool) -> list[str]:
    """``order`` again after each turn of ``drop`` (``search.unsearched_long``) falls to its own
    ``base`` (``info``: :func:`score_turns`' second result, whose scores are changed in place).
    ``listing``: a list/count query, re-diversified."""
    scored = info["parts"]
    drop = drop & scored.keys()
    if not drop:
        return order
    for i in drop:
        scored[i] = {**scored[i], "score": scored[i]["base"]}
    out = sorted(order, key=lambda i: -scored[i]["score"])   # stable: ties keep their order
    return _diversify(out, scored, info["t_of"]) if listing else out


def _group_max(values: np.ndarray, keys: list[str]) -> np.ndarray:
    """For each position, the greatest of ``values`` over the positions sharing its key, and
    never below 0 (a group's running maximum starts at 0)."""
    codes: dict[str, int] = {}
    idx = np.fromiter((codes.setdefault(k, len(codes)) for k in keys), np.int64, len(keys))
    best = np.zeros(len(codes))
    np.maximum.at(best, idx, values)
    return best[idx]


def _diversify(order: list[str], parts: dict, t_of: dict) -> list[str]:
    """The first 250 of ``order`` re-ranked greedily: each step takes the turn of the highest
    score less ``list_red`` per turn already taken from its trajectory (ties: the earlier in
    ``order``). A turn's value only falls as its trajectory is drawn on, so a heap with lazy
    re-scoring picks exactly what a scan of all remaining turns would, in O(n log n)."""
    head, rest = order[:250], order[250:]
    cnt: dict[str, int] = defaultdict(int)
    heap = [(-parts[i]["score"], n, 0) for n, i in enumerate(head)]
    heapq.heapify(heap)
    chosen = []
    while heap:
        _, n, seen = heapq.heappop(heap)
        i = head[n]
        g = t_of.get(i, i)
        if cnt[g] != seen:   # its trajectory was drawn on since: score it again
            heapq.heappush(heap, (-(parts[i]["score"] - W["list_red"] * cnt[g]), n, cnt[g]))
            continue
        chosen.append(i)
        cnt[g] += 1
    return chosen + rest
