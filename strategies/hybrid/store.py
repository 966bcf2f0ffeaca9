"""Session curation into the ``memories`` table: which curator runs, and the rows it writes.

Order of preference for each session (issue 3): host-curated memories (``origin="host"``, written
by ``remember(curated=...)``) > an LLM when one is configured (``origin="llm"``) > deterministic
heuristics (``origin="heuristic"``). Curation is idempotent: it first deletes the session's own
``heuristic``/``llm`` rows, then writes new ones unless the host curated the session. An LLM
failure (endpoint down, bad answer) falls back to heuristics for that session and is logged.

Row text (what is embedded and searched): an episode's ``details`` (the paper indexes episodes by
their details; host episodes keep the text ``remember`` gave them); a tuple's natural-language
string "subject relation object", with its resolved date(s) appended when the text lacks them.
"""

from __future__ import annotations

import logging
import uuid

log = logging.getLogger(__name__)
KINDS = ("episode", "fact")
DERIVED_ORIGINS = ("heuristic", "llm")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def session_rows(space, session_id: str) -> list[dict]:
    """Every hybrid memory row (any status) of one session."""
    if space.table("memories") is None:
        return []
    rows = space.rows("memories", eq={"session_id": session_id, "kind": list(KINDS)},
                      columns=["id", "origin", "kind", "status"])
    return rows


def llm_usable(llm) -> bool:
    if llm is None:
        return False
    from ...providers.llm_none import is_none

    return not is_none(llm)


def tuple_text(t: dict) -> str:
    text = t["text"]
    missing = [d for d in t.get("dates") or [] if d not in text]
    return text + (f" (on {', '.join(missing)})" if missing else "")


def build_rows(episodes: list[dict], tuples: list[dict], session_id: str, when, origin: str,
               now) -> list[dict]:
    rows = []
    for e in episodes:
        rows.append({"id": new_id("epi"), "kind": "episode", "text": e["details"] or e["summary"],
                     "body": {"title": e["title"], "summary": e["summary"], "details": e["details"],
                              "strategy": "hybrid"},
                     "timestamp": e.get("timestamp") or when, **_common(e, session_id, origin, now)})
    for t in tuples:
        rows.append({"id": new_id("fct"), "kind": "fact", "text": tuple_text(t),
                     "body": {"subject": t["subject"], "relation": t["relation"],
                              "object": t["object"], "context": t["context"],
                              "dates": t.get("dates") or [], "strategy": "hybrid"},
                     "timestamp": t.get("timestamp") or when, **_common(t, session_id, origin, now)})
    return rows


def _common(item: dict, session_id: str, origin: str, now) -> dict:
    return {"origin": origin, "session_id": session_id, "source_ids": list(item["source_ids"]),
            "refs": [r for r in item["refs"] if r], "status": "active", "created_at": now,
            "lineage": {"history": [{"at": now.isoformat(), "op": "created", "by": origin}]}}


def curate(env, session_id: str) -> dict:
    """(Re)build the hybrid memories of one session; returns what was done (for logs/tests)."""
    from . import heuristics

    space = env.space
    existing = session_rows(space, session_id)
    stale = [r["id"] for r in existing if r["origin"] in DERIVED_ORIGINS]
    if stale:
        space.delete_memories(stale)
    if any(r["origin"] == "host" for r in existing):
        return {"origin": "host", "removed": len(stale), "added": 0}
    turns = space.sources_by_session(session_id)
    if not turns:
        return {"origin": None, "removed": len(stale), "added": 0}
    sess = space.get_session(session_id) or {}
    when = sess.get("session_time") or turns[0].get("timestamp")
    episodes = tuples = None
    origin = "heuristic"
    if llm_usable(env.llm):
        from ...providers.base import ProviderError
        from .llm_curate import curate_session as llm_session

        try:
            episodes, tuples = llm_session(env.llm, turns, when)
            origin = "llm"
        except ProviderError as exc:
            log.warning("LLM curation of %s failed (%s); using heuristics", session_id, exc)
    if episodes is None:
        vectors = space.source_vectors([t["id"] for t in turns])
        episodes, tuples = heuristics.curate_session(turns, vectors, when)
    now = space.now()
    rows = build_rows(episodes, tuples, session_id, when, origin, now)
    if rows:
        vecs = env.embed([r["text"] for r in rows])
        for r, v in zip(rows, vecs):
            r["vector"] = v
        space.add_memories(rows)
    return {"origin": origin, "removed": len(stale), "added": len(rows),
            "episodes": len(episodes), "facts": len(tuples)}
