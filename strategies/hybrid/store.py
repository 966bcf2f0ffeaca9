"""Session curation into the ``memories`` table: which curator runs, and the rows it writes.

Order of preference for each session: host-curated memories (``origin="host"``, written
by ``remember(curated=...)``, or ``origin="sampled"``, written by the host's model through MCP
sampling during ``consolidate``) > an LLM when one is configured (``origin="llm"``) >
deterministic heuristics (``origin="heuristic"``). Curation is idempotent: it first deletes the
session's own ``heuristic``/``llm`` rows, then writes new ones unless the host curated the
session. An LLM failure (endpoint down, bad answer) falls back to heuristics for that session
and is logged. Every row records who wrote it in ``body.written_by`` (the model's name, or
``heuristic``).

Row text (what is embedded and searched): an episode's ``details`` (the paper indexes episodes by
their details; host episodes keep the text ``remember`` gave them); a tuple's natural-language
string "subject relation object", with its resolved date(s) appended when the text lacks them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeGuard

from ..base import spoken
from ..ids import stable_id
from ...storage.rows import Memory
from . import heuristics
from .items import Episode, Fact
from ...providers.base import ProviderError
from ...providers.llm_none import is_none
from .llm_curate import curate_session as llm_session

if TYPE_CHECKING:
    from ...providers.base import LLM
    from ..space_api import StrategySpace
    from ..base import Env

log = logging.getLogger(__name__)
KINDS = ("episode", "fact")
DERIVED_ORIGINS = ("heuristic", "llm")
KEPT_ORIGINS = ("host", "sampled")   # written by the host (or its model): curation keeps them


def session_rows(space: StrategySpace, session_id: str, vectors: bool = False) -> list[Memory]:
    """Every hybrid memory row (any status) of one session (with its vector if ``vectors``)."""
    return space.memories.where({"session_id": session_id, "kind": list(KINDS)}, vectors)


def llm_usable(llm: LLM | None) -> TypeGuard[LLM]:
    """An LLM is configured and is not the ``none`` provider."""
    if llm is None:
        return False

    return not is_none(llm)


def tuple_text(t: Fact) -> str:
    text = t.text
    missing = [d for d in t.dates or [] if d not in text]
    return text + (f" (on {', '.join(missing)})" if missing else "")


def build_rows(episodes: list[Episode], tuples: list[Fact], session_id: str, when, origin: str,
               now, written_by: str | None = None) -> list[Memory]:
    """The memories of one session's curation (without their vectors: ``write`` embeds them)."""
    by = {"written_by": written_by or origin}
    rows = []
    # ids from what the row says and where it sits in the curation, not random: the same
    # curation of the same session names its rows alike in any home (ties rank alike)
    def row(prefix: str, n: int, kind: str, text: str, body: dict, item: Episode | Fact) -> Memory:
        return Memory(id=stable_id(prefix, origin, session_id, str(n), text, *item.source_ids),
                      kind=kind, text=text, body={**body, "strategy": "hybrid", **by},
                      timestamp=item.timestamp or when, origin=origin,
                      session_id=session_id, source_ids=list(item.source_ids),
                      refs=[r for r in item.refs if r], status="active", created_at=now,
                      lineage={"history": [{"at": now.isoformat(), "op": "created", "by": origin}]})

    for n, e in enumerate(episodes):
        rows.append(row("epi", n, "episode", e.details or e.summary,
                        {"title": e.title, "summary": e.summary, "details": e.details}, e))
    for n, t in enumerate(tuples):
        rows.append(row("fct", n, "fact", tuple_text(t),
                        {"subject": t.subject, "relation": t.relation, "object": t.object,
                         "context": t.context, "dates": t.dates or []}, t))
    return rows


def curate(env: Env, session_id: str) -> dict:
    """(Re)build the hybrid memories of one session; returns what was done (for logs/tests)."""
    space = env.space
    existing = session_rows(space, session_id, vectors=True)
    stale = [r.id for r in existing if r.origin in DERIVED_ORIGINS]
    # a live session is curated again after each exchange; most of its episodes' and facts'
    # texts come out as before: their vectors are taken back instead of embedded again
    known = {r.text: r.vector for r in existing
             if r.origin in DERIVED_ORIGINS and r.vector is not None}
    if stale:
        space.memories.delete(stale)
    kept = next((r.origin for r in existing if r.origin in KEPT_ORIGINS), None)
    if kept:
        return {"origin": kept, "removed": len(stale), "added": 0}
    turns = spoken(space.sources.by_session(session_id))
    if not turns:
        return {"origin": None, "removed": len(stale), "added": 0}
    when = space.sessions.time(session_id) or turns[0].timestamp
    episodes = tuples = None
    origin, written_by = "heuristic", "heuristic"
    if llm_usable(env.llm):
        try:
            episodes, tuples = llm_session(env.llm, turns, when)
            origin, written_by = "llm", env.llm.name
        except ProviderError as exc:
            log.warning("LLM curation of %s failed (%s); using heuristics", session_id, exc)
    if episodes is None or tuples is None:
        vectors = space.sources.vectors([t.id for t in turns])
        episodes, tuples = heuristics.curate_session(turns, vectors, when, space.dim)
    now = space.now()
    rows = build_rows(episodes, tuples, session_id, when, origin, now, written_by)
    write(env, rows, known=known)
    return {"origin": origin, "removed": len(stale), "added": len(rows),
            "episodes": len(episodes), "facts": len(tuples)}


def write(env: Env, rows: list[Memory], replacing: dict[str, list[str]] | None = None,
          known: dict[str, Any] | None = None) -> None:
    """Embed ``rows``' texts and store them. ``known``: text -> the vector a row of this
    namespace's table already holds for it (the embedding of that text by this model, as
    stored), taken instead of embedding the text again."""
    if not rows:
        return
    known = known or {}
    todo = sorted({r.text for r in rows if r.text not in known})
    vectors = known | (dict(zip(todo, env.embed(todo))) if todo else {})
    env.space.memories.add([r.with_vector(vectors[r.text]) for r in rows], replacing)


def replace_session(env: Env, session_id: str, episodes: list[Episode], tuples: list[Fact],
                    written_by: str) -> dict:
    """Store the host model's curation of a session (``origin="sampled"``) in place of the
    heuristic / LLM rows it had; a session the host itself curated is left alone."""
    space = env.space
    existing = session_rows(space, session_id)
    if any(r.origin in KEPT_ORIGINS for r in existing) or not (episodes or tuples):
        return {"origin": None, "added": 0}
    now = space.now()
    rows = build_rows(episodes, tuples, session_id, space.sessions.time(session_id), "sampled", now,
                      written_by)
    # one commit writes the new rows and deletes the heuristic / LLM ones: a crash leaves the
    # old curation or the new, never both. A row the session already holds under the same
    # (stable) id is kept as it is, neither written twice nor deleted.
    have = {r.id for r in existing}
    fresh = [r for r in rows if r.id not in have]
    new = {r.id for r in rows}
    stale = [r.id for r in existing if r.origin in DERIVED_ORIGINS and r.id not in new]
    if fresh:
        write(env, fresh, replacing={"session_id": [session_id], "origin": list(DERIVED_ORIGINS),
                                     "kind": list(KINDS)})
    elif stale:   # the new rows were written already: deleting the old is one commit too
        space.memories.delete(stale)
    return {"origin": "sampled", "added": len(rows), "removed": len(stale)}
