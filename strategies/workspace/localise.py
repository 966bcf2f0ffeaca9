"""The localisation step of a workspace recall (TrawMem section 4.2): the seed threads, by r0
and (hybrid seeding) the threads holding the best searched turns, then their neighbourhood H_q
by propagation (eq. 4). ``recall.py`` takes it from there to the rendered workspace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..search import search_turns, turn_search
from .select import propagate

if TYPE_CHECKING:
    from ..base import Env, RecallRequest
    from .cache import Snapshot
    from .strategy import WorkspaceOptions


class _Edges:
    """The neighbour lists the walk reads, as (thread, weight), without semantic edges when
    ``no_cross``. Filtered per looked-up thread: the walk touches a few hundred threads, and
    rebuilding every list of the graph cost ~70 ms per recall at 100k units (19k threads)."""

    def __init__(self, adj: dict[str, list], no_cross: bool):
        self.adj, self.no_cross = adj, no_cross

    def get(self, t: str, default=()):
        nb = self.adj.get(t)
        if nb is None:
            return default
        return [(k, w) for k, w, e in nb if not (self.no_cross and e == "semantic")]


def _seeds(env: Env, request, s: WorkspaceOptions, snap: Snapshot, scheme, qv):
    """The seed threads: the ``seeds`` best by r0, then the threads holding the best searched
    turns. r0 is computed for every thread as arrays (a dict and a sort over every thread of
    the namespace cost milliseconds per recall at 30k turns, ~10k threads) and returned for
    the seeds only, the threads the propagation and the trace read it for."""
    ids, mat, at = snap.ids[scheme], snap.mats[scheme], snap.position(scheme)
    sim = mat @ qv
    why = {}
    lexical = []
    parts = {}
    if s.seeding == "hybrid" or s.affinity != "dense":
        order, parts = _search(env, request, qv, s.search_n, snap, s)
    if s.seeding == "hybrid":
        owner = snap.unit_thread[scheme]
        for sid in order:               # d_idx: the head or the thread's best dense-hit unit
            t = owner.get(sid)
            if t is not None and parts[sid].get("cosine") is not None:
                sim[at[t]] = max(float(sim[at[t]]), parts[sid]["cosine"])
        for sid in order[:s.lex_seeds]:
            t = owner.get(sid)
            if t is not None and t not in lexical:
                lexical.append(t)
    r0 = 1.0 / (1.0 + (1.0 - sim.astype(np.float64)))
    seeds = [ids[n] for n in _best(r0, ids, s.seeds)]
    for t in seeds:
        why[t] = "top r0"
    for t in lexical:
        if t not in why:
            seeds.append(t)
            why[t] = "holds a top BM25+dense turn"
        else:
            why[t] += " and holds a top BM25+dense turn"
    return seeds, {t: float(r0[at[t]]) for t in seeds}, why, parts


def _best(score: np.ndarray, ids: list[str], k: int) -> list[int]:
    """Positions of the ``k`` highest scores, ties by id: exactly ``sorted(ids, key=(-score,
    id))[:k]``, sorting only the scores that can be among them."""
    if k <= 0 or not len(ids):
        return []
    if k < len(ids):
        kth = np.partition(score, len(score) - k)[len(score) - k]
        cand = np.flatnonzero(score >= kth)
    else:
        cand = np.arange(len(ids))
    return sorted(cand.tolist(), key=lambda n: (-score[n], ids[n]))[:k]


def _search(env: Env, request, qv, n, snap: Snapshot, s: WorkspaceOptions):
    """``search.search_turns`` with the query vector already computed and the speakers of
    all dense hits read from the snapshot's cached rows; ``strip_names=0`` searches the query
    as it is.
    Every source vector embeds "speaker: text", so the query's name pulls the first dense list
    towards all of that speaker's turns; the name-free list ranks by what is asked about."""
    return search_turns(
        env, request, n, names=bool(s.strip_names), content_w=s.content_dense,
        speaker_w=s.speaker_dense,
        speaker_rows=lambda ids: list(snap.unit_rows(env.space, ids)[0].values()),
        turns=turn_search(env, request, n, qv))


@dataclass
class Walk:
    """The localisation: the seed threads (their r0 and why each is a seed), the search's
    scores by turn, the edges walked, and the neighbourhood H_q (r~ and hop of each thread)."""

    seeds: list[str]
    r0: dict[str, float]
    why: dict[str, str]
    parts: dict
    adj: _Edges
    r_tilde: dict[str, float]
    hop: dict[str, int]


def localise(env: Env, request: RecallRequest, s: WorkspaceOptions, snap: Snapshot,
             scheme: str, qv: np.ndarray) -> Walk:
    """The seed threads, then their neighbourhood H_q by propagation (eq. 4)."""
    seeds, r0, why, parts = _seeds(env, request, s, snap, scheme, qv)
    adj_all = snap.adj.get(scheme, {})
    adj = _Edges(adj_all, bool(s.no_cross))
    max_threads = max(s.max_threads, len(seeds))
    r_tilde, hop = propagate(r0, seeds, adj, s.hops, max_threads, s.gamma)
    return Walk(seeds, r0, why, parts, adj, r_tilde, hop)
