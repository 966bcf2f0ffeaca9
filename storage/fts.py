"""Full-text (BM25) queries in one call into lancedb's event loop.

lancedb's synchronous query builder makes five to six calls into its background event loop for
one full-text query: the table's schema three times (``search`` and two blob-column checks),
the execution, then each batch and the end of the stream. Every call is a hand-off between
threads, and while other Python threads of the server run (``auto``'s voters) each hand-off
waits for the GIL, up to the interpreter's switch interval (5 ms) at a time. Measured on a
settled LoCoMo conversation: an ``auto`` recall made 23 such calls, 12 of them for its two
BM25 searches of the sources (bench/README.md, "LanceDB round trips per recall").

:func:`match_rows` builds the same query with lancedb's public async API, in the order its own
synchronous path builds it (``AsyncTable._sync_query_to_async``: limit, columns, filter, then
the text query), and runs it, schema check, execution and all batches, as one coroutine: one
hand-off. The rows are the ones the synchronous builder returns (same query object, same
engine; a test compares them). Where a table handle has no async table behind it (another
lancedb), the synchronous builder answers as before.
"""

from __future__ import annotations

from typing import Any

from .lance import lancedb  # noqa: F401 (first: its validators deferred, lance.py)
from lancedb.background_loop import LOOP
from lancedb.query import MatchQuery


def match_rows(tbl: Any, text: str, column: str, columns: list[str], where: str | None,
               limit: int) -> list[dict]:
    """Rows of ``tbl`` whose ``column`` matches the words of ``text`` (never parsed as query
    syntax), best BM25 first, each with ``_score``; ``columns`` selected, ``where`` a trusted
    SQL filter applied before ranking."""
    # lancedb declares MatchQuery's defaults as positional pydantic.Field(...) arguments,
    # which pyright does not read as defaults
    match = MatchQuery(text, column)  # pyright: ignore[reportCallIssue]
    inner = getattr(tbl, "_table", None)
    if inner is None or not hasattr(inner, "query"):
        q = tbl.search(match, query_type="fts").select(columns)
        if where:
            q = q.where(where, prefilter=True)
        return q.limit(limit).to_list()

    async def run() -> list[dict]:
        q = inner.query().limit(limit).select(columns)
        if where:
            q = q.where(where)
        return await q.nearest_to_text(match).to_list()

    return LOOP.run(run())
