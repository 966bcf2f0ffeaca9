"""The namespace's sessions: one row per conversation session (its time, title, curation
state), keyed by session id (``Space.sessions``)."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa

from .core import SpaceCore
from .db import retrying, sql_in, sql_str
from .rows import Session
from .scan import scan_rows
from .schema import SESSIONS
from .versioned import Versioned


class Sessions:
    """The ``sessions`` table of one namespace."""

    def __init__(self, core: SpaceCore):
        self.core = core
        self._kept: Versioned[str, Session | None] = Versioned()   # rows by version (versioned.py)

    def get(self, session_id: str) -> Session | None:
        """The session's row at the table's version (kept from this process's last read or
        write of it while that version stands)."""
        tbl = self.core.table("sessions")
        if tbl is None:
            return None
        at = tbl.version
        kept = self._kept.get(session_id, at)
        if kept is not None:
            return kept[0]
        rows = scan_rows(tbl, f"session_id = {sql_str(session_id)}", limit=1)
        got = Session.of(rows[0]) if rows and rows[0]["namespace"] == self.core.namespace else None
        if tbl.version == at:   # the read saw that version (the handle did not move meanwhile)
            self._kept.put(session_id, at, got)
        return got

    def time(self, session_id: str) -> datetime | None:
        """When one session took place (None: no time stored, or no such session)."""
        sess = self.get(session_id)
        return sess.session_time if sess is not None else None

    def put(self, session: Session) -> None:
        self._merge(session, None)

    def claim(self, session: Session, stored: int | None) -> bool:
        """Write the session's row only if the stored row still counts ``stored`` messages
        (None: only if there is no row yet); True if written. A compare-and-set across
        processes with no lock in common (an object-store home): LanceDB evaluates the
        condition again on the newest version when the commit conflicts with another
        process's, so of two writers numbering new messages after the same stored ones, one
        wins and the other reads again."""
        cond = "target.n_messages < 0" if stored is None else f"target.n_messages = {int(stored)}"
        return self._merge(session, cond)

    def _merge(self, session: Session, where: str | None) -> bool:
        row = dict(session.as_dict(), namespace=self.core.namespace, updated_at=self.core.now())
        tbl = self.core.table("sessions", SESSIONS, create=True)
        data = pa.Table.from_pylist([row], schema=SESSIONS)   # its key is not nullable
        with self.core.writing():
            self.core.rewrote(tbl)
            got = retrying(lambda: tbl.merge_insert("session_id")
                           .when_matched_update_all(where=where)
                           .when_not_matched_insert_all().execute(data), "session", table=tbl)
            self.core.wrote_copy("sessions", got, [session.session_id])
        wrote = got.num_updated_rows + got.num_inserted_rows > 0
        if wrote:   # that commit changed this one row: the others kept at the version before hold
            self._kept.advanced(got.version, lambda sid, kept: kept)
            self._kept.put(session.session_id, got.version, Session.of(row))
        self.core.after_write("sessions")
        return wrote

    def all(self) -> list[Session]:
        tbl = self.core.table("sessions")
        return [Session.of(r) for r in tbl.search().limit(None).to_list()] if tbl is not None else []

    def times(self) -> dict:
        """session id -> its ``session_time`` (or None), reading only those columns: curation
        and temporal recall need the order of sessions in time, not every session row."""
        return {r["session_id"]: r["session_time"] for r in self._rows()}

    def _rows(self) -> list[dict]:
        """This namespace's session rows (from the in-process copy when it serves,
        ``snapshot.py``; every recall asks twice). Callers must not change them."""
        tbl = self.core.table("sessions")
        if tbl is None:
            return []
        state = self.core.table_copy("sessions", tbl, follows_bulk_writes=True,   # curation reads it
                                     key="session_id")
        if state is not None:                                                # and writes it once
            return state.rows
        rows = tbl.search().limit(None).to_list()
        return [r for r in rows if r["namespace"] == self.core.namespace]

    def latest_time(self) -> datetime | None:
        """The latest ``session_time`` of the namespace."""
        return max((t for t in self.times().values() if t is not None), default=None)

    def uncurated(self) -> list[str]:
        """Sessions whose curation is queued or failed: their turns are in no curated store yet."""
        return [r["session_id"] for r in self._rows()
                if r.get("curation") in ("queued", "failed")]

    def set_curation(self, session_id: str, state: str, n_messages: int) -> bool:
        """Mark the session's curation ``state`` if it still holds the ``n_messages`` its curation
        read; True if marked. Only that column (and ``updated_at``) is written: a ``remember``
        that stored more messages meanwhile (this process or another, on a folder or an object
        store) keeps its count and its "queued", so its messages are curated too."""
        tbl = self.core.table("sessions")
        if tbl is None:
            return False
        where = f"session_id = {sql_str(session_id)} AND n_messages = {int(n_messages)}"
        values = {"curation": state, "updated_at": self.core.now()}   # lancedb quotes them
        with self.core.writing():
            self.core.rewrote(tbl)
            got = retrying(lambda: tbl.update(where=where, values=values), "session curation",
                           table=tbl)
            self.core.wrote_copy("sessions", got, [session_id])
        self.core.after_write("sessions")
        return got.rows_updated > 0

    def delete(self, session_ids: list[str]) -> None:
        tbl = self.core.table("sessions")
        if tbl is not None and session_ids:
            with self.core.writing():
                self.core.rewrote(tbl)
                done = retrying(lambda: tbl.delete(sql_in("session_id", session_ids)),
                                "delete sessions", table=tbl)
                self.core.wrote_copy("sessions", done, session_ids)
