"""The ``remember`` tool: store messages durably (and host-curated memories, if given)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..storage.rows import Session
from ..strategies.ids import stable_id
from . import validate as v
from .answer import doc, quoted
from .errors import ToolFailure
from .params import TIME, DateTimeStr
from .runtime import Runtime

if TYPE_CHECKING:
    from ..storage.locks import Held
    from ..storage.space import Space

log = logging.getLogger(__name__)
LOCK_TRIES = 3   # the locked check-and-write, again after losing the lock while stopped
PRECHECK_MIN = 8   # a call with more refs than this looks them up before embedding too


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(description="The message text, stored verbatim.",
                         examples=["I moved to Lisbon last week."])
    speaker: str | None = Field(default=None, description="Who said it (a name or 'user'/'assistant').",
                                examples=["user", "Ana"])
    timestamp: DateTimeStr | None = Field(default=None, description="When the message was sent "
                                          "(ISO-8601; default: the session's time).")
    ref: str | None = Field(default=None, description="Your own id for the message; echoed wherever it "
                            "is cited, and a message whose ref this session already holds is not "
                            "stored twice (safe retries).", examples=["msg-41"])
    metadata: dict[str, Any] | None = Field(default=None,
                                            description="Any JSON object, kept with the message.")


class CuratedEpisode(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="A short title for what happened.")
    summary: str = Field(description="What happened, in a few sentences.")
    details: str = Field(default="", description="Anything else worth keeping.")
    timestamp: DateTimeStr | None = Field(default=None, description="When it happened (ISO-8601; "
                                          "default: the session's time).")
    refs: list[str] = Field(default_factory=list, description="refs of the messages it came from")


class CuratedFact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str = Field(description="Who or what the fact is about.", examples=["Ana"])
    relation: str = Field(description="The relation, as a verb phrase.", examples=["works at"])
    object: str = Field(description="The other end of the relation.", examples=["Lumen"])
    timestamp: DateTimeStr | None = Field(default=None, description="When it became true (ISO-8601; "
                                          "default: the session's time).")
    context: str = Field(default="", description="The sentence or situation it comes from.")
    refs: list[str] = Field(default_factory=list, description="refs of the messages it came from")


class Curated(BaseModel):
    """Memories the host's own model already wrote, stored as given and linked to messages."""

    model_config = ConfigDict(extra="forbid")
    episodes: list[CuratedEpisode] = Field(default_factory=list,
                                           description="Summaries of what happened.")
    facts: list[CuratedFact] = Field(default_factory=list,
                                     description="Subject-relation-object facts.")


class RememberResult(BaseModel):
    session_id: str = Field(description="The session the messages went into (reuse it to append).")
    source_ids: list[str] = Field(description="One id per message given, in order (an already "
                                              "stored one keeps its id).")
    stored: int = Field(description="How many messages were new (the rest were already stored).")
    curation: Literal["done", "queued"] = Field(description="queued: the session's notes are "
                                                "being written in the background.")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def _check_messages(rt: Runtime, messages: list[Message], session_time,
                    whole_session: bool = False) -> list[dict]:
    """Rows for ``messages``, or ToolFailure naming the first bad one. ``whole_session``: the
    per-call limits (message count, characters in all) do not apply: an import writes a session
    that grew over many calls in one call (its file's size is bounded instead)."""
    lim = rt.limits
    if not messages:
        raise ToolFailure("messages is empty: pass at least one {content: ...}")
    if len(messages) > lim.max_messages and not whole_session:
        raise ToolFailure(f"{len(messages)} messages in one call; the limit is {lim.max_messages}: "
                        "split them over several calls with the same session_id")
    total = sum(len(m.content or "") for m in messages)
    if total > lim.max_call_chars and not whole_session:
        raise ToolFailure(f"the messages hold {total} characters in all; the limit per call is "
                        f"{lim.max_call_chars}: split them over several calls with the same "
                        "session_id")
    rows = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not m.content or not m.content.strip():
            raise ToolFailure(f"{where}.content is empty")
        if len(m.content) > lim.max_message_chars:
            raise ToolFailure(f"{where}.content is {len(m.content)} characters; the limit is "
                            f"{lim.max_message_chars}: split it into several messages")
        v.unicode(f"{where}.content", m.content)
        rows.append({
            "id": new_id("src"), "text": m.content,
            "speaker": v.text_field(f"{where}.speaker", m.speaker, lim),
            "ref": v.text_field(f"{where}.ref", m.ref, lim),
            "timestamp": v.when(f"{where}.timestamp", m.timestamp) or session_time,
            "metadata": v.metadata(m.metadata, lim, where),
        })
    refs = [r["ref"] for r in rows if r["ref"] is not None]
    if len(refs) != len(set(refs)):
        dup = sorted({x for x in refs if refs.count(x) > 1})
        raise ToolFailure(f"refs must be unique within a call; repeated: {dup[:5]}")
    return rows


