"""The ``forget`` tool: hard-delete sources and everything derived from them."""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, Field

from ..storage import NotFound, SourceFilter
from . import refs as by_ref
from . import validate as v
from .answer import doc, names, quoted
from .errors import ToolFailure
from .namespaces import require
from .params import TIME, Bool, DateTimeStr
from .runtime import Runtime
from ..storage.locks import LockLost
from ..strategies import registry
from ..strategies.base import Forgets
from .recall import catch_up

if TYPE_CHECKING:
    from ..storage.locks import Held
    from ..storage.rows import Memory, Source
    from ..storage.space import Space

log = logging.getLogger(__name__)
LOCK_TRIES = 2   # a forget that lost its lock while stopped runs once more


class ForgetResult(BaseModel):
    removed_sources: int = Field(description="Raw messages deleted.")
    removed_memories: int = Field(description="Memories derived from them (or named) deleted.")
    removed_recalls: int = Field(description="Recall log entries that quoted them, deleted.")
    source_ids: list[str] = Field(description="Ids of the deleted messages.")
    refs: list[str] = Field(description="Your refs of the deleted messages.")
    not_found: list[str] = Field(description="Ids, refs or session ids given that matched nothing.")
    audit_id: str = Field(description="The audit entry recording the deletion (ids and refs only).")


def forget(rt: Runtime, ids: list[str] | None = None, refs: list[str] | None = None,
           session_id: str | None = None, namespace: str = "default",
           recall_ids: list[str] | None = None, recalls_before: str | None = None,
           all_recalls: bool = False) -> ForgetResult:
    """Sources named by ids / refs / session, the memories citing them and the recall logs that
    quoted them are deleted; then the text index is rebuilt and old table versions are purged,
    so the text is gone from disk, not just hidden. Memory ids in ``ids`` delete that memory only.
    Recall records (queries and what they returned) go by ``recall_ids``, by time
    (``recalls_before``: created at or before it) or all of them (``all_recalls``).

    It runs under the namespace's write lock, which every process on the memory folder shares
    (``Store.write_lock``): forgets in several processes run one after the other, each from
    the newest table versions, and a recall record another process writes is either seen and
    deleted or refused afterwards (``storage.logs.Log._write_recalls``). It answers only once no table
    lists a version from before its purge. On a bucket (no lock files) it holds the namespace's
    curation turn too (``storage/bucket_lease.py``): another machine's curation step ends before
    it deletes, and the next one reads what is left.
    """
    v.namespace(namespace, rt.limits)
    ids = [v.text_field(f"ids[{k}]", x, rt.limits, required=True) for k, x in enumerate(ids or [])]
    refs = [v.text_field(f"refs[{k}]", x, rt.limits, required=True) for k, x in enumerate(refs or [])]
    sid = v.text_field("session_id", session_id, rt.limits)
    rids = [v.text_field(f"recall_ids[{k}]", x, rt.limits, required=True)
            for k, x in enumerate(recall_ids or [])]
    before = v.when("recalls_before", recalls_before)
    if not (ids or refs or sid or rids or before or all_recalls):
        raise ToolFailure("say what to forget: ids, refs, session_id, recall_ids, recalls_before "
                        "or all_recalls")
    ns = require(rt, namespace)

    space = rt.space(ns)
    space.log.flush()   # before the lock: the recall log's writer takes it too
    found = Targets()
    busy = rt.namespace_lock(ns)   # curation and consolidation of it, in this process
    if not busy.acquire(timeout=rt.config.lock_wait_s):
        raise ToolFailure(f"namespace {quoted(ns)} is busy in this process (a consolidation or a "
                          f"curation has held it for over {rt.config.lock_wait_s:g} s): nothing "
                          "was deleted; retry in a moment")
    try:
        for attempt in range(LOCK_TRIES):
            try:
                with ExitStack() as stack:
                    if "://" in space.store.uri:
                        # a bucket has no forget fence (``SpaceCore.fenced``): wait for another
                        # machine's curation step instead of deleting under it, and make its next
                        # step read afresh (the turn's token)
                        stack.enter_context(space.store.curations.turn(ns))
                    held = stack.enter_context(space.store.write_lock(ns))
                    # another process's forget may have purged the versions this process's
                    # handles and caches were made from: start from the newest
                    catch_up(rt.env(ns), force=True)
                    # refs are scoped by session (tools/refs.py); an ambiguous one fails
                    # before any deletion
                    named = by_ref.to_forget(space, refs, sid) if refs else {}
                    gone = _forget_recalls(rt, ns, rids, before, all_recalls)
                    if not (ids or refs or sid):
                        return gone
                    out = _forget(rt, ns, ids, refs, named, None if refs else sid, found, held)
                out.removed_recalls += gone.removed_recalls
                out.not_found += gone.not_found
                return out
            except LockLost:   # stopped while holding the lock, which another process took over
                if attempt == LOCK_TRIES - 1:
                    raise
                log.warning("forget: lost the namespace lock while stopped; forgetting again")
    finally:
        busy.release()
    raise AssertionError("unreachable")


