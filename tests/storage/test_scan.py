"""Filtered reads in one call into lancedb's event loop return what lancedb's own synchronous
builder returns (``storage/scan.py``), in one hand-off instead of five."""

from __future__ import annotations

import threading

import lancedb
from lancedb import background_loop

from trimem.storage.db import sql_in, sql_str
from trimem.storage.scan import scan_rows

ROWS = [{"id": f"r{n}", "session_id": f"s{n % 3}", "ref": None if n % 4 == 0 else f"x{n}",
         "text": "it's ' quoted" if n == 5 else f"turn {n}"} for n in range(40)]


def _sync(tbl, where, columns, limit):
    q = tbl.search()
    if where:
        q = q.where(where)
    if columns:
        q = q.select(columns)
    return q.limit(limit).to_list()


def test_one_call_reads_what_the_synchronous_builder_reads(tmp_path, monkeypatch):
    tbl = lancedb.connect(str(tmp_path)).create_table("t", ROWS)
    filters = [None, f"session_id = {sql_str('s1')}", sql_in("ref", ["x1", "x2", "x7", "none"]),
               f"text = {sql_str(ROWS[5]['text'])}", "false"]
    hits = 0
    for where in filters:
        for columns in (None, ["id", "ref"]):
            for limit in (None, 1, 5):
                got = scan_rows(tbl, where, columns, limit)
                assert got == _sync(tbl, where, columns, limit)
                hits += len(got)
    assert hits > 0
    # counted in this thread only: the loop is the process's, and a thread an earlier test's
    # server left behind (upkeep, the recall writer) may call it meanwhile (seen under load)
    calls = []
    run, me = background_loop.LOOP.run, threading.get_ident()
    monkeypatch.setattr(background_loop.LOOP, "run", lambda *a, **kw: (
        calls.append(1) if threading.get_ident() == me else None) or run(*a, **kw))
    scan_rows(tbl, f"session_id = {sql_str('s2')}", ["id"])
    assert len(calls) == 1


def test_a_table_handle_without_an_async_table_uses_the_synchronous_builder(tmp_path):
    tbl = lancedb.connect(str(tmp_path)).create_table("t", ROWS)

    class Wrapped:   # a handle as another lancedb might give: only the synchronous API
        def search(self, *a, **kw):
            return tbl.search(*a, **kw)

    where = f"session_id = {sql_str('s0')}"
    got = scan_rows(Wrapped(), where, ["id"])
    assert got and got == _sync(tbl, where, ["id"], None)