def remember(rt: Runtime, messages: list[Message], session_id: str | None = None,
             session_time: str | None = None, namespace: str = "default",
             curated: Curated | None = None, progress=None) -> RememberResult:
    """Validate everything, embed, then write: sources in one commit (all or nothing).
    ``progress(done, total, message)``, if given, hears how far the embedding got."""
    return remember_session(rt, messages, session_id, session_time, namespace, curated,
                            progress)[0]


def remember_session(rt: Runtime, messages: list[Message], session_id: str | None = None,
                     session_time: str | None = None, namespace: str = "default",
                     curated: Curated | None = None, progress=None, *, whole_session=False,
                     keep_ids: list[str | None] | None = None) -> tuple[RememberResult, list[str]]:
    """:func:`remember`, and the ids of the curated memories it stored. For an import:
    ``whole_session`` lifts the per-call limits (so a session is one write, whatever its size);
    ``keep_ids[i]``, for a message without a ref, is the id it is stored under (the one it had
    where it was exported, so forget records naming it hold here too); a message whose kept id
    the session already holds is not stored again.

    Three steps: :func:`_checked` (every input, before anything is read or embedded),
    :func:`_prepared` (what is new, embedded outside the lock) and :func:`_committed` (the
    check again and the writes, under the namespace's write lock). Background curation lets
    a write in progress pass, and starts no session while writes keep arriving
    (``tools/curation.py``)."""
    with rt.writes:
        return _remember_session(rt, messages, session_id, session_time, namespace, curated,
                                 progress, whole_session, keep_ids)


def _remember_session(rt: Runtime, messages: list[Message], session_id: str | None,
                      session_time: str | None, namespace: str, curated: Curated | None,
                      progress, whole_session: bool,
                      keep_ids: list[str | None] | None) -> tuple[RememberResult, list[str]]:
    call = _checked(rt, messages, session_id, session_time, namespace, curated, whole_session,
                    keep_ids)
    prep = _prepared(rt, call, progress)
    from ..strategies import registry

    curates = bool(rt.config.curation and registry.curates())
    new_rows, memory_ids = _committed(rt, call, prep, curates)
    ids = [prep.known.get(r["ref"]) or r["id"] for r in call.rows]
    if curates:
        rt.curation.enqueue(call.ns, call.sid)
    if progress is not None:
        done = len(new_rows) + len(prep.extra)
        progress(done, done, "stored")
    return RememberResult(session_id=call.sid, source_ids=ids, stored=len(new_rows),
                          curation="queued" if curates else "done"), memory_ids


@dataclass
class _Call:
    """One call's checked inputs: namespace, session id and time, the message rows, the
    curated memories' plan, and the ids an import keeps."""

    ns: str
    sid: str
    stime: Any
    rows: list[dict]
    plan: Any
    kept: set[str]


@dataclass
class _Prep:
    """What :func:`_prepared` found: refs already stored (``known``: ref -> id), the ids the
    session holds (``have``), the rows to store with their vectors (``candidates``), the
    curated memories' texts (``extra``) and vectors, the cited rows by ref, the passages."""

    known: dict[Any, str]
    have: set[str]
    candidates: list[dict]
    extra: list[str]
    cur_vecs: Any
    by_ref: dict
    passages: list[dict]


