"""``plain``: the baseline -- the project's best single-pass turn search, packed into the budget.

One search over the raw source turns (``search.search_turns``): BM25 (LanceDB full-text index)
and dense cosine search each return their top ``n`` turns, fused by reciprocal rank fusion,
score(d) = sum_r 1 / (k + rank_r(d)) with k = 60 (Cormack et al., 2009). A query that names
speakers found among its dense hits is searched as ``workspace`` and ``wiki`` search it: BM25
gets the query without those names and a third list ranks by the name-free query's embedding
(option ``strip_names=0`` turns it off, ``content_dense`` weighs that list); when it names some
but not all of the namespace's speakers, a fourth list ranks those speakers' own turns by the
name-free query (``speaker_dense``, 1.0). The fused list fills
the budget greedily. It is the fast path a user can pick for raw evidence, and the fair baseline
every other strategy must beat.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base import Env, Item, ItemKind, RecallRequest, Recollection, SourceRef
from ..render import Packed, pack_sources
from ..search import RRF_K, search_turns, source_ref, turn_search


@dataclass(frozen=True)
class PlainOptions:
    """``candidates``: each list's depth; ``rrf_k``: the fusion's k; ``strip_names`` (1/0),
    ``content_dense``, ``dense_weight``, ``speaker_dense``: see ``search.search_turns``."""

    candidates: int = 100
    rrf_k: int = RRF_K
    strip_names: int = 1
    content_dense: float = 1.0
    dense_weight: float = 1.0
    speaker_dense: float = 1.0


def finish(packed: Packed, parts: dict[str, dict],
           kind: ItemKind = "source") -> tuple[list[Item], list[SourceRef]]:
    items = [Item(id=r.id, kind=kind, text=r.text, score=round(parts[r.id]["score"], 6),
                  timestamp=r.timestamp, source_ids=[r.id]) for r in packed.chosen]
    sources = [source_ref(r, packed.width) for r in packed.chosen if r.id in packed.verbatim_ids]
    return items, sources


class PlainStrategy:
    name = "plain"
    Options = PlainOptions

    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        o = request.options.of(PlainOptions)
        n, k, named = o.candidates, o.rrf_k, bool(o.strip_names)
        turns = turn_search(env, request, n)
        order, parts = search_turns(env, request, n, names=named, k=k, content_w=o.content_dense,
                                    dense_w=o.dense_weight, speaker_w=o.speaker_dense, turns=turns)
        for p in parts.values():   # the trace shows raw scores at 4 places
            for key in ("bm25", "cosine"):
                if key in p:
                    p[key] = round(p[key], 4)
        rows = turns.rows(order)
        packed = pack_sources(rows, request.budget_tokens, quote_tokens=request.quote_tokens,
                              focus=request.query)
        items, sources = finish(packed, parts)
        lists = ("BM25 (name-free query when it names speakers) + dense (+ the named speakers' "
                 "own turns)") if named else "BM25 + dense"
        trace = {
            "method": f"{lists} top-{n}, reciprocal rank fusion (k={k}), greedy fill",
            "considered": len(order),
            "chosen": [{"id": r.id, **parts[r.id], "why": "highest fused score that fit"}
                       for r in packed.chosen],
            "left_out": [{"id": r.id, **parts[r.id], "why": why} for r, why in packed.left_out],
            "budget": {"tokens": request.budget_tokens, "chars_allowed": packed.chars_budget,
                       "chars_used": packed.chars_used},
        }
        reason = "plain: turn-level BM25 + dense search fused by RRF"
        if any("content_rank" in p for p in parts.values()):
            reason += "; the speakers it names searched as who said it, not as words"
        if any("speaker_rank" in p for p in parts.values()):
            reason += "; the named speakers' own turns searched apart"
        return Recollection(context=packed.context, items=items, sources=sources,
                            abstain=not packed.chosen, trace=trace, route_reason=reason)
