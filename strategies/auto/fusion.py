"""Weighted reciprocal rank fusion of the strategies' source rankings.

Each strategy ranks source turns its own way (raw-turn search, episodes and tuples, thread
workspaces, wiki-routed trajectories). ``auto`` asks each for a ranking longer than the budget
holds and fuses them: score(s) = sum over strategies i of w_i / (k + rank_i(s)). A turn that
several strategies rank high rises; one that only a weak (low-weight) strategy likes sinks. The
fused list is deduplicated by source id, so no turn costs the budget twice. The weights depend on
the kind of question (``features.py``) and were fitted on the dev conversations
(``bench/fit_auto.py`` writes ``fitted.py``).
"""

from __future__ import annotations


def fuse(rankings: dict[str, list[str]], weights: dict[str, float],
         k: float) -> list[tuple[str, float, dict[str, int]]]:
    """(source id, fused score, {strategy: rank}) best first; ties keep the heaviest strategy's
    order. Strategies with weight 0 (or missing) do not vote."""
    score: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    order = sorted(rankings, key=lambda s: -weights.get(s, 0.0))
    for name in order:
        w = weights.get(name, 0.0)
        if w <= 0:
            continue
        for rank, sid in enumerate(dict.fromkeys(rankings[name]), start=1):
            score[sid] = score.get(sid, 0.0) + w / (k + rank)
            ranks.setdefault(sid, {})[name] = rank
    first = {sid: i for i, sid in enumerate(score)}   # insertion order: heaviest list first
    out = sorted(score, key=lambda sid: (-score[sid], first[sid]))
    return [(sid, score[sid], ranks[sid]) for sid in out]
