"""Neighbourhood propagation (eq. 4), cost and priority (eq. 6-7), the objective J_q (eq. 8) and
its greedy maximisation (eq. 9).

Choices the paper leaves open, and what is done here:
- **Propagation** (eq. 4): breadth-first from the seeds, one hop at a time, at most ``hops``
  hops. A thread reached from several parents keeps the best ``gamma * r(T_j) + (1-gamma) w_H``;
  a thread already in the neighbourhood keeps its score. Each hop admits its best-scoring new
  threads while the neighbourhood holds fewer than ``max_threads`` (the size limit); only admitted
  threads are expanded further. gamma = 0.6.
- **Path cost** d_q(T_j, v): shortest path in the local graph G_q whose thread-thread edges cost
  ``1 - w_H`` and whose head-to-unit edges cost 0 (unit-unit order edges then never shorten a
  path; they only fix the assembly order). tau = 0.25.
- **K_q(u, v)** (how much u supports v): 1 on the diagonal, else the unit-vector cosine rescaled
  from [K0, 1] to [0, 1] (K0 = 0.4), so only close paraphrases cover each other. The ablations:
  ``identity`` K = I; ``no multi-thread`` zeroes K across threads and drops D_q.
- **Coverage stop**: the paper's phase ends when E_pi[max K] >= ``cover_stop`` (0.95) or after
  B_q units. ``fill`` then continues the same greedy (same J, same marginal gains) until the token
  budget binds or candidates run out; every choice records its phase.
- **Budget**: a unit is only eligible if its rendered line (plus its session's date header when it
  is the first of that session) still fits; one that no longer fits is left out "over budget".
"""

from __future__ import annotations

import heapq
from typing import Any, Protocol

import numpy as np

try:
    from threadpoolctl import threadpool_limits
except ImportError:   # an optional speed-up (``_gram``): plain numpy without it
    threadpool_limits = None

GAMMA, TAU, K0, COVER_STOP = 0.6, 0.25, 0.4, 0.95
LAMBDA_M, LAMBDA_R = 1.25, 0.5


class Adjacency(Protocol):
    """thread -> its (neighbour, weight) list, looked up with ``.get(t, ())``: a dict, or the
    recall's filtered view of the graph."""

    def get(self, key: str, default: Any, /) -> Any: ...


def propagate(r0: dict[str, float], seeds: list[str], adj: Adjacency,
              hops: int, max_threads: int, gamma: float = GAMMA) -> tuple[dict[str, float], dict[str, int]]:
    """Scores r~ and hop counts of the neighbourhood H_q (eq. 4)."""
    score = {s: r0[s] for s in seeds}
    hop = {s: 0 for s in seeds}
    frontier = list(seeds)
    for h in range(1, hops + 1):
        reached: dict[str, float] = {}
        for j in frontier:
            for k, w in adj.get(j, ()):
                if k in score:
                    continue
                s = gamma * score[j] + (1.0 - gamma) * w
                if s > reached.get(k, -1.0):
                    reached[k] = s
        room = max_threads - len(score)
        admitted = sorted(reached, key=lambda k: (-reached[k], k))[:max(room, 0)]
        for k in admitted:
            score[k], hop[k] = reached[k], h
        frontier = admitted
        if not frontier:
            break
    return score, hop


def path_costs(ids: list[str], adj: Adjacency) -> np.ndarray:
    """All-pairs shortest path costs within the neighbourhood (edge cost 1 - w_H)."""
    n, at = len(ids), {t: i for i, t in enumerate(ids)}
    dist = np.full((n, n), np.inf)
    np.fill_diagonal(dist, 0.0)
    for i, t in enumerate(ids):
        for k, w in adj.get(t, ()):
            j = at.get(k)
            if j is not None:
                dist[i, j] = min(dist[i, j], 1.0 - w)
    for m in range(n):   # Floyd-Warshall; n is the neighbourhood size (tens)
        dist = np.minimum(dist, dist[:, m:m + 1] + dist[m:m + 1, :])
    return dist


