"""What ``auto``'s voters would otherwise each compute again: the turn search and the row reads.

``plain``, ``hybrid``, ``wiki`` and ``workspace`` all start from the same BM25 + dense search
over the namespace's source turns (``plain.search_sources``: the same query, the same time
filter, depths 100 / 100 / 200 / 60), and each reads the rows of its chosen turns. ``auto``
runs both searches once, at the deepest depth any voter asks for, and hands the voters a view
of the namespace's storage that answers those calls from it:

- a search with the same query (or query vector) and time filter and a depth no larger than
  the shared one gets the shared result cut to its depth. BM25 ranks are exact under the cut;
  the dense search is a flat scan below the vector index threshold (exact too) and an ANN
  search above it, where a deeper search only probes more, so a voter sees its top-n at least
  as well as on its own;
- ``get_sources`` rows are kept for the rest of the recall (each caller gets its own copies).

Everything else passes through to the real ``Space``. The view lives for one recall.
"""

from __future__ import annotations

import threading

import numpy as np

DEPTH = 200   # the deepest turn search among the voters (wiki's ``n_turns``)


class SharedSpace:
    def __init__(self, space, query: str, vector, where: str | None, depth: int = DEPTH):
        self._space = space
        self._query, self._where, self._depth = query, where, depth
        self._vector = np.asarray(vector, dtype=np.float32)
        # depth 0 shares nothing (``--opt share_depth=0``: the comparison without sharing)
        self._lex = space.fts_sources(query, depth, where) if depth else []
        self._dense = space.vector_sources(self._vector, depth, where) if depth else []
        self._rows: dict[str, dict] = {}
        self._lock = threading.Lock()
        self.hits = {"fts": 0, "vector": 0, "rows": 0}   # reuse counts, for the trace

    @property
    def where(self) -> str | None:
        """The recall's time filter (what the shared searches ran with)."""
        return self._where

    def __getattr__(self, name):   # everything not shared goes to the real Space
        return getattr(self._space, name)

    def fts_sources(self, query: str, limit: int, where: str | None = None):
        if query == self._query and where == self._where and limit <= self._depth:
            self.hits["fts"] += 1
            return self._lex[:limit]
        return self._space.fts_sources(query, limit, where)

    def vector_sources(self, vector, limit: int, where: str | None = None):
        v = np.asarray(vector, dtype=np.float32)
        if where == self._where and limit <= self._depth and np.array_equal(v, self._vector):
            self.hits["vector"] += 1
            return self._dense[:limit]
        return self._space.vector_sources(vector, limit, where)

    def get_sources(self, ids: list[str]) -> list[dict]:
        """Rows for ``ids`` in the order asked; only the ones not read yet are fetched."""
        with self._lock:
            missing = [i for i in dict.fromkeys(ids) if i not in self._rows]
        fetched = self._space.get_sources(missing) if missing else []
        with self._lock:
            for r in fetched:
                self._rows[r["id"]] = r
            self.hits["rows"] += len(ids) - len(missing)
            return [dict(self._rows[i]) for i in ids if i in self._rows]