@dataclass
class Targets:
    """What a forget found to delete, kept across its attempts: one that lost its lock while
    stopped runs again, and reports what the first attempt already deleted too."""

    sources: dict[str, Source] = field(default_factory=dict)
    memories: dict[str, Memory] = field(default_factory=dict)


def _forget_recalls(rt: Runtime, ns: str, rids: list[str], before, every: bool) -> ForgetResult:
    space = rt.space(ns)
    chosen = set(space.log.recalls_between() if every else [])
    if before is not None and not every:
        chosen.update(space.log.recalls_between(before=before))
    not_found = []
    for rid in rids:
        try:
            space.log.get_recall(rid)
            chosen.add(rid)
        except NotFound:
            not_found.append(rid)
    audit_id = ""
    if chosen:
        space.log.delete_recalls(sorted(chosen))
        space.upkeep.optimize(purge=True)   # the queries are gone from disk too, not just hidden
        audit_id = space.log.audit("forget", [], {"recalls": len(chosen), "all_recalls": every,
                                              "recalls_before": str(before) if before else None})
    return ForgetResult(removed_sources=0, removed_memories=0, removed_recalls=len(chosen),
                        source_ids=[], refs=[], not_found=not_found, audit_id=audit_id)


def _forget(rt: Runtime, ns: str, ids: list[str], refs: list[str], named: dict[str, list[Source]],
            sid: str | None, found: Targets, held: Held | None) -> ForgetResult:
    """``named``: the messages of ``refs`` (tools/refs.py); ``sid``: a whole session to delete;
    ``found``: what an earlier attempt of this forget found (and may have deleted)."""
    space = rt.space(ns)
    not_found = _find(space, ids, refs, named, sid, found)
    sources, memories = found.sources, found.memories
    if not sources and not memories:
        raise ToolFailure(f"nothing to forget in namespace {ns!r}: no match for {not_found[:10]}")
    src_ids = set(sources)
    for m in space.memories.citing(src_ids):
        memories[m.id] = m
    recall_ids = space.log.recalls_citing(src_ids | set(memories))
    if held is not None:
        held.check()   # nothing below runs for a process that lost the lock while stopped
    derived, emptied = _delete(rt, ns, found, recall_ids, held)
    gone_refs = sorted({r.ref for r in sources.values() if r.ref})
    audit_id = space.log.audit("forget", sorted(src_ids) + sorted(memories),
                           {"sources": len(src_ids), "memories": len(memories),
                            "recalls": len(recall_ids), "refs": gone_refs, "sessions": emptied,
                            "derived": derived})
    return ForgetResult(removed_sources=len(src_ids), removed_memories=len(memories),
                        removed_recalls=len(recall_ids), source_ids=sorted(src_ids), refs=gone_refs,
                        not_found=not_found, audit_id=audit_id)


def _find(space: Space, ids: list[str], refs: list[str], named: dict[str, list[Source]],
          sid: str | None, found: Targets) -> list[str]:
    """Add to ``found`` the messages and memories named by ids, refs and the session; return
    what of those names matched nothing."""
    sources, memories = found.sources, found.memories
    sources.update({r.id: r for r in space.sources.get(ids)})
    memories.update({m.id: m for m in space.memories.get([i for i in ids if i not in sources])})
    not_found = [i for i in ids if i not in sources and i not in memories]
    found_refs = {r.ref for r in sources.values() if r.ref in refs} | set(named)
    for rows in named.values():
        sources.update({r.id: r for r in rows})
    not_found += [r for r in refs if r not in found_refs]
    if sid:
        session_rows = space.sources.by_session(sid)
        if not session_rows and space.sessions.get(sid) is None and \
                not any(r.session_id == sid for r in sources.values()):
            not_found.append(sid)
        sources.update({r.id: r for r in session_rows})
    return not_found