def priorities(r: np.ndarray, dist_tu: np.ndarray, alpha: np.ndarray, phi: np.ndarray, b_q: int,
               lam_m: float = LAMBDA_M, lam_r: float = LAMBDA_R, tau: float = TAU):
    """w_q and pi_q of eq. 7 from C_q of eq. 6. ``dist_tu`` is threads x units."""
    cost = dist_tu + lam_m * (1.0 - alpha)[None, :] + lam_r * (1.0 - phi)[None, :]
    act = (r[:, None] * np.exp(-cost / tau))
    act[~np.isfinite(act)] = 0.0
    w = np.minimum(1.0 / b_q, act.sum(axis=0))
    total = w.sum()
    pi = w / total if total > 0 else np.full(len(w), 1.0 / max(len(w), 1))
    return w, pi, cost


def _gram(vecs: np.ndarray) -> np.ndarray:
    """vecs @ vecs.T in float32 on one BLAS thread when threadpoolctl is installed: on a busy
    two-core machine OpenBLAS's thread hand-off costs ~50 ms for a 480 x 480 product, one
    thread ~5 ms. Without threadpoolctl (an optional speed-up, not a dependency) plain numpy."""
    v = np.ascontiguousarray(vecs, dtype=np.float32)
    if threadpool_limits is None:
        return (v @ v.T).astype(np.float64)
    with threadpool_limits(1, user_api="blas"):
        return (v @ v.T).astype(np.float64)


def kernel(vecs: np.ndarray, thread_idx: np.ndarray, mode: str = "structured",
           multi_thread: bool = True) -> np.ndarray:
    """K_q (n x n): how much selecting u (row) supports v (column)."""
    n = len(vecs)
    if mode == "identity":
        return np.eye(n)
    k = np.clip((_gram(vecs) - K0) / (1.0 - K0), 0.0, 1.0)
    np.fill_diagonal(k, 1.0)
    if not multi_thread:
        k = k * (thread_idx[:, None] == thread_idx[None, :])
    return k


def objective(sel: list[int], K, pi, rho, delta, alpha, thread_idx, mass, multi_thread=True) -> float:
    """J_q(S) of eq. 8 (used by the tests; the greedy updates it incrementally)."""
    if not sel:
        return 0.0
    cov = float(pi @ K[sel].max(axis=0))
    role = float(delta @ rho[sel].max(axis=0))
    d = sum(mass[t] for t in set(thread_idx[sel].tolist())) if multi_thread else 0.0
    return cov + role + float(alpha[sel].sum()) + d


