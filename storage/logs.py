"""Sessions, the recall log (what `explain` replays) and the audit log (every mutation)."""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .db import retrying, sql_in, sql_str, sql_time
from .errors import NotFound
from .parts import SpaceParts
from .recall_writer import RecallWriter
from .rows import RecallRecord, Session
from .scan import scan_rows
from .schema import AUDIT, RECALLS, SESSIONS, TRACE_ENCODING
from .traces import compact, expand, fill, text_ids


PRUNE_EVERY = 50   # recalls logged (per process and namespace) between two prunes
SOURCE_ID = re.compile(r"\bsrc_[0-9a-f]{20}\b")   # remember's message ids (tools/remember_prep.py)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecallPolicy:
    """How much of the recall log is kept (settings ``TRIMEM_RECALL_LOG_*``)."""

    keep_days: float = 30.0          # records older than this are deleted; 0: log nothing
    keep_max: int = 10_000           # records per namespace; the oldest go first
    trace_max_bytes: int = 65_536    # a larger trace keeps its small fields and drops the rest


def bounded_trace(dumps, trace: dict, max_bytes: int) -> str:
    """The trace as JSON, at most ``max_bytes``: the largest fields are replaced by a note
    until it fits (what the recall returned is still listed in its ``source_ids``)."""
    text = dumps(trace)
    if len(text.encode()) <= max_bytes:
        return text
    out: dict[str, Any] = {**trace, "truncated": True}
    for key in sorted(trace, key=lambda k: -len(dumps(trace[k]))):
        out[key] = f"[dropped: {len(dumps(trace[key]).encode())} bytes over the trace limit]"
        text = dumps(out)
        if len(text.encode()) <= max_bytes:
            return text
    return dumps({"truncated": True, "strategy": str(trace.get("strategy", ""))[:100]})


