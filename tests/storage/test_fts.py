"""Full-text search in one call into lancedb's event loop returns what lancedb's own
synchronous builder returns (``storage/fts.py``)."""

from __future__ import annotations

from trimem.storage.db import sql_in, sql_time
from trimem.storage.fts import match_rows

TURNS = ["We adopted a rescue greyhound last weekend, her name is Pixel.",
         "My manager is called Ines and I work on motion planning.",
         "I'm allergic to peanuts, so please keep that in mind for recipes.",
         "Pixel sleeps all day and sprints at 6 pm sharp.",
         "The greyhound's name? Pixel. She's three.",
         "OR AND NOT \"peanuts\" -- ' ; drop table"]


def _sync(tbl, text, column, columns, where, limit):
    from lancedb.query import MatchQuery

    q = tbl.search(MatchQuery(text, column),  # pyright: ignore[reportCallIssue]
                   query_type="fts").select(columns)
    if where:
        q = q.where(where, prefilter=True)
    return q.limit(limit).to_list()


def test_one_call_answers_as_the_synchronous_builder(server):
    from datetime import datetime, timezone

    from trimem.tools.remember import Message, remember

    rt = server.runtime
    msgs = [Message(content=t, speaker="user" if n % 2 else "assistant", ref=f"r{n}",
                    timestamp=f"2024-05-0{n + 1}T10:00:00")
            for n, t in enumerate(TURNS)]
    remember(rt, msgs, session_id="s", namespace="fts")
    tbl = rt.space("fts").sources.table()
    assert tbl is not None
    since = datetime(2024, 5, 3, tzinfo=timezone.utc)
    filters = [None, sql_in("speaker", ["assistant"]), sql_time("timestamp", ">=", since)]
    queries = ["Pixel greyhound", "peanuts", "what is the dog's name?", "OR AND NOT",
               "' ; drop table", "nothing here matches"]
    hits = 0
    for text in queries:
        for where in filters:
            for limit in (1, 3, 50):
                got = match_rows(tbl, text, "search_text", ["id", "namespace"], where, limit)
                assert got == _sync(tbl, text, "search_text", ["id", "namespace"], where, limit)
                assert all("_score" in r for r in got)
                hits += len(got)
    assert hits > 0   # the comparison is not between two empty answers


def test_a_table_handle_without_an_async_table_uses_the_synchronous_builder(server):
    from trimem.tools.remember import Message, remember

    rt = server.runtime
    remember(rt, [Message(content=t, speaker="user") for t in TURNS], namespace="fts2")
    tbl = rt.space("fts2").sources.table()

    class Wrapped:   # a handle as another lancedb might give: only the synchronous API
        def search(self, *a, **kw):
            return tbl.search(*a, **kw)

    got = match_rows(Wrapped(), "Pixel", "search_text", ["id"], None, 10)
    assert got and got == _sync(tbl, "Pixel", "search_text", ["id"], None, 10)
