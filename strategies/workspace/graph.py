"""The thread store and the thread graph G_H (TrawMem eq. 2-3), kept in two derived tables.

``ws_threads``: one row per thread and segmentation scheme (``topic`` is what recall uses; the
``fixed`` rows exist only for the paper's "Fixed Seg." ablation, so both schemes are curated).
``ws_edges``: directed rows (every edge is stored in both directions) with weight ``w_H``.

Choices the paper leaves open:
- **Adjacent edges** join consecutive threads of a session, and the last thread of a session to
  the first of the next session in time ("adjacent in source order"); their weight is
  ``max(ADJ_FLOOR, cos(h_j, h_k))``: order alone is evidence of relatedness, closeness adds to it.
- **Semantic edges** join each thread to its ``K_SEM`` nearest heads (other threads of the same
  scheme, any session) with ``cos >= SEM_MIN``; weight ``cos(h_j, h_k)``. Incremental curation
  adds them from the new session's side only (a popular old thread can exceed ``K_SEM``);
  ``rebuild_edges`` (run by ``consolidate``) recomputes the symmetric k-NN graph from scratch.
- Weights live in [0, 1], as eq. 4 mixes them with scores in (0, 1].
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..base import spoken
from .segment import segment
from .store import Edge, Thread, nearest_threads, threads, write_session
from . import store
from ...storage.rows import Source

if TYPE_CHECKING:
    from ..space_api import StrategySpace
    from ..base import Env

log = logging.getLogger(__name__)

SCHEMES = ("topic", "fixed")
ADJ_FLOOR, K_SEM, SEM_MIN = 0.5, 4, 0.55


def thread_id(namespace: str, session_id: str, scheme: str, idx: int) -> str:
    h = hashlib.sha1(f"{namespace}\x00{session_id}".encode()).hexdigest()[:12]
    return f"thr_{h}_{scheme[0]}{idx:03d}"


def _iso(ts) -> str:
    return ts.isoformat() if ts is not None else ""


def build_threads(env: Env, session_id: str) -> list[Thread]:
    """Thread rows (both schemes) for one session, from its sources and their vectors."""
    sources = spoken(env.space.sources.by_session(session_id))
    if not sources:
        return []
    vecs = env.space.sources.vectors([s.id for s in sources])
    sources = [s for s in sources if s.id in vecs]
    mat = np.stack([vecs[s.id] for s in sources]) if sources else np.zeros((0, env.space.vector_dim))
    speakers = [s.speaker for s in sources]
    texts = [s.text for s in sources]
    rows = []
    for scheme in SCHEMES:
        for k, seg in enumerate(segment(mat, speakers, texts, scheme)):
            part = sources[seg.start:seg.end]
            rows.append(Thread(
                thread_id(env.space.namespace, session_id, scheme, k),
                session_id=session_id, scheme=scheme, idx=k,
                seq_start=int(part[0].seq), seq_end=int(part[-1].seq),
                source_ids=[s.id for s in part], head=seg.head, head_by="extractive",
                t_start=_iso(part[0].timestamp), t_end=_iso(part[-1].timestamp),
                vector=seg.vector,
            ))
    if env.llm is not None:
        rows = llm_heads(env, rows, {s.id: s for s in sources})
    return rows


def llm_heads(env: Env, rows: list[Thread], by_id: dict[str, Source]) -> list[Thread]:
    """Let the configured LLM write each topic thread's head (the paper's a_j); on any failure
    the extractive head stays. h_j = normalise(centroid + embed(head)) keeps the unit evidence."""
    llm = env.llm
    if llm is None:
        return rows
    system = ("Summarise this excerpt of a conversation in one factual sentence (who, what, when). "
              "Output only the sentence.")
    out = []
    for r in rows:
        out.append(r)
        if r.scheme != "topic":
            continue
        lines = "\n".join(f"{by_id[i].speaker or '-'}: {by_id[i].text}" for i in r.source_ids)
        try:
            head = " ".join(llm.complete(system, lines).split())[:300]
        except Exception:  # an LLM only improves heads: never fail curation for it
            log.warning("LLM head failed for %s; keeping the extractive head", r.id, exc_info=True)
            continue
        if head:
            v = np.asarray(r.vector) + np.asarray(env.embed([head])[0])
            out[-1] = replace(r, head=head, head_by="llm",
                              vector=(v / np.linalg.norm(v)).astype(np.float32))
    return out


def _edge(scheme: str, a: Thread, b: Thread, w: float, etype: str) -> list[Edge]:
    w = float(min(1.0, max(0.0, w)))
    return [Edge(f"{scheme}|{x.id}|{y.id}", scheme, x.id, y.id, x.session_id, y.session_id, w, etype)
            for x, y in ((a, b), (b, a))]


def _cos(a: Thread, b: Thread) -> float:
    return float(np.asarray(a.vector) @ np.asarray(b.vector))


def session_order(space: StrategySpace) -> list[str]:
    times = space.sessions.times()
    return sorted(times, key=lambda sid: (str(times[sid] or ""), sid))


def edges_for_session(env: Env, session_id: str, new: list[Thread], order: list[str],
                      cross: bool = True) -> list[Edge]:
    """Edges of the new threads of ``session_id``: adjacency (within and to the neighbouring
    sessions in time) and, with ``cross``, k-nearest semantic edges to other threads."""
    space, out = env.space, []
    for scheme in SCHEMES:
        mine = sorted((r for r in new if r.scheme == scheme), key=lambda r: r.idx)
        if not mine:
            continue
        for a, b in zip(mine, mine[1:]):
            out += _edge(scheme, a, b, max(ADJ_FLOOR, _cos(a, b)), "adjacent")
        pos = order.index(session_id) if session_id in order else -1
        for other, first_mine in ((pos - 1, True), (pos + 1, False)):
            if pos < 0 or not 0 <= other < len(order):
                continue
            theirs = threads(space, eq={"session_id": order[other], "scheme": scheme},
                             columns=store.THREAD_COLUMNS)
            if theirs:
                t = max(theirs, key=lambda r: r.idx) if first_mine else min(theirs, key=lambda r: r.idx)
                m = mine[0] if first_mine else mine[-1]
                out += _edge(scheme, t, m, max(ADJ_FLOOR, _cos(t, m)), "adjacent")
        if not cross:
            continue
        own = {r.id for r in mine}
        found = nearest_threads(space, [np.asarray(a.vector) for a in mine], K_SEM + len(mine),
                                scheme)
        for a, near in zip(mine, found):
            near = [(r, sim) for r, sim in near if r.id not in own and sim >= SEM_MIN][:K_SEM]
            for b, sim in near:
                out += _edge(scheme, a, b, sim, "semantic")
    return out


def rebuild_edges(every: list[Thread]) -> list[Edge]:
    """The whole graph from the thread rows: adjacency in time order and symmetric k-NN."""
    out: dict[str, Edge] = {}
    for scheme in SCHEMES:
        rows = sorted((r for r in every if r.scheme == scheme),
                      key=lambda r: (r.t_start, r.session_id, r.idx))
        for a, b in zip(rows, rows[1:]):
            for e in _edge(scheme, a, b, max(ADJ_FLOOR, _cos(a, b)), "adjacent"):
                out[e.id] = e
        if len(rows) < 2:
            continue
        mat = np.stack([np.asarray(r.vector, dtype=np.float32) for r in rows])
        sim = mat @ mat.T
        np.fill_diagonal(sim, -1.0)
        for i in range(len(rows)):
            for j in np.argsort(-sim[i])[:K_SEM]:
                if sim[i, j] >= SEM_MIN:
                    for e in _edge(scheme, rows[i], rows[int(j)], float(sim[i, j]), "semantic"):
                        out.setdefault(e.id, e)   # adjacency wins when both exist
    return list(out.values())


def curate_session(env: Env, session_id: str) -> dict:
    """Re-segment one session and update the graph around it (idempotent)."""
    space = env.space
    rows = write_session(space, session_id, build_threads(env, session_id))
    if not rows:
        return {"threads": 0, "edges": 0, "rows": [], "edge_rows": []}
    edges = edges_for_session(env, session_id, rows, session_order(space))
    store.add_edges(space, edges)
    return {"threads": len(rows), "edges": len(edges), "rows": rows, "edge_rows": edges}
