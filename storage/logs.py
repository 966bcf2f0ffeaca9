"""The recall log (what `explain` replays) and the audit log (every mutation)."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .db import retrying, sql_in, sql_str, sql_time
from .core import SpaceCore
from .errors import NotFound
from .memories import Memories
from .recall_writer import RecallWriter
from .rows import RecallRecord
from .schema import AUDIT, RECALLS, TRACE_ENCODING
from .sources import Sources
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


class Log:
    """The namespace's recall log and audit log (``Space.log``)."""

    def __init__(self, core: SpaceCore, sources: Sources, memories: Memories):
        self.core = core
        self.sources = sources     # the texts a trace names, read back by id
        self.memories = memories
        self._recall_writer = RecallWriter(self._write_recalls, "trimem-recall-log",
                                           guard=lambda wait: core.store.write_lock(
                                               core.namespace, wait))
        # remember's audit entries, one commit off every exchange (recall_writer.py)
        self._audit_writer = RecallWriter(self._write_audit, "trimem-audit-log",
                                          what="audit entry(ies)",
                                          lost="explain's history will miss them")
        self._recall_policy = RecallPolicy()
        self._recalls_logged = 0   # records this process appended (pruning counts them)
        self._recall_encoded = False   # the log's trace column checked for its compression

    # -- recall log -----------------------------------------------------------------------------
    # What `explain(recall_id)` replays. It holds the query and the ids and scores of what was
    # ranked (the text of stored rows is read back by id: ``traces``), so it is kept bounded
    # (``RecallPolicy``: age, records per namespace, bytes per trace), scrubbed when the sources
    # it cites are forgotten, and `forget` can delete it by id, by time or whole.
    def add_recall(self, recall_id: str, query: str, strategy: str, source_ids: list[str],
                   trace: dict, policy: "RecallPolicy | None" = None) -> bool:
        """Record one recall; False when not recorded (the policy keeps none, or the namespace
        holds nothing: a read never creates tables)."""
        policy = policy or RecallPolicy()
        if policy.keep_days <= 0 or policy.keep_max <= 0 or not self.core.exists():
            return False
        ids = text_ids(trace)
        stored = {i: ("source", row) for i, row in self._source_texts(ids).items()}
        stored.update((i, ("memory", row)) for i, row in
                      self._memory_texts([i for i in ids if i not in stored]).items())
        # the texts were read now; packing against them is pure, so the writer does it (off
        # the response path): ``_write_recalls`` calls this
        row = {"recall_id": recall_id, "namespace": self.core.namespace, "created_at": self.core.now(),
               "query": query, "strategy": strategy, "source_ids": source_ids,
               "trace": lambda: bounded_trace(self.core.dumps, compact(trace, stored),
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
        gone = wanted - self.sources.existing(wanted) if wanted else set()
        if gone:
            rows = [r for r in rows if not named[r["recall_id"]] & gone]
            log.info("recall record(s) of forgotten messages not logged (%d left)", len(rows))
            if not rows:
                return
        tbl = self._recall_table()
        retrying(lambda: tbl.add(rows), "recall log", table=tbl)
        self.core.after_write("recalls")
        policy = self._recall_policy
        before = self._recalls_logged
        self._recalls_logged += len(rows)
        every = max(1, min(PRUNE_EVERY, policy.keep_max // 10))   # so at most keep_max + every
        if before == 0 or self._recalls_logged // every > before // every:
            self.prune(policy)

    def _recall_table(self):
        """The log's table, created with ``RECALLS``; one an older version made gets the trace
        column's on-disk compression (``TRACE_ENCODING``) set, which its next compaction applies
        to the rows it rewrites."""
        tbl = self.core.table("recalls", RECALLS, create=True)
        if not self._recall_encoded:
            meta = {k.decode(): v.decode()
                    for k, v in (tbl.schema.field("trace").metadata or {}).items()}
            if any(meta.get(k) != v for k, v in TRACE_ENCODING.items()):
                retrying(lambda: tbl.update_field_metadata(
                    {"path": "trace", "metadata": TRACE_ENCODING}), "recall log", table=tbl)
            self._recall_encoded = True
        return tbl

    def flush(self) -> None:
        """Write the queued records now (``recall_writer``): before anything reads the log.
        Not the queued audit entries: their writer takes the namespace's lock for each batch,
        which a recall record's write (pruning, which reads the log) already holds."""
        self._recall_writer.flush()

    def close(self, timeout: float = 30.0) -> None:
        """Write the queued records and stop the writer (before the process exits); a record
        logged after this is written synchronously."""
        end = time.monotonic() + timeout
        self._recall_writer.close(timeout)
        self._audit_writer.close(max(0.1, end - time.monotonic()))

    def prune(self, policy: "RecallPolicy") -> int:
        """Delete records older than ``keep_days`` and the oldest beyond ``keep_max``."""
        self.flush()
        tbl = self.core.table("recalls")
        if tbl is None:
            return 0
        cutoff = self.core.now() - timedelta(days=policy.keep_days)
        old = tbl.count_rows(sql_time("created_at", "<", cutoff))
        if old:
            with self.core.writing():
                self.core.rewrote(tbl)
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
        self.flush()
        tbl = self.core.table("recalls")
        rows = [] if tbl is None else tbl.search().where(
            f"recall_id = {sql_str(recall_id)}").limit(1).to_list()
        if not rows or rows[0]["namespace"] != self.core.namespace:
            raise NotFound(f"no recall {recall_id!r} in namespace {self.core.namespace!r}")
        row = rows[0]
        trace = fill(expand(json.loads(row["trace"])), self._source_texts, self._memory_texts)
        return RecallRecord(row["recall_id"], row["namespace"], row.get("created_at"),
                            row["query"], row["strategy"], list(row.get("source_ids") or []),
                            trace, len(row["trace"].encode()))

    def _source_texts(self, ids: list[str]) -> dict[str, tuple[str, datetime | None]]:
        """id -> (text, timestamp) of the sources still stored (what a trace elides)."""
        return {r.id: (r.text, r.timestamp) for r in self.sources.get(ids)} if ids else {}

    def _memory_texts(self, ids: list[str]) -> dict[str, tuple[str, datetime | None]]:
        return {r.id: (r.text, r.timestamp)
                for r in self.memories.get(ids)} if ids else {}

    def recalls_citing(self, ids: set[str], in_trace: bool = True) -> list[str]:
        """Recall records that cite any of ``ids`` (sources or memories) or, with ``in_trace``,
        name one anywhere in their trace (a ranked candidate, a left-out turn): a query that
        matched a forgotten message is as telling as the message."""
        self.flush()
        tbl = self.core.table("recalls")
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
        self.flush()
        tbl = self.core.table("recalls")
        if tbl is None:
            return []
        parts = [sql_time("created_at", "<=", before)] if before else []
        parts += [sql_time("created_at", ">=", after)] if after else []
        q = tbl.search().select(["recall_id"])
        if parts:
            q = q.where(" AND ".join(parts))
        return [r["recall_id"] for r in q.limit(None).to_list()]

    def delete_recalls(self, recall_ids: list[str]) -> None:
        self.flush()
        tbl = self.core.table("recalls")
        if tbl is not None and recall_ids:
            for i in range(0, len(recall_ids), 500):
                chunk = recall_ids[i:i + 500]
                with self.core.writing():
                    self.core.rewrote(tbl)
                    retrying(lambda chunk=chunk: tbl.delete(sql_in("recall_id", chunk)),
                             "delete recalls", table=tbl)

    # -- audit ----------------------------------------------------------------------------------
    def audit(self, op: str, target_ids: list[str], detail: dict, queued: bool = False) -> str:
        """Append an audit entry; its id. ``queued``: appended off the caller's path, in batches
        (``recall_writer.py``; a ``remember``'s entry: an agent loop pays no commit for it),
        for an entry nothing reads across processes (``forget`` records are not queued: other
        processes and exports read them)."""
        aid = "aud_" + uuid.uuid4().hex[:20]
        row = {"id": aid, "namespace": self.core.namespace, "at": self.core.now(), "op": op,
               "target_ids": list(target_ids), "detail": self.core.dumps(detail)}
        if queued:
            self._audit_writer.submit(row)
        else:
            self._write_audit([row])
        return aid

    def _write_audit(self, rows: list[dict]) -> None:
        tbl = self.core.table("audit", AUDIT, create=True)
        with self.core.writing():
            retrying(lambda: tbl.add(rows), "audit", table=tbl)
        self.core.touch_copy("audit")   # this process reads its own entry next (forget records)
        self.core.after_write("audit")

    def audit_for(self, target_id: str, limit: int = 50) -> list[dict]:
        """Audit entries that name ``target_id``, oldest first (the queued ones written first:
        never called under the namespace's lock)."""
        self._audit_writer.flush()
        tbl = self.core.table("audit")
        if tbl is None:
            return []
        rows = tbl.search().where(f"array_has(target_ids, {sql_str(target_id)})").limit(None).to_list()
        rows.sort(key=lambda r: r["at"])
        return [{"id": r["id"], "at": r["at"], "op": r["op"], "detail": json.loads(r["detail"])}
                for r in rows[-limit:]]

    def audit_log(self, since: datetime | None = None, limit: int = 100) -> list[dict]:
        self._audit_writer.flush()
        tbl = self.core.table("audit")
        rows = [] if tbl is None else tbl.search().limit(None).to_list()
        rows = [r for r in rows if since is None or r["at"] >= since]
        rows.sort(key=lambda r: r["at"])
        return [{"id": r["id"], "at": r["at"], "op": r["op"], "target_ids": r["target_ids"],
                 "detail": json.loads(r["detail"])} for r in rows[-limit:]]
