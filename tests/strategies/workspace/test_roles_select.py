"""Roles (eq. 5) and the greedy workspace selection (eq. 6-9) on small examples."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from trimem.strategies.workspace import roles
from trimem.strategies.workspace.select import greedy, kernel, objective, priorities


def test_demand_follows_query_features():
    plain = roles.demand("What is Ana's job?")
    temporal = roles.demand("When did Ana move to Berlin?")
    relational = roles.demand("What do Ana and Bo both like, and why would they go together?")
    for d in (plain, temporal, relational):
        assert d.sum() == pytest.approx(1.0) and (d > 0).all()
    anchor, bridge, context = range(3)
    assert plain.argmax() == anchor
    assert temporal[context] > plain[context]
    assert relational[bridge] > plain[bridge]
    assert roles.demand("When?", conditioned=False) == pytest.approx(np.full(3, 1 / 3))


def test_roles_are_a_distribution_and_match_their_features():
    #                 rel  ent  temp deg  pos  hop
    feats = np.array([[1.0, 0.0, 0.0, 0.2, 0.0, 0.0],    # relevant, at the seeds: anchor
                      [0.2, 1.0, 0.0, 1.0, 0.0, 1.0],    # entity-sharing, reached by hops: bridge
                      [0.0, 0.0, 1.0, 0.0, 1.0, 0.0]])   # a dated thread opener: context
    delta = roles.demand("What do Ana and Bo have in common since last year?")
    rho, phi = roles.assign(delta, feats)
    assert rho.sum(axis=1) == pytest.approx(np.ones(3))
    assert list(rho.argmax(axis=1)) == [0, 1, 2]
    assert phi == pytest.approx(rho @ delta)
    rho_u, phi_u = roles.assign(np.full(3, 1 / 3), feats, conditioned=False)
    assert phi_u == pytest.approx(np.full(3, 1 / 3))           # no role conditioning: flat phi


def test_unit_features_are_bounded():
    f = roles.unit_features(np.array([0.9, 0.5, 0.7]),
                            ["Ana met Bo in Paris", "Yesterday was fun", "Bo loves Paris"],
                            ["t1", "t1", "t2"], np.array([1.0, 0.0, 1.0]), {"t1": 2, "t2": 1},
                            {"t1": 0, "t2": 1}, 3)
    assert f.shape == (3, 6) and (f >= 0).all() and (f <= 1).all()
    assert f[0, 1] == 1.0 and f[1, 1] == 0.0          # "Paris"/"Bo" shared with the other thread
    assert f[1, 2] == 1.0 and f[0, 2] == 0.0          # "Yesterday" is a temporal expression


def _example(n=7, seed=3):
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, 8))
    vecs[1] = vecs[0] + 0.1 * rng.standard_normal(8)     # a near-duplicate of unit 0
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tidx = np.array([0, 0, 1, 1, 2, 2, 2])[:n]
    alpha = np.linspace(0.9, 0.6, n)
    rho, _ = roles.assign(np.array([0.5, 0.3, 0.2]), rng.random((n, 6)))
    _, pi, _ = priorities(np.array([0.8, 0.7, 0.6]), rng.random((3, n)), alpha, rho @ [0.5, 0.3, 0.2], 4)
    mass = np.bincount(tidx, weights=pi)
    return kernel(vecs, tidx), pi, rho, np.array([0.5, 0.3, 0.2]), alpha, tidx, mass


def test_objective_is_monotone_and_submodular():
    K, pi, rho, delta, alpha, tidx, mass = _example()
    J = lambda s: objective(list(s), K, pi, rho, delta, alpha, tidx, mass)  # noqa: E731
    units = range(len(pi))
    for a in range(len(pi) + 1):
        for small in itertools.combinations(units, a):
            for extra in (u for u in units if u not in small):
                big = set(small) | {extra}
                assert J(big) >= J(small) - 1e-12                          # monotone
                for v in units:
                    if v in big:
                        continue
                    gain_small = J(set(small) | {v}) - J(small)
                    gain_big = J(big | {v}) - J(big)
                    assert gain_small >= gain_big - 1e-9                   # diminishing returns


def test_greedy_respects_both_budgets_and_records_true_marginal_gains():
    K, pi, rho, delta, alpha, tidx, mass = _example()
    n = len(pi)
    costs, first, sess = [40] * n, [10] * n, ["s1", "s1", "s1", "s2", "s2", "s2", "s2"]
    chosen, left = greedy(K, pi, rho, delta, alpha, tidx, mass, costs, first, sess, 10_000, 3,
                          fill=False)
    assert len(chosen) == 3 and all(c[3] == "B" for c in chosen)           # B_q binds
    assert set(left.values()) == {"unit budget B reached"}
    sel = []
    for u, gain, parts, _ in chosen:                                        # eq. 9, step by step
        best = max((objective(sel + [v], K, pi, rho, delta, alpha, tidx, mass), -v)
                   for v in range(n) if v not in sel)
        assert -best[1] == u
        assert gain == pytest.approx(objective(sel + [u], K, pi, rho, delta, alpha, tidx, mass)
                                     - objective(sel, K, pi, rho, delta, alpha, tidx, mass))
        assert gain == pytest.approx(sum(parts.values()), abs=1e-3)
        sel.append(u)
    J = lambda s: objective(s, K, pi, rho, delta, alpha, tidx, mass)  # noqa: E731
    assert J([0, 1]) - J([0]) < J([1])                  # a near-duplicate adds less once its twin is in
    # the token budget: 2 sessions x 10 header chars + 40 per line, 130 chars fit three lines
    filled, left = greedy(K, pi, rho, delta, alpha, tidx, mass, costs, first, sess, 130, 3, fill=True)
    used = sum(costs[u] for u, *_ in filled) + 10 * len({sess[u] for u, *_ in filled})
    assert used <= 130 and len(filled) == 2 + (used + 40 <= 130)
    assert "over budget" in left.values()
    more, _ = greedy(K, pi, rho, delta, alpha, tidx, mass, costs, first, sess, 10_000, 3, fill=True)
    assert len(more) == n and [c[3] for c in more] == ["B"] * 3 + ["fill"] * (n - 3)


def test_the_best_seeds_are_exactly_the_sorted_order_ties_by_id():
    import random

    from trimem.strategies.workspace.localise import _best

    rng = random.Random(3)
    for n in (0, 1, 5, 40, 300):
        ids = [f"t{rng.randrange(10**6):06d}-{i}" for i in range(n)]
        score = np.array([rng.choice([0.1, 0.5, 0.5, 0.9, rng.random()]) for _ in ids])
        for k in (0, 1, 4, 12, n, n + 3):
            want = sorted(range(n), key=lambda i: (-score[i], ids[i]))[:k]
            assert _best(score, ids, k) == want, (n, k)