def greedy(K, pi, rho, delta, alpha, thread_idx, mass, costs, first_cost, sessions, limit_chars,
           b_q, fill=True, multi_thread=True, cover_stop=COVER_STOP):
    """Greedy maximisation of J_q (eq. 9) under B_q units (then, with ``fill``, the budget).

    ``costs[i]``: characters of unit i's line; ``first_cost[i]``: extra characters of its session
    header; ``sessions[i]``: its session. Returns (chosen [(i, gain, parts, phase)], left_out
    {i: reason}).
    """
    n = len(pi)
    costs, first_cost = np.asarray(costs), np.asarray(first_cost)
    sess_ids = {x: i for i, x in enumerate(dict.fromkeys(sessions))}
    sess = np.array([sess_ids[x] for x in sessions])
    thread_covered = np.zeros(int(thread_idx.max()) + 1 if n else 0, dtype=bool)
    used, chosen, left = 0, [], {}
    active = np.ones(n, dtype=bool)
    n_active = n
    phase = "B"
    # a unit's cost: its line, plus its session's header while that session has no unit yet
    # (kept up to date as sessions open, instead of recomputed on every pick)
    extra = costs + first_cost
    gains = _Gains(K, pi, rho, delta, alpha, thread_idx, mass, thread_covered, multi_thread)
    # lazy greedy (Minoux, 1978): every term of J_q is submodular, so a gain computed earlier is
    # an upper bound of the current one; the first candidate whose fresh gain still tops the
    # next bound is the exact argmax (ties broken by index, as np.argmax would)
    first = (K @ pi) + (rho @ delta) + alpha + (mass[thread_idx] if multi_thread else 0.0)
    heap = [(-float(first[i]), i) for i in range(n)]
    heapq.heapify(heap)
    open_sess: set[int] = set()
    while n_active:
        if phase == "B" and (len(chosen) >= b_q or float(pi @ gains.cov) >= cover_stop):
            if not fill:
                break
            phase = "fill"
        too_big = np.flatnonzero(active & (used + extra > limit_chars))
        if len(too_big):
            for i in too_big:
                left[int(i)] = "over budget"
            active[too_big] = False
            n_active -= len(too_big)
            if not n_active:
                break
        u, g, parts = _lazy_pick(heap, active, gains)
        chosen.append((u, g, parts, phase))
        used += int(extra[u])
        s_u = int(sess[u])
        if s_u not in open_sess:
            open_sess.add(s_u)
            same = sess == s_u
            extra[same] = costs[same]
        gains.take(u)
        active[u] = False
        n_active -= 1
    why = ("unit budget B reached" if len(chosen) >= b_q else "coverage threshold reached") \
        if phase == "B" else "not reached"
    for i in np.flatnonzero(active):
        left.setdefault(int(i), why)
    return chosen, left


class _Gains:
    """Marginal gains of units against the chosen set (coverage and role maxima so far, threads
    covered), computed into reused buffers: the same operations in the same order as a fresh
    ``np.maximum(K[u] - cov, 0) @ pi`` (so the same floating-point results), without allocating
    three arrays per evaluation (the lazy greedy evaluates several hundred per recall)."""

    def __init__(self, K, pi, rho, delta, alpha, thread_idx, mass, thread_covered, multi):
        self.K, self.pi, self.rho, self.delta, self.alpha = K, pi, rho, delta, alpha
        self.thread_idx, self.mass, self.covered, self.multi = thread_idx, mass, thread_covered, multi
        self.cov, self.rmax = np.zeros(len(pi)), np.zeros(rho.shape[1])
        self._b, self._r = np.empty(len(pi)), np.empty(rho.shape[1])

    def terms(self, u) -> tuple[float, float, float]:
        b, r = self._b, self._r
        np.subtract(self.K[u], self.cov, out=b)
        np.maximum(b, 0.0, out=b)
        g_cov = float(b @ self.pi)
        np.subtract(self.rho[u], self.rmax, out=r)
        np.maximum(r, 0.0, out=r)
        g_role = float(r @ self.delta)
        t = self.thread_idx[u]
        g_d = float(self.mass[t]) if self.multi and not self.covered[t] else 0.0
        return g_cov, g_role, g_d

    def gain(self, terms: tuple[float, float, float], u) -> float:
        g_cov, g_role, g_d = terms
        return g_cov + g_role + float(self.alpha[u]) + g_d

    def parts(self, terms: tuple[float, float, float], u) -> dict:
        g_cov, g_role, g_d = terms
        return {"coverage": round(g_cov, 4), "roles": round(g_role, 4),
                "affinity": round(float(self.alpha[u]), 4), "threads": round(g_d, 4)}

    def take(self, u) -> None:
        np.maximum(self.cov, self.K[u], out=self.cov)
        np.maximum(self.rmax, self.rho[u], out=self.rmax)
        self.covered[self.thread_idx[u]] = True


def _lazy_pick(heap, active, gains: _Gains):
    while True:
        _, u = heapq.heappop(heap)
        if not active[u]:
            continue
        terms = gains.terms(u)
        g = gains.gain(terms, u)
        while heap and not active[heap[0][1]]:
            heapq.heappop(heap)
        if not heap or -heap[0][0] <= g + 1e-12:
            return u, g, gains.parts(terms, u)
        heapq.heappush(heap, (-g, u))
