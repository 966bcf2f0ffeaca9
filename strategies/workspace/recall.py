"""One workspace recall (TrawMem section 4.2), from the query to the rendered workspace.

Steps and their trace entries (``explain(recall_id)`` shows the trace): ``seeds`` (threads with
r0 and why they were seeds), ``neighbourhood`` (every thread of H_q with its propagated score
r~, hop and size; heads stay out of the log, ``explain(thread_id)`` shows them), ``demand``
(x_q and delta_q), ``chosen`` (each unit with its roles rho, phi, alpha, priority pi, marginal
gain and its parts, phase), ``left_out`` (the best candidates not chosen, why, with the same
scores, and their total), counts and timings.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..aliases import speaker_aliases
from ..base import Item, RecallRequest, Recollection
from ..frame import CLOSE, OPEN, one_line
from ..render import focused, quote_width
from ..search import source_ref, unsearched_long
from ..speakers import speaker_match
from . import roles
from .localise import Walk, localise
from .select import greedy, kernel, path_costs, priorities
from .strategy import assemble, line_costs

if TYPE_CHECKING:
    from ...storage.rows import Source
    from ..base import Env
    from .cache import Snapshot
    from .strategy import WorkspaceOptions


LEFT_OUT_SHOWN = 60   # the trace lists the best left-out candidates (by affinity), and the total


@dataclass
class _Units:
    """The candidate units U_q, in thread order, and their scores."""

    ids: list[str]
    thread_of: list[str]
    rows: list[Source]
    texts: list[str]
    alpha_own: np.ndarray
    alpha: np.ndarray
    rho: np.ndarray
    phi: np.ndarray
    pi: np.ndarray

    def view(self, i: int) -> dict:
        """Unit ``i`` as the trace shows it."""
        return {"id": self.ids[i], "ref": self.rows[i].ref, "thread": self.thread_of[i],
                "roles": {r: round(float(x), 4) for r, x in zip(roles.ROLES, self.rho[i])},
                "role": roles.ROLES[int(np.argmax(self.rho[i]))], "phi": round(float(self.phi[i]), 4),
                "alpha": round(float(self.alpha_own[i]), 4),
                "alpha_ctx": round(float(self.alpha[i]), 4), "pi": round(float(self.pi[i]), 5)}


def workspace_recall(env: Env, request: RecallRequest, s: WorkspaceOptions, snap: Snapshot,
                     scheme: str, t0: float) -> Recollection:
    timing = {}
    qv = np.asarray(env.embed_query(request.query), dtype=np.float64)
    timing["embed_ms"] = round(1000 * (time.perf_counter() - t0), 1)
    walk = localise(env, request, s, snap, scheme, qv)
    th_ids = list(walk.r_tilde)
    timing["localise_ms"] = round(1000 * (time.perf_counter() - t0), 1)

    unit_ids, thread_of, pos, rows, vecs = _candidates(env, request, snap, th_ids)
    n = len(unit_ids)
    timing["fetch_ms"] = round(1000 * (time.perf_counter() - t0), 1)
    if n == 0:
        return Recollection(context="", items=[], sources=[], abstain=True,
                            route_reason="workspace: no candidate units", trace={"timing": timing})
    E = np.stack([vecs[u] for u in unit_ids]).astype(np.float64)   # float64: OpenBLAS
    # sgemm threading costs tens of ms on a busy two-core machine; dgemm of this size takes ~1 ms
    texts = [rows[u].text for u in unit_ids]
    alpha_own = _affinity(env, request, s, E @ qv, walk.parts, unit_ids, rows)
    own = unsearched_long((rows[u] for u in unit_ids), walk.parts)
    alpha = _inherit(s, alpha_own, thread_of, [u in own for u in unit_ids])

    # roles (eq. 5)
    conditioned = not s.no_roles
    delta = roles.demand(request.query, conditioned)
    degree = {t: len(walk.adj.get(t, ())) for t in th_ids}
    feats = roles.unit_features(alpha, texts, thread_of, pos, degree, walk.hop, max(s.hops, 1))
    rho, phi = roles.assign(delta, feats, conditioned)

    # cost, priority (eq. 6-7)
    t_at = {t: i for i, t in enumerate(th_ids)}
    tidx = np.array([t_at[t] for t in thread_of])
    dist = path_costs(th_ids, walk.adj)
    b_q = max(1, min(s.units, n))
    w, pi, cost = priorities(np.array([walk.r_tilde[t] for t in th_ids]), dist[:, tidx], alpha,
                             phi, b_q, s.lam_m, s.lam_r, s.tau)
    mass = np.bincount(tidx, weights=pi, minlength=len(th_ids))
    multi = not s.no_multi
    K = kernel(E, tidx, "identity" if s.identity_k else "structured", multi)

    # greedy (eq. 8-9) under B_q units, then (fill) the token budget
    # the unit cache keeps a long message's first-read passage: quote the best one so far
    width = quote_width(request.quote_tokens)
    cand_rows = focused(env.space.sources.with_spans([rows[u] for u in unit_ids]), request.query, width)
    costs, first = line_costs(cand_rows, width)
    limit = request.budget_tokens * 4 - len(OPEN) - len(CLOSE)
    chosen, left = greedy(K, pi, rho, delta, alpha, tidx, mass, costs, first,
                          [r.session_id for r in cand_rows], limit, b_q, bool(s.fill), multi)
    timing["select_ms"] = round(1000 * (time.perf_counter() - t0), 1)
    units = _Units(unit_ids, thread_of, cand_rows, texts, alpha_own, alpha, rho, phi, pi)
    return _recollection(request, s, snap, walk, units, delta, chosen, left, width, limit, b_q,
                         timing)


def _recollection(request: RecallRequest, s: WorkspaceOptions, snap: Snapshot, walk: Walk,
                  units: _Units, delta: np.ndarray, chosen: list, left: dict, width: int,
                  limit: int, b_q: int, timing: dict) -> Recollection:
    """The workspace of the ``chosen`` units, rendered (with their threads' heads if asked
    for), its items and sources, and the trace (not for a ranking-only recall)."""
    picked: list[Source] = [units.rows[i] for i, *_ in chosen]
    heads = []
    if s.heads:
        heads = [one_line(snap.threads[t].head)
                 for t in dict.fromkeys(units.thread_of[i] for i, *_ in chosen)]
    context, verbatim = assemble(picked, heads, request.budget_tokens * 4, width)
    if not picked:
        context = ""
    items = [Item(id=units.ids[i], kind="unit", text=units.texts[i], score=round(g, 5),
                  role=roles.ROLES[int(np.argmax(units.rho[i]))], timestamp=units.rows[i].timestamp,
                  source_ids=[units.ids[i]]) for i, g, _, _ in chosen]
    sources = [source_ref(r, width) for r in picked if r.id in verbatim]
    used_threads = list(dict.fromkeys(units.thread_of[i] for i, *_ in chosen))
    reason = (f"workspace: {len(walk.seeds)} seed threads, {len(walk.r_tilde)} in the "
              f"neighbourhood (H={s.hops}), {len(units.ids)} candidates, {len(chosen)} units from "
              f"{len(used_threads)} threads")
    if request.ranking_only:   # auto's vote: the per-unit trace below is not kept (7 ms)
        return Recollection(context=context, items=items, sources=sources, abstain=not picked,
                            trace={"timing": timing}, route_reason=reason)
    budget = {"tokens": request.budget_tokens, "chars_allowed": limit + len(OPEN) + len(CLOSE),
              "chars_used": len(context), "units_B": b_q}
    trace = _trace(request, s, snap, walk, units, delta, chosen, left, len(used_threads), budget,
                   timing)
    return Recollection(context=context, items=items, sources=sources, abstain=not picked,
                        trace=trace, route_reason=reason)


def _trace(request: RecallRequest, s: WorkspaceOptions, snap: Snapshot, walk: Walk,
           units: _Units, delta: np.ndarray, chosen: list, left: dict, threads_used: int,
           budget: dict, timing: dict) -> dict:
    """The recall's trace (the module docstring lists its entries)."""
    return {
        "method": "TrawMem workspace: seed threads -> eq.4 propagation -> roles (eq.5) -> "
                  "cost/priority (eq.6-7) -> greedy J_q (eq.8-9)",
        "settings": asdict(s),
        "seeds": [{"thread": t, "r0": round(walk.r0[t], 4), "why": walk.why[t]} for t in walk.seeds],
        "neighbourhood": [{"thread": t, "score": round(r, 4), "hop": walk.hop[t],
                           "units": len(snap.threads[t].source_ids)}
                          for t, r in walk.r_tilde.items()],
        "demand": {"x_q": roles.query_features(request.query).round(3).tolist(),
                   "delta": dict(zip(roles.ROLES, np.round(delta, 4).tolist()))},
        "candidates": len(units.ids), "selected": len(chosen),
        "selected_in_B": sum(1 for c in chosen if c[3] == "B"), "threads_used": threads_used,
        "chosen": [units.view(i) | {"step": k + 1, "gain": round(g, 5), "gain_parts": p,
                                    "phase": ph} for k, (i, g, p, ph) in enumerate(chosen)],
        "left_out": [units.view(i) | {"why": why_} for i, why_ in
                     sorted(left.items(), key=lambda x: -units.alpha[x[0]])[:LEFT_OUT_SHOWN]],
        "left_out_total": len(left),
        "budget": budget,
        "timing": timing,
    }


