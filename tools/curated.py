"""Host-curated episodes and facts passed to ``remember``: checked first, stored as given.

Each curated memory is linked to the sources its ``refs`` name: messages of the same call, else
of the same session, else the one message of that ref in the namespace (``tools/refs.py``). A
ref that names no message, or messages of several other sessions, is an error, so a memory can
never claim provenance it does not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..storage.rows import Memory
from ..strategies.ids import stable_id
from . import validate as v
from .errors import ToolFailure
from .runtime import Runtime
from .refs import cited

if TYPE_CHECKING:
    from ..storage.space import Space


@dataclass
class CuratedPlan:
    episodes: list[dict]
    facts: list[dict]


def check_curated(rt: Runtime, curated, whole_session: bool = False) -> CuratedPlan:
    """The memories, checked (``whole_session``: an import's, without the per-call count)."""
    lim = rt.limits
    n = len(curated.episodes) + len(curated.facts)
    if n > lim.max_curated_items and not whole_session:
        raise ToolFailure(f"{n} curated memories in one call; the limit is {lim.max_curated_items}")
    episodes, facts = [], []
    for i, e in enumerate(curated.episodes):
        where = f"curated.episodes[{i}]"
        text = "\n".join(p for p in (e.title.strip(), e.summary.strip(), e.details.strip()) if p)
        if not text:
            raise ToolFailure(f"{where} is empty: give at least a title or a summary")
        _check_len(where, text, lim)
        episodes.append({"kind": "episode", "text": text, "refs": _refs(where, e.refs, lim),
                         "timestamp": v.when(f"{where}.timestamp", e.timestamp),
                         "body": {"title": e.title, "summary": e.summary, "details": e.details}})
    for i, f in enumerate(curated.facts):
        where = f"curated.facts[{i}]"
        if not (f.subject.strip() and f.relation.strip() and f.object.strip()):
            raise ToolFailure(f"{where} needs a subject, a relation and an object")
        text = f"{f.subject} {f.relation} {f.object}"
        _check_len(where, text + f.context, lim)
        facts.append({"kind": "fact", "text": text, "refs": _refs(where, f.refs, lim),
                      "timestamp": v.when(f"{where}.timestamp", f.timestamp),
                      "body": {"subject": f.subject, "relation": f.relation, "object": f.object,
                               "context": f.context}})
    return CuratedPlan(episodes, facts)


def _check_len(where: str, text: str, lim) -> None:
    v.unicode(where, text)
    if len(text) > lim.max_message_chars:
        raise ToolFailure(f"{where} is {len(text)} characters; the limit is {lim.max_message_chars}")


def _refs(where: str, refs: list[str], lim) -> list[str]:
    return [v.text_field(f"{where}.refs[{k}]", r, lim, required=True) for k, r in enumerate(refs)]


def resolve_refs(space: Space, plan: CuratedPlan, new_rows: list[dict],
                 session_id: str) -> dict[str, str]:
    """ref -> source id, preferring this call's messages, then the session's; ToolFailure on
    refs that name nothing or name messages of several other sessions."""
    wanted = {r for m in plan.episodes + plan.facts for r in m["refs"]}
    found = {r["ref"]: r["id"] for r in new_rows if r.get("ref") in wanted}
    missing = wanted - set(found)
    if missing:
        found.update(cited(space, sorted(missing), session_id))
    unknown = sorted(wanted - set(found))
    if unknown:
        raise ToolFailure(f"curated memories cite refs that name no stored message: {unknown[:10]}")
    return found


def curated_texts(plan: CuratedPlan) -> list[str]:
    return [m["text"] for m in plan.episodes + plan.facts]


def store_curated(space: Space, plan: CuratedPlan, session_id: str, by_ref: dict[str, str],
                  vectors, session_time) -> list[str]:
    """Store the plan. ``by_ref`` (from :func:`resolve_refs`) and ``vectors`` were computed
    before anything was written, so a bad ref or a failed embedding rejects the whole call.
    A memory given without a timestamp takes ``session_time`` (when the session took place),
    not the time it was stored: temporal questions are about the conversation's time."""
    items = plan.episodes + plan.facts
    ids = [memory_id(space.namespace, session_id, m) for m in items]
    # the caller holds the write lock and saw the latest memories: one stored by another call
    # (a retry, a second import of the same file) is not written twice
    held = {m.id for m in space.memories.get(ids)} if ids else set()
    now = space.now()
    rows = []
    for m, vec, mid in zip(items, vectors, ids):
        if mid in held:
            continue
        held.add(mid)
        rows.append(Memory(
            id=mid, kind=m["kind"], origin="host", session_id=session_id,
            timestamp=m["timestamp"] or session_time or now, text=m["text"], body=m["body"],
            refs=m["refs"], source_ids=[by_ref[r] for r in m["refs"]], status="active",
            lineage={"history": [{"at": now.isoformat(), "op": "created", "by": "host"}]},
            created_at=now, vector=vec))
    space.memories.add(rows)
    return [r.id for r in rows]


def memory_id(namespace: str, session_id: str, m: dict) -> str:
    """The stable id of a checked curated memory (``CuratedPlan`` item)."""
    return stable_id("epi" if m["kind"] == "episode" else "fct", namespace, session_id, m["text"],
                     *m["refs"])
