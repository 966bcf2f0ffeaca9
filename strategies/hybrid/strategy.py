"""``HybridStrategy``: the hooks the tools call (recall, curate, consolidate, forget, explain).

Recall never waits for curation or an LLM: it reads whatever memories the background worker has
written so far (sessions not yet curated are still found through their raw turns). See
``retrieve.py`` for the retrieval and packing choices, ``store.py`` for curation and
``consolidate.py`` for consolidation; ``restore`` undoes one merge or supersession.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from ..base import Env, Item, RecallRequest, Recollection
from ..render import pack_sources
from ..search import source_ref
from . import retrieve as R
from .consolidate import consolidate, explain_memory, restore
from .store import KINDS, curate

if TYPE_CHECKING:
    from ...storage.rows import Memory


class HybridStrategy:
    name = "hybrid"
    Options = R.HybridOptions

    def has_memory(self, env: Env) -> bool:
        """Whether the namespace holds any active episode or fact (``auto`` asks)."""
        return any(env.space.memories.count(kind) for kind in ("episode", "fact"))

    # -- recall ------------------------------------------------------------------------------
    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        o = request.options.of(R.HybridOptions)
        k = o.k
        qv = env.embed_query(request.query)
        fts = bool(o.fts)
        episodes, ep_parts = R.search_memories(env, request, qv, "episode", k, fts)
        facts, fa_parts = R.search_memories(env, request, qv, "fact", 2 * k, fts)
        rows, fused = R.candidate_sources(env, request, o, episodes, facts, qv)
        limit = request.budget_tokens * 4
        notes, kept, dropped = R.notes_block(episodes, facts, int(limit * o.notes), o.max_notes,
                                             int(limit * R.NOTE_CAP))
        packed = pack_sources(rows, request.budget_tokens, extra_chars=len(notes),
                              quote_tokens=request.quote_tokens, focus=request.query)
        context = R.with_notes(packed.context, notes)   # notes alone still get the frame
        if len(context) > limit:  # cannot happen with pack_sources' accounting; stay safe anyway
            context, kept = packed.context, []
        quoted = {r.id for r in packed.chosen if r.id in packed.verbatim_ids}
        items = []
        for kind, row in kept:
            parts = (fa_parts if kind == "fact" else ep_parts).get(row.id, {})
            items.append(Item(id=row.id, kind=kind, text=row.text,
                              score=round(parts.get("score", 0.0), 6), role="note",
                              timestamp=row.timestamp, source_ids=row.source_ids or []))
        items += [Item(id=r.id, kind="source", text=r.text, role="evidence",
                       score=round(fused[r.id]["score"], 6), timestamp=r.timestamp,
                       source_ids=[r.id]) for r in packed.chosen]
        sources = [source_ref(r, packed.width) for r in packed.chosen if r.id in quoted]
        kept_ids = {row.id for _, row in kept}
        trace = {
            "method": f"top-{k} episodes + top-{2 * k} tuples (dense{' + BM25' if fts else ''}, RRF)"
                      "; their turns fused with the BM25 + dense turn search by weighted RRF",
            "options": asdict(o),
            "episodes": [self._mem_trace(r, ep_parts, kept_ids, quoted) for r in episodes],
            "facts": [self._mem_trace(r, fa_parts, kept_ids, quoted) for r in facts],
            "notes_dropped": [{"id": i, "why": why} for i, why in dropped],
            "chosen": [{"id": r.id, **fused[r.id], "why": "highest fused score that fit"}
                       for r in packed.chosen],
            "left_out": [{"id": r.id, **fused[r.id], "why": why}
                         for r, why in packed.left_out[:50]],
            "budget": {"tokens": request.budget_tokens, "chars_allowed": limit,
                       "notes_chars": len(notes), "evidence_chars": packed.chars_used,
                       "chars_used": len(context)},
        }
        return Recollection(context=context, items=items, sources=sources,
                            abstain=not packed.chosen and not kept, trace=trace,
                            route_reason=f"hybrid: {len(kept)} episode/tuple notes and "
                                         f"{len(packed.chosen)} quoted turns")

    @staticmethod
    def _mem_trace(row: Memory, parts: dict, kept: set, quoted: set) -> dict:
        p = parts.get(row.id, {})
        inside = [s for s in row.source_ids or [] if s in quoted]
        return {"id": row.id, "kind": row.kind, "origin": row.origin, "text": row.text[:200],
                **p, "rendered": row.id in kept, "sources_quoted": inside,
                "why": ("rendered as a note" if row.id in kept else "ranked, not rendered")
                + (f"; {len(inside)} of its turns quoted" if inside else "; no turn quoted")}

    # -- offline hooks -------------------------------------------------------------------------
    def curate(self, env: Env, session_id: str) -> dict:
        return curate(env, session_id)

    def consolidate(self, env: Env, dry_run: bool, min_cluster_size: int, progress=None) -> dict:
        return consolidate(env, dry_run=dry_run, min_cluster_size=min_cluster_size,
                           progress=progress)

    def restore(self, env: Env, memory_id: str) -> dict:
        return restore(env, memory_id)

    def forget(self, env: Env, source_ids: set[str]) -> int:
        """Delete hybrid memories citing any of ``source_ids`` (the tool deletes them too; doing
        it here keeps the hook self-contained); the session is then re-curated by the tool."""
        rows = [m for m in env.space.memories.citing(source_ids) if m.kind in KINDS]
        env.space.memories.delete([m.id for m in rows])
        return len(rows)

    def explain(self, env: Env, id: str) -> dict | None:
        return explain_memory(env, id)
