"""The committed write of a ``remember`` call, under the namespace's write lock: the check
for stored refs again, then the curated memories, the session row and the sources (the
acknowledgement point), then the audit entry. What comes before the lock is
``remember_prep.py``."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from ..storage.rows import Session
from .remember_prep import Call, Prep, held_ids
from ..storage.locks import LockLost
from .curated import store_curated

if TYPE_CHECKING:
    from ..storage.locks import Held
    from ..storage.space import Space
    from .runtime import Runtime

log = logging.getLogger(__name__)
LOCK_TRIES = 3   # the locked check-and-write, again after losing the lock while stopped
RACE_TRIES = 50  # ... after another process claimed the session's next messages first


def committed(rt: Runtime, call: Call, prep: Prep, curates: bool) -> tuple[list[dict], list[str]]:
    """Check and write under the namespace's write lock: the rows stored, the curated memories'
    ids. The check "is this ref stored yet?" and the write it decides must not interleave with
    another call's (a retry arriving twice at once, here or in another process): under the lock
    the refs are checked again, and the offset and the session row are read from what is
    stored now, so n_messages stays the number of stored messages."""
    space, sid, ns = rt.space(call.ns), call.sid, call.ns
    new_rows: list[dict] = prep.candidates
    memory_ids: list[str] = []
    attempt, raced = 0, 0
    while attempt < LOCK_TRIES:
        try:
            # one hold of the lock for the checks, the writes and the audit entry
            with space.store.write_lock(ns) as held:
                # another process's write, committed just now (its curated memories too: stored once)
                space.see_latest("sources", "sessions",
                                 *(["memories"] if call.plan is not None else []))
                session = space.sessions.get(sid)
                # one read of the session's stored messages: their refs (the check) and their
                # number (the offset new messages are numbered after)
                stored = space.sources.session_refs(sid)
                wanted = {r["ref"] for r in prep.candidates if r["ref"]}
                again = {ref: i for i, ref in stored if ref in wanted}
                prep.known.update(again)
                prep.have |= held_ids(space, sid, prep.candidates, call.kept)
                new_rows = [r for r in prep.candidates if (r["ref"] is None or r["ref"] not in again)
                            and r["id"] not in prep.have]
                # appending without a time: the session's stored time still holds
                st = (call.stime if call.stime is not None or session is None
                      else session.session_time)
                memory_ids = _write(space, sid, st, session, len(stored), new_rows, call.plan,
                                    prep, curates, held)
                _audit(space, sid, new_rows, len(call.rows) - len(new_rows), memory_ids)
            break
        except LockLost:   # stopped while holding the lock, which another process took over
            attempt += 1
            if attempt == LOCK_TRIES:
                raise
            log.warning("remember: lost the namespace lock while stopped; checking again")
        except SessionRaced:   # another process numbered messages of this session first
            raced += 1
            if raced == RACE_TRIES:
                raise
            time.sleep(random.uniform(0.0, min(0.5, 0.02 * raced)))
    return new_rows, memory_ids


class SessionRaced(RuntimeError):
    """Another process wrote the session's row since this call read it (no lock is shared
    across processes on an object-store home): read what is stored again and renumber."""


def _audit(space: Space, sid: str, new_rows: list[dict], already: int,
           memory_ids: list[str]) -> None:
    """The audit entry of a write that committed (best effort: the messages are stored)."""
    try:
        space.log.audit("remember", [r["id"] for r in new_rows] + memory_ids,
                        {"session_id": sid, "stored": len(new_rows), "already_stored": already,
                         "refs": [r["ref"] for r in new_rows if r["ref"]],
                         "curated": len(memory_ids)}, queued=True)
    except (OSError, RuntimeError) as exc:
        log.error("remember: %d messages stored, but their audit entry failed: %s", len(new_rows),
                  exc)


def _write(space: Space, sid: str, stime, session: Session | None, offset: int,
           new_rows: list[dict], plan, prep: Prep, curates: bool, held: Held | None) -> list[str]:
    """Number the new rows after the ``offset`` messages the session holds, then write (the
    caller holds the namespace's write lock, ``held``: checked before each write, so a process
    that was stopped and lost it writes nothing more). Returns the ids of the curated memories stored."""
    def check() -> None:
        if held is not None:
            held.check()

    # without a lock across processes (an object-store home, ``held`` None there) the row
    # count is claimed: numbered after what the session row says unless fewer are stored
    shared = "://" in space.store.uri
    counted = session.n_messages if session is not None else None
    if shared:
        offset = max(offset, counted or 0)
    now = space.now()
    times = _numbered(new_rows, sid, offset, stime, now)
    # Write order, for crash safety and honest errors: what only describes or derives from the
    # messages goes first (curated memories and the session row, both idempotent on retry); the
    # sources commit is the acknowledgement point; the audit entry after it is best effort.
    # So an error always means "the messages were not stored", and a crash before the sources
    # commit leaves a session that resumes curation from whatever it holds.
    session_time = (session.session_time if session else None) or stime or min(times)
    check()
    # curated memories given without a timestamp happened when the session did: this call's
    # session_time, else the session's stored time (for a new session: its earliest message)
    if plan is not None or session is None:
        # a new session's first write creates its row (and may create the namespace): not
        # before its messages are embedded, so that a failed embedding leaves nothing behind
        prep.ready()
    memory_ids = (store_curated(space, plan, sid, prep.by_ref, prep.cur_vecs, stime or session_time)
                  if plan is not None else [])
    row = _session_row(session, sid, session_time, times, offset + len(new_rows), curates, now)
    if not shared:
        space.sessions.put(row)
    elif not space.sessions.claim(row, counted):
        raise SessionRaced(sid)
    try:
        prep.ready()   # the vectors, embedded while the session row committed (remember_prep)
        check()
        space.sources.add(new_rows, _passages_of(new_rows, prep.passages))
    except BaseException:   # nothing was stored: the session row must not claim otherwise
        try:
            if shared:   # unless another process has numbered more messages after these
                space.sessions.claim(session or replace(row, n_messages=offset), row.n_messages)
            elif session is not None:
                space.sessions.put(session)
            else:
                space.sessions.delete([sid])
        except Exception as exc:
            log.error("remember: could not restore session %s after a failed write: %s", sid, exc)
        raise
    if held is not None and held.lost():
        # stopped in the middle of the write, and another process took the lock over meanwhile:
        # it may have stored the same refs (same ids); keep one copy of each
        space.sources.drop_twins([r["id"] for r in new_rows if r["ref"] is not None], now)
    return memory_ids


def _numbered(new_rows: list[dict], sid: str, offset: int, stime, now) -> list:
    """Give the new rows their session, position and time (in place); their times (this call's
    session time, else now, when there are none)."""
    for k, r in enumerate(new_rows):
        r.update(session_id=sid, seq=offset + k, created_at=now,
                 timestamp=r["timestamp"] or stime or now)
    return [r["timestamp"] for r in new_rows] or [stime or now]


def _passages_of(new_rows: list[dict], passages: list[dict]) -> list[dict]:
    """The passages of the rows stored, each with its message's time."""
    by_id = {r["id"]: r for r in new_rows}
    return [dict(p, timestamp=by_id[p["source_id"]]["timestamp"]) for p in passages
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
