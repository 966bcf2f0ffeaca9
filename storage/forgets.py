"""Forget marks: how a ``forget`` in one process reaches every other process on the same store.

Processes keep things read from a namespace in memory (table handles, the workspace snapshot, the
wiki turn maps). Row counts cannot tell them that a forget happened (re-curation may restore the
counts), so each forget ends by writing a *mark* for its namespace into the store-wide ``_forgets``
table: a fresh token and the ids it deleted. A reader calls :meth:`ForgetMarks.news` before and
after each recall. The cheap path is one check of the table's latest version, done at most every
``check_s`` seconds (about 1 ms when it runs); only when the version moved are the marks read.
``news`` then returns the ids forgotten since this process last looked, and the caller drops its
caches and its table handles for that namespace and filters those ids out.

So a forget holds everywhere within ``check_s`` plus one recall. Marks are written after the data
is deleted, never before: a reader that rebuilds its caches on seeing a mark reads the tables
without the forgotten rows.
"""

from __future__ import annotations

import threading
import time
import uuid

import pyarrow as pa

from .db import retrying, utcnow

TABLE = "_forgets"
KEEP_IDS = 5_000   # ids of one forget kept in its mark (a last guard: caches are dropped anyway)
SCHEMA = pa.schema([("key", pa.string()), ("token", pa.string()),
                    ("at", pa.timestamp("us", tz="UTC")), ("source_ids", pa.list_(pa.string()))])


class ForgetMarks:
    def __init__(self, store, check_s: float = 0.2):
        self.store = store
        self.check_s = check_s
        self._lock = threading.Lock()
        self._checked = float("-inf")
        self._version: int | None = None
        self._marks: dict[str, tuple[str, list[str]]] = {}   # namespace key -> (token, ids)
        self._seen: dict[str, str] = {}                      # namespace key -> token handled

    def baseline(self) -> None:
        """Take the marks already written as seen (call when the store opens, before anything
        is read: what this process reads afterwards was read after those forgets)."""
        self._refresh()
        with self._lock:
            self._seen.update((k, token) for k, (token, _) in self._marks.items())
            self._checked = time.monotonic()

    def mark(self, key: str, source_ids: list[str]) -> None:
        """Record a forget in namespace ``key`` (call after its deletes committed)."""
        tbl = self.store.open_table(TABLE, SCHEMA)
        token = uuid.uuid4().hex
        row = {"key": key, "token": token, "at": utcnow(),
               "source_ids": list(source_ids)[:KEEP_IDS]}
        retrying(lambda: tbl.merge_insert("key").when_matched_update_all()
                 .when_not_matched_insert_all().execute([row]), "forget mark", table=tbl)
        with self._lock:
            self._seen[key] = token      # this process dropped its own caches already
        self.store.stamp_forget(key, token)

    def news(self, key: str, force: bool = False) -> set[str] | None:
        """Ids forgotten in namespace ``key`` by any process since the last call that returned
        them (an empty set when only the token is known), or None when nothing new."""
        now = time.monotonic()
        with self._lock:
            due = force or now - self._checked >= self.check_s
            if due:
                self._checked = now
        if due:
            self._refresh()
        with self._lock:
            mark = self._marks.get(key)
            if mark is None or self._seen.get(key) == mark[0]:
                return None
            self._seen[key] = mark[0]
            return set(mark[1])

    def seen(self, key: str) -> str | None:
        """The token of the latest forget in namespace ``key`` this process has handled."""
        with self._lock:
            return self._seen.get(key)

    def _refresh(self) -> None:
        tbl = self.store.open_table(TABLE)
        if tbl is None:
            return
        tbl.checkout_latest()   # the newest version now, not after the connection's interval
        version = tbl.version
        with self._lock:
            if version == self._version:
                return
        rows = tbl.search().select(["key", "token", "source_ids"]).limit(None).to_list()
        with self._lock:
            self._version = version
            self._marks = {r["key"]: (r["token"], r["source_ids"] or []) for r in rows}
