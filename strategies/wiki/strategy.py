"""``wiki``: TrajWiki (paper 003) -- source-grounded trajectories routed through a Memory Wiki.

recall(q): route q to the top t wiki pages (S_p), take their linked trajectories as the
candidate universe, pick k trajectories by relevance + coverage gain - redundancy (route.py,
shown in the trace), then rank source turns by their own relevance smoothed over their snapshot
and trajectory plus the routed pages' support and inventory-claim matches (scoring.py), and pack
them verbatim with ``render.pack_sources`` (same frame and session-date grouping as ``plain``).
If the evidence looks insufficient, one controlled retry reroutes with hints; if it is still
insufficient the recollection says ``abstain`` (its context is still returned).

Options (``WikiOptions``): ``t`` (15), ``k`` (15), ``routing`` ("wiki" | "direct"),
``candidates`` (turn search depth, 200), ``retry`` (1/0), ``strip_names`` (1/0: search a query
that names speakers without their names, ``search.search_turns``), ``content_dense`` (1.0),
``speaker_dense`` (1.0: the named speakers' own turns, ranked by the name-free query),
``current_first`` (1: a turn stating a changed fact's latest value goes just before the turns
it supersedes, which are marked ``[changed later: DATE]``; ``revisions.py``), ``sel_w`` (0.0:
the paper draws evidence from the k selected trajectories; ``sel_w`` adds that much to the score
of their turns and brings all their turns into the pool. Measured on four dev conversations
at 2,000 tokens it cost LoCoMo up to 4 R and gained REALTALK at most 1.4, so it is off;
bench/README.md, "Tried and not kept").
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base import Env, Item, RecallRequest, Recollection
from ..render import Packed, pack_sources
from ..search import RRF_K, TurnSearch, ahead, search_turns, source_ref, turn_search, unsearched_long
from . import evidence as ev
from . import revisions, route, scoring, store, turnmap
from .curate import curate_session, forget_sources, state_of
from .explain import explain_id
from .pages import rebuild
from ...providers.llm_none import is_none
from .consolidate import consolidate

if TYPE_CHECKING:
    from ..space_api import StrategySpace

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WikiOptions:
    """The module docstring lists each (``rrf_k``: the turn search's fusion k)."""

    t: int = 15
    k: int = 15
    routing: str = "wiki"
    candidates: int = 200
    retry: int = 1
    strip_names: int = 1
    content_dense: float = 1.0
    rrf_k: int = RRF_K
    speaker_dense: float = 1.0
    current_first: int = 1
    sel_w: float = 0.0


class WikiStrategy:
    name = "wiki"
    Options = WikiOptions
    m = 15   # a trajectory's length at which it is closed (paper 003's m)

    def has_memory(self, env: Env) -> bool:
        """Whether curation has built any trajectory in this namespace yet (``auto`` asks)."""
        return store.count_trajectories(env.space) > 0

    # -- curation -------------------------------------------------------------------------
    def curate(self, env: Env, session_id: str) -> None:
        """Incremental: only this session's new messages are snapshotted and appended, and only
        the pages they touch are updated (``curate.py``)."""
        llm = None if is_none(env.llm) else env.llm
        st = state_of(env.ns)   # the namespace's open trajectories and turn maps
        for attempt in range(3):
            try:   # forget purges old table versions while a re-curation may be reading them
                with st.maps.writing():
                    info = curate_session(env.space, st, session_id, llm, self.m)
                break
            except RuntimeError as exc:
                if "Not found" not in str(exc) or attempt == 2:
                    raise
                log.warning("wiki curation of %s raced a purge; retrying", session_id)
                time.sleep(0.2 * (attempt + 1))
        log.info("wiki curated %s: %s", session_id, info)

    def forget(self, env: Env, source_ids: set[str]) -> int:
        n = forget_sources(env.space, state_of(env.ns), set(source_ids), self.m)
        if n:
            rebuild(env.space)
            store.index_tables(env.space, rebuild=True)   # the purge that follows drops the old
        return n

    def explain(self, env: Env, id: str) -> dict | None:
        return explain_id(env.space, id)

    def consolidate(self, env: Env, dry_run: bool = False, min_cluster_size: int = 10,
                    progress=None) -> dict:
        return consolidate(env.space, state_of(env.ns), dry_run, progress, self.m)

    # -- recall ---------------------------------------------------------------------------
    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        store.ensure(env.space)
        o = request.options.of(WikiOptions)
        t, k = o.t, o.k
        direct = o.routing == "direct"
        qv = env.embed_query(request.query)
        n = o.candidates
        turns = turn_search(env, request, n, qv)
        reads = _Reads(env.space, turns)
        # the pages are routed from the query alone: in the namespace's pool, beside the turn
        # search (both mostly LanceDB searches, which release the GIL)
        f = route.query_features(request.query, self._ref_time(env.space))
        routed = (lambda: []) if direct else ahead(env.ns.pool(), route.route_pages, env.space,
                                                   qv, request.query, f, t)
        order, parts = search_turns(   # named speakers: see search.search_turns
            env, request, n, names=bool(o.strip_names), content_w=o.content_dense, k=o.rrf_k,
            speaker_w=o.speaker_dense, turns=turns)
        fused = {i: p["score"] for i, p in parts.items()}
        first = self._attempt(env, reads, request, request.query, qv, fused, order, t, k, direct,
                              parts, routed=(f, routed()))
        final, retry = first, None
        if not first["suff"]["sufficient"] and o.retry:
            hint = ev.hints(first["f"], first["chosen"], first["suff"])
            q2 = request.query + (" " + " ".join(hint) if hint else "")
            qv2 = ev.mean_vec([qv, env.embed_query(q2)])
            second = self._attempt(env, reads, request, q2, qv2, fused, order, 2 * t, k, direct,
                                   parts, judge=first["f"])
            retry = {"hints": hint, "query": q2, "t": 2 * t, "sufficiency": second["suff"],
                     "used": second["score"] > first["score"]}
            if retry["used"]:
                final = second
        return self._finish(env, request, final, first, retry, t, k, direct, parts)

    def _attempt(self, env: Env, reads: _Reads, request: RecallRequest, query, qv, fused, order,
                 t, k, direct, parts: dict, judge=None,
                 routed: tuple[dict, list[route.Routed]] | None = None) -> dict:
        """One routing + evidence pass. ``judge``: the features sufficiency is judged against
        (the retry's are the original query's, so its hint words, which the evidence it finds
        always contains, cannot vouch for it). ``routed``: the query's features and routed
        pages, when already computed (the first pass routes beside the turn search)."""
        space = env.space
        if routed is None:
            f = route.query_features(query, self._ref_time(space))
            routed = (f, [] if direct else route.route_pages(space, qv, query, f, t))
        f, pages = routed
        rows, support = route.candidates(space, pages, direct, reads.trajectories)
        scores = route.base_scores(rows, support, qv, f, fused, reads.keys)
        chosen = route.select(rows, scores, f, k)
        maps = turnmap.turn_maps(state_of(env.ns).maps, space)
        order2, sc = scoring.score_turns(space, qv, f, parts, support, maps, None,
                                         {c["row"].id for c in chosen},
                                         request.options.of(WikiOptions).sel_w)
        drop = unsearched_long(reads.turns.rows(order2[:200]), parts)
        order2 = scoring.unlift_unsearched(order2, sc, drop, bool(f.get("list")))
        rel = {i: round(sc["parts"][i]["score"], 4) for i in order2}
        owner = {i: sc["t_of"].get(i) for i in order2}
        changed = (revisions.changes(space, order2[:200], turnmap.SlottedClaims(maps))
                   if request.options.of(WikiOptions).current_first else {})
        ids = revisions.current_first(order2[:200], changed, request.query)
        rows_src = [r for r in reads.turns.rows(ids) if request.in_window(r.timestamp)]
        packed = pack_sources(rows_src, request.budget_tokens, marks=revisions.marks(changed),
                              quote_tokens=request.quote_tokens, focus=request.query)
        suff = ev.sufficiency(judge or f, chosen, packed.chosen)
        return {"f": f, "routed": pages, "rows": rows, "scores": scores, "chosen": chosen,
                "packed": packed, "owner": owner, "turn_parts": sc["parts"], "order": order2,
                "rel": rel, "suff": suff,
                "score": suff["support"], "s_of": maps.s_of, "changed": changed}

    @staticmethod
    def _ref_time(space: StrategySpace):
        """'Now' for relative dates in a query: the time of the latest session."""
        return space.sessions.latest_time()

    def _finish(self, env: Env, request: RecallRequest, a, first, retry, t, k, direct,
                parts) -> Recollection:
        packed: Packed = a["packed"]
        items = [Item(id=x.page.id, kind="page", text=x.page.title,
                      score=x.parts["S_p"], role="routed page") for x in a["routed"]]
        items += [Item(id=r.id, kind="source", text=r.text,
                       score=round(a["rel"].get(r.id, parts.get(r.id, {}).get("score", 0.0)), 6),
                       role=f"evidence of {a['owner'][r.id]}" if r.id in a["owner"]
                       else "direct evidence", timestamp=r.timestamp, source_ids=[r.id])
                  for r in packed.chosen]
        sources = [source_ref(r, packed.width) for r in packed.chosen if r.id in packed.verbatim_ids]
        abstain = not packed.chosen or not a["suff"]["sufficient"]
        reason = (f"wiki: {len(a['routed'])} pages routed, {len(a['rows'])} candidate "
                  f"trajectories, {len(a['chosen'])} selected, {len(packed.chosen)} source turns")
        if abstain:
            reason += "; evidence judged insufficient" + (" after a retry" if retry else "")
        # auto's vote reads the items, reason and abstain only: no trace (its provenance reads
        # the snapshots and parses their claims, ~3 ms, and the rest formats ~1,500 numbers)
        trace = {} if request.ranking_only else self._trace(env, request, a, first, retry, t, k,
                                                            direct)
        return Recollection(context=packed.context, items=items, sources=sources,
                            abstain=abstain, route_reason=reason, trace=trace)

    @staticmethod
    def _trace(env: Env, request: RecallRequest, a, first, retry, t, k, direct) -> dict:
        packed: Packed = a["packed"]
        cand = sorted(a["scores"].items(), key=lambda kv: -kv[1]["b"])
        sel = {c["row"].id for c in a["chosen"]}
        owner, parts = a["owner"], a["turn_parts"]
        why_of = {i: ("selected trajectory " if owner.get(i) in sel else "trajectory ") +
                  f"{owner.get(i)}: " + ", ".join(f"{k2}={v:.3f}" for k2, v in parts[i].items())
                  for i in a["order"][:120]}
        return {
            "method": ("direct trajectory ranking (no wiki)" if direct else
                       f"wiki routing to top-{t} pages") + f", top-{k} trajectories by "
                      "relevance + coverage gain - redundancy, round-robin evidence expansion",
            "query_features": {kk: (sorted(v) if isinstance(v, set) else v)
                               for kk, v in a["f"].items()},
            "pages_routed": [{"id": x.page.id, "type": x.page.type, "title": x.page.title,
                              "hub": x.page.hub, "links": x.page.n_links, **x.parts}
                             for x in a["routed"]],
            "candidate_universe": len(a["rows"]),
            "universe_ids": sorted(r.id for r in a["rows"]),
            "candidates": [{"id": tid, **{kk: round(v, 4) for kk, v in p.items()}}
                           for tid, p in cand[:40]],
            "selected": [{"id": c["row"].id, "title": c["row"].title, "gain": c["gain"],
                          **c["parts"], "sources": len(c["row"].source_ids)}
                         for c in a["chosen"]],
            "evidence": [dict(p, why=why_of.get(p["source_id"]))
                         for p in ev.provenance(env.space, packed.chosen, a["owner"], a["s_of"])],
            "left_out": [{"id": r.id, "why": why} for r, why in packed.left_out[:50]],
            "changed_later": revisions.listed(a["changed"], packed.chosen),
            "answerability": {"first": first["suff"], "retry": retry,
                              "final": a["suff"]},
            "budget": {"tokens": request.budget_tokens, "chars_allowed": packed.chars_budget,
                       "chars_used": packed.chars_used},
        }


class _Reads:
    """One recall's reads, passed to both attempts: the retry (``_attempt`` again with twice the
    pages) scores mostly the same trajectories, so their rows are read once per recall (turn
    vectors come from the sources' copy, ``Space.sources.matrix``); ``turns`` is the recall's
    turn search and source rows (``search.TurnSearch``, shared with ``auto``'s other voters
    when auto asks). Trajectory rows are also kept with the table's copy (``trajectories``)."""

    def __init__(self, space: StrategySpace, turns: TurnSearch):
        self.space, self.turns = space, turns
        self._trajs: dict[tuple, dict[str, store.Trajectory]] = {}
        self._keys: dict[str, frozenset | None] = {}

    def trajectories(self, ids: list[str], columns: list[str]) -> list[store.Trajectory]:
        """Trajectory rows of ``ids`` with ``columns``, each read once (the same row objects),
        their vectors as read-only float32 arrays. Rows, with what they are about
        (``route.traj_keys``), are also kept with the table's copy until the table changes
        (``Space.memo``): on a settled store later recalls read and derive none of them again
        (at 30k turns, copying ~400 candidate rows and their vectors took ~25 ms a recall,
        their keys ~9 ms). Callers must not change the rows."""
        got = self._trajs.setdefault(tuple(columns), {})
        miss = [i for i in ids if i not in got]
        shared = self.space.derived.memo(store.TRAJ, "rows:" + ",".join(columns)) if miss else None
        if shared is not None:
            for i in miss:
                if i in shared:
                    got[i], keys = shared[i]
                    if keys is not None:
                        self._keys[i] = keys
            miss = [i for i in miss if i not in got]
        if miss:
            keyed = {"names", "heads", "speakers", "facets"} <= set(columns)
            for r in store.trajectories(self.space, eq={"id": miss}, columns=columns):
                got[r.id] = r
                if keyed:
                    self._keys[r.id] = route.traj_keys(r)
                if shared is not None:
                    shared[r.id] = (r, self._keys.get(r.id))
        return [got[i] for i in ids if i in got]

    def keys(self, r: store.Trajectory) -> frozenset:
        """``route.traj_keys`` of a row ``trajectories`` returned, made when it was read."""
        got = self._keys.get(r.id)
        return route.traj_keys(r) if got is None else got