def _checked(rt: Runtime, messages: list[Message], session_id: str | None,
             session_time: str | None, namespace: str, curated: Curated | None,
             whole_session: bool, keep_ids: list[str | None] | None) -> _Call:
    from .curated import check_curated, curated_texts

    ns = v.namespace(namespace, rt.limits)
    sid = v.text_field("session_id", session_id, rt.limits) or new_id("ses")
    if session_id is not None and not session_id.strip():
        raise ToolFailure("session_id must not be empty (omit it to start a new session)")
    stime = v.when("session_time", session_time)
    rows = _check_messages(rt, messages, stime, whole_session)
    for r, kept in zip(rows, keep_ids or []):
        if kept is not None and r["ref"] is None:
            r["id"] = v.text_field("id", kept, rt.limits, required=True)
    plan = check_curated(rt, curated, whole_session) if curated is not None else None
    if plan is not None and not whole_session:
        total = sum(len(r["text"]) for r in rows) + sum(len(t) for t in curated_texts(plan))
        if total > rt.limits.max_call_chars:
            raise ToolFailure(f"the messages and curated memories hold {total} characters in all; "
                            f"the limit per call is {rt.limits.max_call_chars}")
    kept_ids = {r["id"] for r in rows if r["ref"] is None} if keep_ids else set()
    return _Call(ns, sid, stime, rows, plan, kept_ids)


def _prepared(rt: Runtime, call: _Call, progress) -> _Prep:
    """The rows not stored yet, their stable ids, vectors and passages, and the curated
    memories' vectors: everything that can be done before the lock (embedding above all)."""
    from ..storage.sources import search_text
    from .curated import curated_texts, resolve_refs

    space, sid, rows, plan = rt.space(call.ns), call.sid, call.rows, call.plan
    # Retries are safe: a message whose ref is already stored in this session is not stored
    # again (its existing id is returned), so a host that resends after a crash or a timeout
    # never duplicates memory. The check under the lock decides (``_committed``); the look-up
    # here only spares a large resent call its embedding (for a few messages, embedding them
    # again on a retry costs less than a look-up on every call of an agent loop), and lets
    # curated memories cite a resent message by the id it is stored under.
    refs = [r["ref"] for r in rows if r["ref"]]
    known = ({r.ref: r.id for r in space.sources_by_refs(refs) if r.session_id == sid}
             if len(refs) > PRECHECK_MIN or plan is not None else {})
    have = _held(space, sid, rows, call.kept)
    new_rows = [r for r in rows if (r["ref"] not in known or r["ref"] is None)
                and r["id"] not in have]
    for r in new_rows:
        if r["ref"] is not None:
            r["id"] = stable_id("src", call.ns, sid, r["ref"])
    by_ref = resolve_refs(space, plan, new_rows, sid) if plan is not None else {}
    extra = curated_texts(plan) if plan is not None else []
    all_vecs = rt.embed([search_text(r) for r in new_rows] + extra, progress)
    for r, vec in zip(new_rows, all_vecs[:len(new_rows)]):
        r["vector"] = vec
    # the passages of long messages are embedded here too, not under the lock: a lock is held
    # for writes only (other processes wait for it, storage/locks.py)
    when = call.stime or space.now()
    passages = space.passage_rows([dict(r, session_id=sid, timestamp=r["timestamp"] or when)
                                   for r in new_rows])
    return _Prep(known, have, new_rows, extra, all_vecs[len(new_rows):], by_ref, passages)