def _candidates(env: Env, request: RecallRequest, snap: Snapshot, th_ids: list[str]):
    """The candidate units U_q, in thread order: (ids, thread of each, position in its thread
    from 1 at its start to 0 at its end, rows, vectors); units outside the time window or no
    longer stored are left out."""
    unit_ids, thread_of, pos = [], [], []
    for t in th_ids:
        src = snap.threads[t].source_ids
        for i, u in enumerate(src):
            unit_ids.append(u)
            thread_of.append(t)
            pos.append(1.0 - i / max(len(src) - 1, 1))
    rows, vecs = snap.unit_rows(env.space, unit_ids)
    keep = [i for i, u in enumerate(unit_ids)
            if u in rows and u in vecs and request.in_window(rows[u].timestamp)]
    return ([unit_ids[i] for i in keep], [thread_of[i] for i in keep],
            np.array([pos[i] for i in keep]), rows, vecs)


def _affinity(env: Env, request: RecallRequest, s: WorkspaceOptions, cos: np.ndarray,
              parts: dict, unit_ids: list[str], rows: dict[str, Source]) -> np.ndarray:
    """alpha(v): the paper's (1 + cos) / 2, mixed with the lexical or fused search score
    (``affinity``, ``beta``), plus ``speaker_w`` for a unit said by a speaker the query names
    (the module docstring of strategy.py)."""
    alpha = (1.0 + cos) / 2.0
    if s.affinity == "hybrid":
        top = max([p.get("bm25", 0.0) for p in parts.values()] + [1e-9])
        lex = np.array([parts.get(u, {}).get("bm25", 0.0) / top for u in unit_ids])
        alpha = (1.0 - s.beta) * alpha + s.beta * lex
    elif s.affinity == "rrf":
        top = max([p["score"] for p in parts.values()] + [1e-9])
        fused = np.array([parts.get(u, {}).get("score", 0.0) / top for u in unit_ids])
        alpha = (1.0 - s.beta) * alpha + s.beta * fused
    if s.speaker_w > 0:   # first-person evidence about a named speaker (roles.py)
        named = speaker_match(request.query, [rows[u].speaker for u in unit_ids],
                              speaker_aliases(env.ns, env.space))
        alpha = np.minimum(1.0, alpha + s.speaker_w * named)
    return alpha


def _inherit(s: WorkspaceOptions, alpha_own: np.ndarray, thread_of: list[str],
             own: list[bool]) -> np.ndarray:
    """Context inheritance (strategy.py docstring): a unit's affinity is at least ``ctx_eta``
    times a within-thread neighbour's, less ``ctx_margin``; not for a unit marked in ``own``
    (a long message the search did not find: ``search.unsearched_long``)."""
    if s.ctx_eta <= 0:
        return alpha_own
    n, alpha = len(alpha_own), alpha_own.copy()
    for i in range(n):
        if own[i]:
            continue
        for j in ((i - 1,) if s.ctx_next_only else (i - 1, i + 1)):
            if 0 <= j < n and thread_of[j] == thread_of[i]:
                alpha[i] = max(alpha[i], s.ctx_eta * alpha_own[j] - s.ctx_margin)
    return alpha
