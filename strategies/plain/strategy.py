"""``plain``: turn-level hybrid search over the raw sources, packed into the budget.

BM25 (LanceDB full-text index) and dense cosine search each return their top ``n`` turns; the
two rankings are fused by reciprocal rank fusion, score(d) = sum_r 1 / (k + rank_r(d)) with
k = 60 (Cormack et al., 2009), and the fused list fills the budget greedily. It is the fast path
a user can pick for raw evidence, and the baseline every other strategy must beat.
"""

from __future__ import annotations

from ..base import Env, Item, ItemKind, Recollection, RecallRequest, SourceRef
from ..render import pack_sources

RRF_K = 60


def rrf(rankings: dict[str, list[str]], k: int = RRF_K,
        weights: dict[str, float] | None = None) -> dict[str, dict]:
    """Fuse ranked id lists: id -> {"score", "<name>_rank" for each list it appears in}."""
    out: dict[str, dict] = {}
    for name, ids in rankings.items():
        w = (weights or {}).get(name, 1.0)
        for rank, i in enumerate(ids, start=1):
            entry = out.setdefault(i, {"score": 0.0})
            entry["score"] += w / (k + rank)
            entry[f"{name}_rank"] = rank
    return out


def search_sources(env: Env, request: RecallRequest, n: int) -> tuple[list[str], dict[str, dict]]:
    """Fused candidate ids (best first) and each one's score parts."""
    where = env.space.time_filter(request.since, request.until)
    qv = env.embed_query(request.query)
    lexical = env.space.fts_sources(request.query, n, where)
    dense = env.space.vector_sources(qv, n, where)
    opts = request.options
    parts = rrf({"bm25": [i for i, _ in lexical], "dense": [i for i, _ in dense]},
                k=int(opts.get("rrf_k", RRF_K)),
                weights={"dense": float(opts.get("dense_weight", 1.0))})
    for i, s in lexical:
        parts[i]["bm25"] = round(s, 4)
    for i, s in dense:
        parts[i]["cosine"] = round(s, 4)
    order = sorted(parts, key=lambda i: -parts[i]["score"])
    return order, parts


def search_sources_named(env: Env, request: RecallRequest, n: int, qv=None, content_w: float = 1.0,
                         strip: bool = True, speaker_rows=None) -> tuple[list[str], dict[str, dict]]:
    """``search_sources`` for a query that names speakers (workspace's finding, ``workspace/
    roles.py``): sources are indexed and embedded as "speaker: text", so a speaker's name in the
    query matches every turn that speaker said and BM25 ranks their shortest turns first. When
    the query names speakers found among its dense hits, BM25 gets the query without those
    names and a third list ranks by the embedding of the name-free query (RRF weight
    ``content_w``); each id's parts gain ``content_rank``. ``speaker_rows(dense ids)`` gives the
    rows whose speakers count (default: the top 50 dense hits, read from the store; workspace
    passes its cached rows of all of them). Without named speakers, or with ``strip`` off, this
    is ``search_sources`` (scores unrounded)."""
    from ..speakers import without_speakers

    where = env.space.time_filter(request.since, request.until)
    qv = env.embed_query(request.query) if qv is None else qv
    dense = env.space.vector_sources(qv, n, where)
    query = request.query
    if strip:
        ids = [i for i, _ in dense]
        rows = speaker_rows(ids) if speaker_rows else env.space.get_sources(ids[:50])
        query = without_speakers(query, {r.get("speaker") for r in rows} - {None, ""})
    lexical = env.space.fts_sources(query, n, where)
    lists = {"bm25": [i for i, _ in lexical], "dense": [i for i, _ in dense]}
    if content_w > 0 and query != request.query:
        lists["content"] = [i for i, _ in env.space.vector_sources(env.embed_query(query), n, where)]
    parts = rrf(lists, k=int(request.options.get("rrf_k", RRF_K)), weights={"content": content_w})
    for i, x in lexical:
        parts[i]["bm25"] = x
    for i, x in dense:
        parts[i]["cosine"] = x
    return sorted(parts, key=lambda i: -parts[i]["score"]), parts


def source_ref(row: dict) -> SourceRef:
    return SourceRef(id=row["id"], ref=row.get("ref"), session_id=row["session_id"],
                     speaker=row.get("speaker"), timestamp=row.get("timestamp"), text=row["text"])


def finish(packed, parts: dict[str, dict], kind: ItemKind = "source") -> tuple[list[Item], list[SourceRef]]:
    items = [Item(id=r["id"], kind=kind, text=r["text"], score=round(parts[r["id"]]["score"], 6),
                  timestamp=r.get("timestamp"), source_ids=[r["id"]]) for r in packed.chosen]
    sources = [source_ref(r) for r in packed.chosen if r["id"] in packed.verbatim_ids]
    return items, sources


class PlainStrategy:
    name = "plain"
    candidates = 100

    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        n = int(request.options.get("candidates", self.candidates))
        order, parts = search_sources(env, request, n)
        rows = env.space.get_sources(order)
        packed = pack_sources(rows, request.budget_tokens)
        items, sources = finish(packed, parts)
        trace = {
            "method": f"BM25 top-{n} + dense top-{n}, reciprocal rank fusion (k={RRF_K}), greedy fill",
            "considered": len(order),
            "chosen": [{"id": r["id"], **parts[r["id"]], "why": "highest fused score that fit"}
                       for r in packed.chosen],
            "left_out": [{"id": r["id"], **parts[r["id"]], "why": why} for r, why in packed.left_out],
            "budget": {"tokens": request.budget_tokens, "chars_allowed": packed.chars_budget,
                       "chars_used": packed.chars_used},
        }
        return Recollection(context=packed.context, items=items, sources=sources,
                            abstain=not packed.chosen, trace=trace,
                            route_reason="plain: turn-level BM25 + dense search fused by RRF")