def _committed(rt: Runtime, call: _Call, prep: _Prep, curates: bool) -> tuple[list[dict], list[str]]:
    """Check and write under the namespace's write lock: the rows stored, the curated memories'
    ids. The check "is this ref stored yet?" and the write it decides must not interleave with
    another call's (a retry arriving twice at once, here or in another process): under the lock
    the refs are checked again, and the offset and the session row are read from what is
    stored now, so n_messages stays the number of stored messages."""
    from ..storage.locks import LockLost

    space, sid, ns = rt.space(call.ns), call.sid, call.ns
    new_rows: list[dict] = prep.candidates
    memory_ids: list[str] = []
    for attempt in range(LOCK_TRIES):
        try:
            # one hold of the lock for the checks, the writes and the audit entry
            with space.store.write_lock(ns) as held:
                # another process's write, committed just now (its curated memories too: stored once)
                space.see_latest("sources", "sessions",
                                 *(["memories"] if call.plan is not None else []))
                session = space.get_session(sid)
                # one read of the session's stored messages: their refs (the check) and their
                # number (the offset new messages are numbered after)
                stored = space.session_refs(sid)
                wanted = {r["ref"] for r in prep.candidates if r["ref"]}
                again = {ref: i for i, ref in stored if ref in wanted}
                prep.known.update(again)
                prep.have |= _held(space, sid, prep.candidates, call.kept)
                new_rows = [r for r in prep.candidates if (r["ref"] is None or r["ref"] not in again)
                            and r["id"] not in prep.have]
                # appending without a time: the session's stored time still holds
                st = (call.stime if call.stime is not None or session is None
                      else session.session_time)
                memory_ids = _write(space, sid, st, session, len(stored), new_rows, call.plan,
                                    prep.by_ref, prep.cur_vecs, curates, held, prep.passages)
                _audit(space, sid, new_rows, len(call.rows) - len(new_rows), memory_ids)
            break
        except LockLost:   # stopped while holding the lock, which another process took over
            if attempt == LOCK_TRIES - 1:
                raise
            log.warning("remember: lost the namespace lock while stopped; checking again")
    return new_rows, memory_ids


def _audit(space: Space, sid: str, new_rows: list[dict], already: int,
           memory_ids: list[str]) -> None:
    """The audit entry of a write that committed (best effort: the messages are stored)."""
    try:
        space.audit("remember", [r["id"] for r in new_rows] + memory_ids,
                    {"session_id": sid, "stored": len(new_rows), "already_stored": already,
                     "refs": [r["ref"] for r in new_rows if r["ref"]], "curated": len(memory_ids)})
    except (OSError, RuntimeError) as exc:
        log.error("remember: %d messages stored, but their audit entry failed: %s", len(new_rows),
                  exc)


def _held(space: Space, sid: str, rows: list[dict], kept: set[str]) -> set[str]:
    """Which kept ids of ``rows`` this session already holds. A kept id another session holds
    names another message (ids are unique in a namespace): that row is given a stable id of
    its own instead (of this session and the kept id, so a second import finds it again)."""
    def sessions(ids: set[str]) -> dict[str, str]:
        return {r.id: r.session_id for r in space.get_sources(sorted(ids))} if ids else {}

    found = sessions({r["id"] for r in rows if r["ref"] is None} & kept)
    moved = set()
    for r in rows:
        if r["ref"] is None and found.get(r["id"], sid) != sid:
            r["id"] = stable_id("src", space.namespace, sid, "", r["id"])
            kept.add(r["id"])
            moved.add(r["id"])
    found |= sessions(moved)
    return {i for i, s in found.items() if s == sid}