def _delete(rt: Runtime, ns: str, found: Targets, recall_ids: list[str],
            held: Held | None) -> tuple[dict, list[str]]:
    """Delete the strategies' derived rows, the memories, recall records and messages, and the
    sessions left empty; purge old versions; tell other processes; queue what remains of a
    touched session for curation again. Returns (rows each strategy removed, emptied sessions)."""
    from ..strategies import aliasstats  # lazy: pyarrow (strategies.aliasstats), not at start-up

    space, sources = rt.space(ns), found.sources
    src_ids = set(sources)
    env = rt.env(ns)
    derived = {st.name: st.forget(env, src_ids) for st in registry.with_hook(Forgets)}
    aliasstats.drop(space, {r.session_id for r in sources.values()})   # counts may not move
    space.memories.delete(sorted(found.memories))
    space.log.delete_recalls(recall_ids)
    space.sources.delete(sorted(src_ids))
    emptied = [s for s in {r.session_id for r in sources.values()}
               if space.sources.count(SourceFilter(session_id=s)) == 0]
    space.sessions.delete(emptied)
    space.sources.rebuild_text_index()
    space.upkeep.optimize(purge=True)   # then checks that no old version is left (else: an error)
    if held is not None:
        held.check()
    space.mark_forgotten(sorted(src_ids))   # other processes drop their caches (storage/forgets.py)
    env.ns.invalidate()
    if derived:  # what remains of a touched session is curated again, without the deleted text
        for sess in {r.session_id for r in sources.values()} - set(emptied):
            row = space.sessions.get(sess)
            if row is not None:   # a remember that stored more meanwhile queued it already
                space.sessions.set_curation(sess, "queued", row.n_messages)
                rt.curation.enqueue(ns, sess)
    return derived, emptied


def text_of(out: ForgetResult, namespace: str) -> str:
    text = (f"Forgot {out.removed_sources} message(s), {out.removed_memories} memory(ies) derived "
            f"from them and {out.removed_recalls} recall log entry(ies) in namespace "
            f"{quoted(namespace)}; the text is purged from disk.")
    if out.not_found:
        text += f" Not found: {names(out.not_found)}."
    return text


IDS = Annotated[list[str] | None, Field(
    description="Message ids (remember's source_ids, recall's sources) or memory ids to delete.",
    examples=[["src_0123456789abcdef0123"]])]
REFS = Annotated[list[str] | None, Field(
    description="Your own refs of the messages to delete (as given to remember). A ref belongs to "
                "its session: with session_id, that session's messages of these refs are deleted "
                "(and nothing else of the session); without it, each ref must name messages of "
                "one session only, else nothing is deleted and the error names the sessions.",
    examples=[["msg-41"]])]
SESSION_ID = Annotated[str | None, Field(
    description="Delete a whole session, every message of it. With refs: the session the refs "
                "are in (only those messages are deleted).", examples=["chat-2024-05-08"])]

RECALL_IDS = Annotated[list[str] | None, Field(
    description="Recall records to delete (past queries and what they returned, which `explain` "
                "replays), by their recall ids.", examples=[["rcl_0123456789abcdef0123"]])]
RECALLS_BEFORE = Annotated[DateTimeStr | None, TIME(
    "Delete every recall record made at or before this time (ISO-8601; no zone = UTC).")]
ALL_RECALLS = Annotated[Bool, Field(description="True: delete every recall record of the namespace.")]

DESCRIPTION = doc("""
    Permanently delete memories: by message or memory `ids`, by your `refs` (with `session_id`:
    that session's refs only), or a whole `session_id` (give at least one). Everything derived
    from the deleted messages goes too, as do recall log entries that quoted them, and the text
    is purged from disk: it cannot be recovered. The deletion itself is recorded (ids and refs
    only). Recall records (past queries and what they returned) go by `recall_ids`, by time
    (`recalls_before`) or all of them (`all_recalls`).
    """)
