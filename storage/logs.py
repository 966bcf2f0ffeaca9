"""Sessions, the recall log (what `explain` replays) and the audit log (every mutation)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from .db import retrying, sql_in, sql_str
from .errors import NotFound
from .schema import AUDIT, RECALLS, SESSIONS


class LogsMixin:
    """Methods of :class:`~trimem.storage.space.Space` for sessions, recalls and the audit log."""

    # -- sessions -------------------------------------------------------------------------------
    def get_session(self, session_id: str) -> dict | None:
        tbl = self.table("sessions")
        if tbl is None:
            return None
        rows = tbl.search().where(f"session_id = {sql_str(session_id)}").limit(1).to_list()
        return rows[0] if rows and rows[0]["namespace"] == self.namespace else None

    def put_session(self, row: dict) -> None:
        row = dict(row, namespace=self.namespace, updated_at=self.now())
        tbl = self.table("sessions", SESSIONS, create=True)
        retrying(lambda: tbl.merge_insert("session_id").when_matched_update_all()
                 .when_not_matched_insert_all().execute([row]), "session")
        self.after_write("sessions")

    def list_sessions(self) -> list[dict]:
        tbl = self.table("sessions")
        return tbl.search().limit(None).to_list() if tbl is not None else []

    def session_times(self) -> dict:
        """session id -> its ``session_time`` (or None), reading only those columns: curation
        and temporal recall need the order of sessions in time, not every session row."""
        tbl = self.table("sessions")
        if tbl is None:
            return {}
        rows = tbl.search().select(["session_id", "session_time", "namespace"]).limit(None).to_list()
        return {r["session_id"]: r["session_time"] for r in rows if r["namespace"] == self.namespace}

    def latest_session_time(self) -> datetime | None:
        """The latest ``session_time`` of the namespace."""
        return max((t for t in self.session_times().values() if t is not None), default=None)

    def uncurated_sessions(self) -> list[str]:
        """Sessions whose curation is queued or failed: their turns are in no curated store yet."""
        tbl = self.table("sessions")
        if tbl is None:
            return []
        rows = (tbl.search().where("curation = 'queued' OR curation = 'failed'")
                .select(["session_id", "namespace"]).limit(None).to_list())
        return [r["session_id"] for r in rows if r["namespace"] == self.namespace]

    def delete_sessions(self, session_ids: list[str]) -> None:
        tbl = self.table("sessions")
        if tbl is not None and session_ids:
            retrying(lambda: tbl.delete(sql_in("session_id", session_ids)), "delete sessions")

    # -- recall log -----------------------------------------------------------------------------
    def log_recall(self, recall_id: str, query: str, strategy: str, source_ids: list[str],
                   trace: dict) -> None:
        tbl = self.table("recalls", RECALLS, create=True)
        row = {"recall_id": recall_id, "namespace": self.namespace, "created_at": self.now(),
               "query": query, "strategy": strategy, "source_ids": source_ids,
               "trace": self.dumps(trace)}
        retrying(lambda: tbl.add([row]), "recall log")
        self.after_write("recalls")

    def get_recall(self, recall_id: str) -> dict:
        tbl = self.table("recalls")
        rows = [] if tbl is None else tbl.search().where(
            f"recall_id = {sql_str(recall_id)}").limit(1).to_list()
        if not rows or rows[0]["namespace"] != self.namespace:
            raise NotFound(f"no recall {recall_id!r} in namespace {self.namespace!r}")
        row = rows[0]
        row["trace"] = json.loads(row["trace"])
        return row

    def recalls_citing(self, source_ids: set[str]) -> list[str]:
        tbl = self.table("recalls")
        if tbl is None or not source_ids:
            return []
        rows = tbl.search().select(["recall_id", "source_ids"]).limit(None).to_list()
        return [r["recall_id"] for r in rows if source_ids.intersection(r["source_ids"] or [])]

    def delete_recalls(self, recall_ids: list[str]) -> None:
        tbl = self.table("recalls")
        if tbl is not None and recall_ids:
            for i in range(0, len(recall_ids), 500):
                chunk = recall_ids[i:i + 500]
                retrying(lambda: tbl.delete(sql_in("recall_id", chunk)), "delete recalls")

    # -- audit ----------------------------------------------------------------------------------
    def audit(self, op: str, target_ids: list[str], detail: dict) -> str:
        tbl = self.table("audit", AUDIT, create=True)
        aid = "aud_" + uuid.uuid4().hex[:20]
        row = {"id": aid, "namespace": self.namespace, "at": self.now(), "op": op,
               "target_ids": list(target_ids), "detail": self.dumps(detail)}
        retrying(lambda: tbl.add([row]), "audit")
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