def _write(space: Space, sid: str, stime, session: Session | None, offset: int, new_rows: list[dict], plan,
           by_ref, cur_vecs, curates: bool, held: Held | None,
           passages: list[dict]) -> list[str]:
    """Number the new rows after the ``offset`` messages the session holds, then write (the
    caller holds the namespace's write lock, ``held``: checked before each write, so a process
    that was stopped and lost it writes nothing more). Returns the ids of the curated memories stored."""
    from .curated import store_curated

    def check() -> None:
        if held is not None:
            held.check()

    now = space.now()
    times, passages = _numbered(new_rows, passages, sid, offset, stime, now)
    # Write order, for crash safety and honest errors: what only describes or derives from the
    # messages goes first (curated memories and the session row, both idempotent on retry); the
    # sources commit is the acknowledgement point; the audit entry after it is best effort.
    # So an error always means "the messages were not stored", and a crash before the sources
    # commit leaves a session that resumes curation from whatever it holds.
    session_time = (session.session_time if session else None) or stime or min(times)
    check()
    # curated memories given without a timestamp happened when the session did: this call's
    # session_time, else the session's stored time (for a new session: its earliest message)
    memory_ids = (store_curated(space, plan, sid, by_ref, cur_vecs, stime or session_time)
                  if plan is not None else [])
    space.put_session(_session_row(session, sid, session_time, times, offset + len(new_rows),
                                   curates, now))
    try:
        check()
        space.add_sources(new_rows, passages)
    except BaseException:   # nothing was stored: the session row must not claim otherwise
        try:
            space.put_session(session) if session is not None else space.delete_sessions([sid])
        except Exception as exc:
            log.error("remember: could not restore session %s after a failed write: %s", sid, exc)
        raise
    if held is not None and held.lost():
        # stopped in the middle of the write, and another process took the lock over meanwhile:
        # it may have stored the same refs (same ids); keep one copy of each
        space.drop_twins([r["id"] for r in new_rows if r["ref"] is not None], now)
    return memory_ids


def _numbered(new_rows: list[dict], passages: list[dict], sid: str, offset: int, stime,
              now) -> tuple[list, list[dict]]:
    """Give the new rows their session, position and time (in place); their times (this call's
    session time, else now, when there are none) and their passages with their message's time."""
    for k, r in enumerate(new_rows):
        r.update(session_id=sid, seq=offset + k, created_at=now,
                 timestamp=r["timestamp"] or stime or now)
    times = [r["timestamp"] for r in new_rows] or [stime or now]
    by_id = {r["id"]: r for r in new_rows}
    return times, [dict(p, timestamp=by_id[p["source_id"]]["timestamp"]) for p in passages
                   if p["source_id"] in by_id]


def _session_row(session: Session | None, sid: str, session_time, times: list, n_messages: int,
                 curates: bool, now) -> Session:
    """The session's row after this write: its first and last message times widened by
    ``times``, ``n_messages`` stored, queued for curation if anything curates."""
    first, last, created = ((session.first_ts, session.last_ts, session.created_at)
                            if session else (None, None, None))
    return Session(sid, session_time, min([t for t in [first] if t] + times),
                   max([t for t in [last] if t] + times), n_messages,
                   "queued" if curates else "done", created or now, now)


def text_of(out: RememberResult, given: int, namespace: str) -> str:
    again = given - out.stored
    return (f"Stored {out.stored} message(s) in session {quoted(out.session_id)} of namespace "
            f"{quoted(namespace)}" + (f"; {again} already stored" if again else "")
            + ("; curation queued (runs in the background)." if out.curation == "queued" else "."))


MESSAGES = Annotated[list[Message], Field(
    description="The new messages, oldest first: [{content, speaker?, timestamp?, ref?, metadata?}].",
    examples=[[{"content": "I moved to Lisbon last week.", "speaker": "user", "ref": "msg-41"}]])]
SESSION_ID = Annotated[str | None, Field(
    description="Groups messages into one conversation (an episode). Reuse it to append to a "
                "session; omit it to start a new one (its id is returned).",
    examples=["chat-2024-05-08"])]
SESSION_TIME = Annotated[DateTimeStr | None, TIME(
    "When the session took place (ISO-8601); messages without a timestamp get it.")]
CURATED = Annotated[Curated | None, Field(
    description="Optional: memories your own model already wrote ({episodes: [...], facts: "
                "[...]}, each with the refs of the messages it came from).")]

DESCRIPTION = doc("""
    Store conversation messages in long-term memory. Call it after each exchange.

    `session_id` groups messages into one conversation; reuse it to append, omit it to start a
    new session. Everything is durable when this returns, and nothing is stored if any input is
    bad. A message whose `ref` the session already holds is not stored again, so retries are
    safe. This is the only tool that creates a namespace.
    """)
