"""Filtered reads in one call into lancedb's event loop.

lancedb's synchronous query builder makes five calls into its background event loop for one
filtered read (``tbl.search().where(...).to_list()``): the table's schema three times
(``search`` and two blob-column checks), the execution, then the batches. Each call is a
hand-off between threads that waits for the interpreter lock while other Python threads run
(``fts.py`` says more). :func:`scan_rows` builds the same query with lancedb's public async API,
in the order its synchronous path builds it (``AsyncTable._sync_query_to_async``: limit,
columns, filter) and runs it as one coroutine: one hand-off, the same rows (a test compares
them). A handle without an async table behind it (another lancedb) reads as before.
"""

from __future__ import annotations

from typing import Any

from .lance import lancedb  # noqa: F401 (first: its validators deferred, lance.py)
from lancedb.background_loop import LOOP


def scan_rows(tbl: Any, where: str | None, columns: list[str] | None = None,
              limit: int | None = None) -> list[dict]:
    """Rows of ``tbl`` matching the trusted SQL filter ``where`` (all rows when None), with
    ``columns`` (all when None), at most ``limit`` (all when None), in the table's order."""
    inner = getattr(tbl, "_table", None)
    if inner is None or not hasattr(inner, "query"):
        q = tbl.search()
        if where:
            q = q.where(where)
        if columns:
            q = q.select(columns)
        return q.limit(limit).to_list()

    async def run() -> list[dict]:
        q = inner.query()
        if limit is not None:
            q = q.limit(limit)
        if columns:
            q = q.select(columns)
        if where:
            q = q.where(where)
        return await q.to_list()

    return LOOP.run(run())