class LogsMixin(SpaceParts):
    """Methods of :class:`~trimem.storage.space.Space` for sessions, recalls and the audit log."""

    def _init_logs(self) -> None:
        self._recall_writer = RecallWriter(self._write_recalls, "trimem-recall-log",
                                           guard=lambda wait: self.store.write_lock(
                                               self.namespace, wait))
        self._recall_policy = RecallPolicy()
        self._recalls_logged = 0   # records this process appended (pruning counts them)
        self._recall_encoded = False   # the log's trace column checked for its compression

    # -- sessions -------------------------------------------------------------------------------
    def get_session(self, session_id: str) -> Session | None:
        tbl = self.table("sessions")
        if tbl is None:
            return None
        rows = scan_rows(tbl, f"session_id = {sql_str(session_id)}", limit=1)
        return Session.of(rows[0]) if rows and rows[0]["namespace"] == self.namespace else None

    def session_time(self, session_id: str) -> datetime | None:
        """When one session took place (None: no time stored, or no such session)."""
        sess = self.get_session(session_id)
        return sess.session_time if sess is not None else None

    def put_session(self, session: Session) -> None:
        self._merge_session(session, None)

    def claim_session(self, session: Session, stored: int | None) -> bool:
        """Write the session's row only if the stored row still counts ``stored`` messages
        (None: only if there is no row yet); True if written. A compare-and-set across
        processes with no lock in common (an object-store home): LanceDB evaluates the
        condition again on the newest version when the commit conflicts with another
        process's, so of two writers numbering new messages after the same stored ones, one
        wins and the other reads again."""
        cond = "target.n_messages < 0" if stored is None else f"target.n_messages = {int(stored)}"
        return self._merge_session(session, cond)

    def _merge_session(self, session: Session, where: str | None) -> bool:
        import pyarrow as pa

        row = dict(session.as_dict(), namespace=self.namespace, updated_at=self.now())
        tbl = self.table("sessions", SESSIONS, create=True)
        data = pa.Table.from_pylist([row], schema=SESSIONS)   # its key is not nullable
        with self.writing():
            self.rewrote(tbl)
            got = retrying(lambda: tbl.merge_insert("session_id")
                           .when_matched_update_all(where=where)
                           .when_not_matched_insert_all().execute(data), "session", table=tbl)
        self.touch_copy("sessions")
        self.after_write("sessions")
        return got.num_updated_rows + got.num_inserted_rows > 0

    def list_sessions(self) -> list[Session]:
        tbl = self.table("sessions")
        return [Session.of(r) for r in tbl.search().limit(None).to_list()] if tbl is not None else []

    def session_times(self) -> dict:
        """session id -> its ``session_time`` (or None), reading only those columns: curation
        and temporal recall need the order of sessions in time, not every session row."""
        return {r["session_id"]: r["session_time"] for r in self._session_rows()}

    def _session_rows(self) -> list[dict]:
        """This namespace's session rows (from the in-process copy when it serves,
        ``snapshot.py``; every recall asks twice). Callers must not change them."""
        tbl = self.table("sessions")
        if tbl is None:
            return []
        state = self.table_copy("sessions", tbl, follows_bulk_writes=True)   # curation reads it
        if state is not None:                                                # and writes it once
            return state.rows
        rows = tbl.search().limit(None).to_list()
        return [r for r in rows if r["namespace"] == self.namespace]

    def latest_session_time(self) -> datetime | None:
        """The latest ``session_time`` of the namespace."""
        return max((t for t in self.session_times().values() if t is not None), default=None)

    def uncurated_sessions(self) -> list[str]:
        """Sessions whose curation is queued or failed: their turns are in no curated store yet."""
        return [r["session_id"] for r in self._session_rows()
                if r.get("curation") in ("queued", "failed")]

    def delete_sessions(self, session_ids: list[str]) -> None:
        tbl = self.table("sessions")
        if tbl is not None and session_ids:
            with self.writing():
                self.rewrote(tbl)
                retrying(lambda: tbl.delete(sql_in("session_id", session_ids)), "delete sessions", table=tbl)
            self.touch_copy("sessions")

    # -- recall log -----------------------------------------------------------------------------
    # What `explain(recall_id)` replays. It holds the query and the ids and scores of what was
    # ranked (the text of stored rows is read back by id: ``traces``), so it is kept bounded
    # (``RecallPolicy``: age, records per namespace, bytes per trace), scrubbed when the sources
    # it cites are forgotten, and `forget` can delete it by id, by time or whole.
    def log_recall(self, recall_id: str, query: str, strategy: str, source_ids: list[str],
                   trace: dict, policy: "RecallPolicy | None" = None) -> bool:
        """Record one recall; False when not recorded (the policy keeps none, or the namespace
        holds nothing: a read never creates tables)."""
        policy = policy or RecallPolicy()
        if policy.keep_days <= 0 or policy.keep_max <= 0 or not self.exists():
            return False
        ids = text_ids(trace)
        stored = {i: ("source", row) for i, row in self._source_texts(ids).items()}
        stored.update((i, ("memory", row)) for i, row in
                      self._memory_texts([i for i in ids if i not in stored]).items())
        # the texts were read now; packing against them is pure, so the writer does it (off
        # the response path): ``_write_recalls`` calls this
        row = {"recall_id": recall_id, "namespace": self.namespace, "created_at": self.now(),
               "query": query, "strategy": strategy, "source_ids": source_ids,
               "trace": lambda: bounded_trace(self.dumps, compact(trace, stored),
                                              policy.trace_max_bytes)}
        self._recall_policy = policy
        self._recall_writer.submit(row)
        return True

    def _write_recalls(self, rows: list[dict]) -> None:
        """Append ``rows`` to the log (the writer's batches) and prune it every few records.
        Runs under the namespace's write lock (the writer's guard), like ``forget``: a record
        naming a message that is no longer stored (forgotten by any process since the recall
        read it) is dropped here, and one written before a forget is found by that forget."""
        rows = [dict(r, trace=r["trace"]()) if callable(r["trace"]) else r for r in rows]
        named = {r["recall_id"]: set(r["source_ids"] or []) | set(SOURCE_ID.findall(r["trace"]))
                 for r in rows}
        wanted = set().union(*named.values())
        gone = wanted - self.existing_sources(wanted) if wanted else set()
        if gone:
            rows = [r for r in rows if not named[r["recall_id"]] & gone]
            log.info("recall record(s) of forgotten messages not logged (%d left)", len(rows))
            if not rows:
                return
        tbl = self._recall_table()
        retrying(lambda: tbl.add(rows), "recall log", table=tbl)
        self.after_write("recalls")
        policy = self._recall_policy
        before = self._recalls_logged
        self._recalls_logged += len(rows)
        every = max(1, min(PRUNE_EVERY, policy.keep_max // 10))   # so at most keep_max + every
        if before == 0 or self._recalls_logged // every > before // every:
            self.prune_recalls(policy)

    def _recall_table(self):
        """The log's table, created with ``RECALLS``; one an older version made gets the trace
        column's on-disk compression (``TRACE_ENCODING``) set, which its next compaction applies
        to the rows it rewrites."""
        tbl = self.table("recalls", RECALLS, create=True)
        if not self._recall_encoded:
            meta = {k.decode(): v.decode()
                    for k, v in (tbl.schema.field("trace").metadata or {}).items()}
            if any(meta.get(k) != v for k, v in TRACE_ENCODING.items()):
                retrying(lambda: tbl.update_field_metadata(
                    {"path": "trace", "metadata": TRACE_ENCODING}), "recall log", table=tbl)
            self._recall_encoded = True
        return tbl

    def flush_recalls(self) -> None:
        """Write the queued records now (``recall_writer``): before anything reads the log."""
        self._recall_writer.flush()

    def close_recalls(self, timeout: float = 30.0) -> None:
        """Write the queued records and stop the writer (before the process exits); a record
        logged after this is written synchronously."""
        self._recall_writer.close(timeout)

    def prune_recalls(self, policy: "RecallPolicy") -> int:
        """Delete records older than ``keep_days`` and the oldest beyond ``keep_max``."""
        self.flush_recalls()
        tbl = self.table("recalls")
        if tbl is None:
            return 0
        cutoff = self.now() - timedelta(days=policy.keep_days)
        old = tbl.count_rows(sql_time("created_at", "<", cutoff))
        if old:
            with self.writing():
                self.rewrote(tbl)
                retrying(lambda: tbl.delete(sql_time("created_at", "<", cutoff)), "prune recalls", table=tbl)
        extra, n = [], tbl.count_rows()
        if n > policy.keep_max:
            rows = tbl.search().select(["recall_id", "created_at"]).limit(None).to_list()
            rows.sort(key=lambda r: r["created_at"])
            extra = [r["recall_id"] for r in rows[:n - policy.keep_max]]
            self.delete_recalls(extra)
        return old + len(extra)

    def get_recall(self, recall_id: str) -> RecallRecord:
        """The record with its trace as the recall produced it: the text of every source or
        memory it names is read now by id (one forgotten since is marked ``gone``, textless);
        ``trace_bytes`` is what the stored trace takes."""
        self.flush_recalls()
        tbl = self.table("recalls")
        rows = [] if tbl is None else tbl.search().where(
            f"recall_id = {sql_str(recall_id)}").limit(1).to_list()
        if not rows or rows[0]["namespace"] != self.namespace:
            raise NotFound(f"no recall {recall_id!r} in namespace {self.namespace!r}")
        row = rows[0]
        trace = fill(expand(json.loads(row["trace"])), self._source_texts, self._memory_texts)
        return RecallRecord(row["recall_id"], row["namespace"], row.get("created_at"),
                            row["query"], row["strategy"], list(row.get("source_ids") or []),
                            trace, len(row["trace"].encode()))

    def _source_texts(self, ids: list[str]) -> dict[str, tuple[str, datetime | None]]:
        """id -> (text, timestamp) of the sources still stored (what a trace elides)."""
        return {r.id: (r.text, r.timestamp) for r in self.get_sources(ids)} if ids else {}

    def _memory_texts(self, ids: list[str]) -> dict[str, tuple[str, datetime | None]]:
        return {r.id: (r.text, r.timestamp)
                for r in self.get_memories(ids)} if ids else {}

    def recalls_citing(self, ids: set[str], in_trace: bool = True) -> list[str]:
        """Recall records that cite any of ``ids`` (sources or memories) or, with ``in_trace``,
        name one anywhere in their trace (a ranked candidate, a left-out turn): a query that
        matched a forgotten message is as telling as the message."""
        self.flush_recalls()
        tbl = self.table("recalls")
        if tbl is None or not ids:
            return []
        rows = tbl.search().select(["recall_id", "source_ids"]).limit(None).to_list()
        out = {r["recall_id"] for r in rows if ids.intersection(r["source_ids"] or [])}
        named = sorted(ids) if in_trace else []
        for i in range(0, len(named), 50):
            where = " OR ".join(f"trace LIKE {sql_str('%' + x + '%')}" for x in named[i:i + 50])
            out.update(r["recall_id"] for r in tbl.search().where(where).select(["recall_id"])
                       .limit(None).to_list())
        return sorted(out)

    def recalls_between(self, before: datetime | None = None,
                        after: datetime | None = None) -> list[str]:
        """Ids of recall records created in a time range (both ends optional: all of them)."""
        self.flush_recalls()
        tbl = self.table("recalls")
        if tbl is None:
            return []
        parts = [sql_time("created_at", "<=", before)] if before else []
        parts += [sql_time("created_at", ">=", after)] if after else []
        q = tbl.search().select(["recall_id"])
        if parts:
            q = q.where(" AND ".join(parts))
        return [r["recall_id"] for r in q.limit(None).to_list()]

    def delete_recalls(self, recall_ids: list[str]) -> None:
        self.flush_recalls()
        tbl = self.table("recalls")
        if tbl is not None and recall_ids:
            for i in range(0, len(recall_ids), 500):
                chunk = recall_ids[i:i + 500]
                with self.writing():
                    self.rewrote(tbl)
                    retrying(lambda chunk=chunk: tbl.delete(sql_in("recall_id", chunk)),
                             "delete recalls", table=tbl)

    # -- audit ----------------------------------------------------------------------------------
    def audit(self, op: str, target_ids: list[str], detail: dict) -> str:
        tbl = self.table("audit", AUDIT, create=True)
        aid = "aud_" + uuid.uuid4().hex[:20]
        row = {"id": aid, "namespace": self.namespace, "at": self.now(), "op": op,
               "target_ids": list(target_ids), "detail": self.dumps(detail)}
        with self.writing():
            retrying(lambda: tbl.add([row]), "audit", table=tbl)
        self.touch_copy("audit")   # this process reads its own entry next (forget records)
        self.after_write("audit")
        return aid

    def audit_for(self, target_id: str, limit: int = 50) -> list[dict]:
        """Audit entries that name ``target_id``, oldest first."""
        tbl = self.table("audit")
        if tbl is None:
            return []
        rows = tbl.search().where(f"array_has(target_ids, {sql_str(target_id)})").limit(None).to_list()
        rows.sort(key=lambda r: r["at"])
        return [{"id": r["id"], "at": r["at"], "op": r["op"], "detail": json.loads(r["detail"])}
                for r in rows[-limit:]]

    def audit_log(self, since: datetime | None = None, limit: int = 100) -> list[dict]:
        tbl = self.table("audit")
        rows = [] if tbl is None else tbl.search().limit(None).to_list()
        rows = [r for r in rows if since is None or r["at"] >= since]
        rows.sort(key=lambda r: r["at"])
        return [{"id": r["id"], "at": r["at"], "op": r["op"], "target_ids": r["target_ids"],
                 "detail": json.loads(r["detail"])} for r in rows[-limit:]]
