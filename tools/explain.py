"""The ``explain`` tool: where a memory came from, or why a recall returned what it did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from . import validate as v
from .answer import compact_json, doc, quoted
from .errors import ToolFailure
from .namespaces import require
from .params import Int
from .runtime import Runtime
from ..storage import NotFound
from ..strategies import registry
from ..strategies.base import Explains
from .recall import reading

if TYPE_CHECKING:
    from ..storage.rows import Memory, Source

PAGE_TOKENS = 2000               # the most one explain text may take (chars / 4)
PAGE_CHARS = PAGE_TOKENS * 4 - 200   # room for the page's header line


class Explanation(BaseModel):
    id: str
    kind: Literal["recall", "source", "memory"]
    summary: str
    record: dict[str, Any] = Field(description="the recall trace, the source or the memory itself")
    sources: list[dict[str, Any]] = Field(default_factory=list)
    derived: list[dict[str, Any]] = Field(default_factory=list, description="memories made from it")
    history: list[dict[str, Any]] = Field(default_factory=list, description="audit entries")


def _source_view(row: Source) -> dict:
    return row.view("id", "ref", "session_id", "seq", "speaker", "timestamp", "text", "metadata")


def _memory_view(row: Memory) -> dict:
    return {k: getattr(row, k) for k in ("id", "kind", "origin", "status", "session_id",
                                         "timestamp", "text", "body", "refs", "source_ids",
                                         "lineage")}


def _gone(trace) -> set[str]:
    """Ids the trace names whose rows are gone since (``storage/traces.fill`` marks them)."""
    out: set[str] = set()
    stack = [trace]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            if o.get("gone") and isinstance(o.get("id"), str):
                out.add(o["id"])
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)
    return out


def explain(rt: Runtime, id: str, namespace: str = "default") -> Explanation:
    v.namespace(namespace, rt.limits)
    mid = v.text_field("id", id, rt.limits, required=True)
    ns = require(rt, namespace)

    # read again on fresh handles when a forget in another process purged what this one read
    return reading(rt.env(ns), lambda: _explain(rt, mid, ns))


def _explain(rt: Runtime, mid: str, ns: str) -> Explanation:
    space = rt.space(ns)
    if mid.startswith("rcl_"):
        try:
            row = space.log.get_recall(mid)
        except NotFound as exc:
            raise ToolFailure(str(exc)) from exc
        t = row.trace
        gone = _gone(t)
        return Explanation(id=mid, kind="recall", record=t,
                           summary=f"{row.strategy} recall of {row.query!r}: "
                                   f"{len(t.get('items', []))} items, {t.get('tokens')} tokens. "
                                   f"{t.get('route_reason', '')}" + (
                                       f" [{len(gone)} of the messages or memories it named "
                                       "are no longer stored (forgotten or re-curated since): "
                                       "their text is gone]" if gone else ""))
    src = space.sources.get([mid])
    if src:
        derived = [_memory_view(m) for m in space.memories.citing({mid})]
        return Explanation(id=mid, kind="source", record=_source_view(src[0]), derived=derived,
                           sources=[_source_view(src[0])], history=space.log.audit_for(mid),
                           summary=f"raw message (ref {src[0].ref!r}) of session "
                                   f"{src[0].session_id!r}; {len(derived)} memories derive from it")
    mem = space.memories.get([mid])
    if mem:
        m = mem[0]
        sources = [_source_view(s) for s in space.sources.get(m.source_ids or [])]
        by = m.body.get("written_by")
        return Explanation(id=mid, kind="memory", record=_memory_view(m), sources=sources,
                           history=space.log.audit_for(mid),
                           summary=f"{m.kind} ({m.origin}, {m.status}"
                                   f"{', written by ' + by if by else ''}) from "
                                   f"{len(sources)} sources")

    env = rt.env(ns)
    for strat in registry.with_hook(Explains):
        found = strat.explain(env, mid)
        if found is not None:
            return Explanation(id=mid, kind="memory", record=found, summary=found.get(
                "summary", f"{strat.name} memory"), sources=found.get("sources", []),
                history=space.log.audit_for(mid))
    raise ToolFailure(f"no memory or recall with id {mid!r} in namespace {ns!r} "
                    "(ids come from remember's source_ids, recall's items or recall_id)")


def pages(out: Explanation) -> list[str]:
    """The explanation as text the model reads, in pages of at most ``PAGE_CHARS``: the summary,
    then the record, sources, derived memories and history as compact JSON (stored strings stay
    quoted JSON strings there, so none can pass for structure)."""
    body = compact_json({k: getattr(out, k) for k in ("record", "sources", "derived", "history")
                         if getattr(out, k)})
    text = f"{out.summary}\n{body}"
    return [text[i:i + PAGE_CHARS] for i in range(0, len(text), PAGE_CHARS)] or [""]


def text_of(out: Explanation, page: int) -> str:
    parts = pages(out)
    if page > len(parts):
        raise ToolFailure(f"explain of {quoted(out.id)} has {len(parts)} page(s); "
                          f"page {page} is past the end")
    more = (f"; call explain with page={page + 1} for more" if page < len(parts) else "")
    return f"[trimem explain {quoted(out.id)} ({out.kind}) · page {page} of {len(parts)}{more}]\n" \
        + parts[page - 1]


ID = Annotated[str, Field(description="A memory id (from remember's source_ids or recall's items) "
                                      "or a recall_id (rcl_...).",
                          examples=["rcl_0123456789abcdef0123", "src_0123456789abcdef0123"])]
PAGE = Annotated[Int, Field(description=f"Which page of the text to return (1 = first). One page "
                                        f"is at most {PAGE_TOKENS} tokens; the header says how "
                                        "many there are.", examples=[1])]

DESCRIPTION = doc(f"""
    Explain a memory id or a recall_id.

    For a memory: its raw sources (with refs and text), what was derived from it or what it was
    derived from, and its edit history. For a recall_id: the route taken, every item's score
    parts, why each was chosen, what was left out, and the budget accounting: the trace that
    recall produced, not a re-run. The text comes in pages of at most {PAGE_TOKENS} tokens
    (`page` picks one); the structured result holds everything at once.
    """)
