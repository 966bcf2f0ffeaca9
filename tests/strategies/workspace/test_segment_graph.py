"""Threads and the thread graph: segmentation, eq. 4 propagation and path costs on small
hand-made inputs whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from trimem.strategies.workspace.segment import fixed_boundaries, segment, topic_boundaries
from trimem.strategies.workspace.select import path_costs, propagate


def _topics(sizes, dim=16, noise=0.05, seed=0):
    """Unit vectors in blocks: each block lies around its own orthogonal axis."""
    rng = np.random.default_rng(seed)
    rows = []
    for k, n in enumerate(sizes):
        for _ in range(n):
            v = np.zeros(dim)
            v[k] = 1.0
            v += noise * rng.standard_normal(dim)
            rows.append(v / np.linalg.norm(v))
    return np.array(rows, dtype=np.float32)


def test_topic_shifts_become_thread_boundaries():
    vecs = _topics([5, 6, 4])
    assert topic_boundaries(vecs) == [5, 11]


def test_threads_respect_min_and_max_length():
    vecs = _topics([25])                     # one long topic: only the max length cuts it
    segs = segment(vecs, ["A"] * 25, [f"t{i}" for i in range(25)])
    lengths = [s.end - s.start for s in segs]
    assert sum(lengths) == 25 and max(lengths) <= 10 and min(lengths) >= 3
    assert segment(_topics([2]), ["A", "B"], ["x", "y"])[0].end == 2   # short session: one thread


def test_fixed_scheme_and_extractive_head():
    assert fixed_boundaries(14, 6) == [6, 12]
    vecs = _topics([3, 3])
    segs = segment(vecs, ["Ana", "Bo", "Ana", "Bo", "Ana", "Bo"],
                   ["a", "b", "c", "d", "e", "f"], scheme="fixed", fixed_len=3)
    assert [(s.start, s.end) for s in segs] == [(0, 3), (3, 6)]
    head = segs[0]
    assert head.head.split(": ", 1)[1] in "abc" and head.central in (0, 1, 2)
    assert abs(float(np.linalg.norm(head.vector)) - 1.0) < 1e-5


def test_propagation_follows_eq4_with_hop_and_size_limits():
    # seed S (r0 = 0.8) - A (w 0.5) - B (w 1.0) - C (w 0.2); and S - D (w 0.9)
    adj = {"S": [("A", 0.5), ("D", 0.9)], "A": [("S", 0.5), ("B", 1.0)],
           "B": [("A", 1.0), ("C", 0.2)], "C": [("B", 0.2)], "D": [("S", 0.9)]}
    g = 0.6
    score, hop = propagate({"S": 0.8}, ["S"], adj, hops=3, max_threads=10, gamma=g)
    a = g * 0.8 + (1 - g) * 0.5
    b = g * a + (1 - g) * 1.0
    c = g * b + (1 - g) * 0.2
    expect = {"S": 0.8, "A": a, "D": g * 0.8 + (1 - g) * 0.9, "B": b, "C": c}
    assert score == pytest.approx(expect)
    assert hop == {"S": 0, "A": 1, "D": 1, "B": 2, "C": 3}
    one, _ = propagate({"S": 0.8}, ["S"], adj, hops=1, max_threads=10, gamma=g)
    assert set(one) == {"S", "A", "D"}                        # hop limit
    small, _ = propagate({"S": 0.8}, ["S"], adj, hops=3, max_threads=2, gamma=g)
    assert set(small) == {"S", "D"}                           # size limit keeps the best (D > A)
    seeds_only, _ = propagate({"S": 0.8}, ["S"], adj, hops=0, max_threads=10, gamma=g)
    assert seeds_only == {"S": 0.8}


def test_path_costs_are_shortest_paths_with_cost_one_minus_weight():
    adj = {"S": [("A", 0.5), ("D", 0.9)], "A": [("S", 0.5), ("B", 1.0)], "B": [("A", 1.0)],
           "D": [("S", 0.9), ("B", 0.8)]}
    d = path_costs(["S", "A", "B", "D"], adj)
    assert d[0, 2] == pytest.approx(min(0.5 + 0.0, 0.1 + 0.2))   # S-D-B beats S-A-B
    assert d[0, 0] == 0.0 and d[2, 0] == pytest.approx(0.5)      # B-A-S
