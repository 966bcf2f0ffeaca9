"""Weighted reciprocal rank fusion of the strategies' source rankings.

Each strategy ranks source turns its own way (raw-turn search, episodes and tuples, thread
workspaces, wiki-routed trajectories). ``auto`` asks each for a ranking longer than the budget
holds and fuses them with the one fusion of the retrieval core (``search.rrf``): score(s) = sum
over strategies i of w_i / (k + rank_i(s)). A turn that several strategies rank high rises; one
that only a weak (low-weight) strategy likes sinks. The fused list is deduplicated by source id,
so no turn costs the budget twice. The weights depend on the kind of question (``features.py``)
and were fitted on the dev conversations (``bench/fit_auto.py`` writes ``fitted.py``).
"""

from __future__ import annotations

from ..search import rrf


def fuse(rankings: dict[str, list[str]], weights: dict[str, float],
         k: float) -> list[tuple[str, float, dict[str, int]]]:
    """(source id, fused score, {strategy: rank}) best first; ties keep the heaviest strategy's
    order (its list goes first). Strategies with weight 0 (or missing) do not vote."""
    voting = sorted((s for s in rankings if weights.get(s, 0.0) > 0), key=lambda s: -weights[s])
    parts = rrf({s: rankings[s] for s in voting}, k=k, weights=weights)
    return [(sid, p["score"], {s: p[f"{s}_rank"] for s in voting if f"{s}_rank" in p})
            for sid, p in parts.items()]
