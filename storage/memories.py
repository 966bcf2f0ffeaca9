"""Derived memories (episodes, facts, ... of the strategies), linked to their sources."""

from __future__ import annotations

import json

import numpy as np

from . import snapshot
from .core import SpaceCore
from .db import retrying, sql_in, sql_str
from .derived import Derived
from .ranking import TIE_EXTRA, ranked
from .rows import MEMORY_COLUMNS, Memory

# filter columns of the memories table: `get` looks rows up by id, and every vector and
# BM25 search prefilters on kind and status (ids are opaque and kind / status are enums: no
# message text is kept in these index files, so forget needs no rebuild of them)
MEMORY_INDEXES = {"id": "btree", "kind": "bitmap", "status": "bitmap"}


def _clean(row: dict) -> Memory:
    return Memory.of(dict(row, body=json.loads(row["body"]) if row.get("body") else {},
                          lineage=json.loads(row["lineage"]) if row.get("lineage") else {}))


class Memories:
    """The namespace's ``memories`` table (``Space.memories``)."""

    def __init__(self, core: SpaceCore, derived: Derived):
        self.core = core
        self.derived = derived   # its scalar indexes

    def table(self):
        """The table, or None while it does not exist."""
        return self.core.table("memories")

    def add(self, rows: list[Memory], replacing: dict[str, list[str]] | None = None) -> None:
        """Upsert ``rows`` (each with its vector; ``namespace`` and ``embed_model`` are set
        here). ``replacing`` ({"session_id": [id], "origin": [...], "kind": [...]}):
        in the same commit, delete that session's rows of those origins and kinds that ``rows``
        does not hold (a curation replacing another: a crash leaves the old or the new, never
        both)."""
        if not rows:
            return
        data = [self._stored(m) for m in rows]
        tbl = self.core.table("memories", create=True)
        self.core.encode("memories", tbl)

        def merge():
            m = tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            if replacing:
                m = m.when_not_matched_by_source_delete(" AND ".join(
                    sql_in(col, vals) for col, vals in sorted(replacing.items())))
            return m.execute(data)

        with self.core.writing():
            self.core.rewrote(tbl)
            done = retrying(merge, "add memories", table=tbl)
            ids = [r["id"] for r in data]
            if replacing:
                self.core.wrote_where("memories", tbl, done, replacing, ids)
            else:
                self.core.wrote_copy("memories", done, ids)
        self.core.after_write("memories", len(data))
        self.derived.scalar_indexes("memories", MEMORY_INDEXES)   # once built, once per process

    def _stored(self, m: Memory) -> dict:
        """``m`` as the table stores it: ``body`` and ``lineage`` as JSON, the vector float32."""
        if m.vector is None:
            raise ValueError(f"memory {m.id!r} has no vector")
        return dict(m.as_dict(), namespace=self.core.namespace, embed_model=self.core.model,
                    body=self.core.dumps(m.body or {}), lineage=self.core.dumps(m.lineage or {}),
                    vector=np.asarray(m.vector, dtype=np.float32).tolist())

    def _select(self, where: str, eq: dict | None = None, vectors: bool = False) -> list[Memory]:
        """Memories matching ``eq`` (served by the in-process copy when it can, ``snapshot.py``)
        or else ``where``, the same filter as SQL; with their vectors if ``vectors``."""
        tbl = self.core.table("memories")
        if tbl is None:
            return []
        state = self.core.table_copy("memories", tbl) if eq is not None else None
        if state is not None:
            hit = np.flatnonzero(snapshot.eq_mask(state, eq))
            return [_clean(snapshot.pick(state, int(n), MEMORY_COLUMNS, vectors)) for n in hit]
        cols = MEMORY_COLUMNS + ["vector"] if vectors else MEMORY_COLUMNS
        rows = tbl.search().where(where).select(cols).limit(None).to_list()
        return [_clean(r) for r in rows if r["namespace"] == self.core.namespace]

    def where(self, eq: dict[str, str | list[str]], vectors: bool = False) -> list[Memory]:
        """Memories whose columns hold these values (a value, or any of a list), in the table's
        order; with their vectors if ``vectors``."""
        return self._select(" AND ".join(sql_in(col, val if isinstance(val, list) else [val])
                                         for col, val in eq.items()) or "true", eq, vectors)

    def get(self, ids: list[str]) -> list[Memory]:
        by_id = ({r.id: r for r in self._select(sql_in("id", set(ids)), {"id": list(ids)})}
                 if ids else {})
        return [by_id[i] for i in ids if i in by_id]

    def of_kind(self, kind: str, status: str | None = "active") -> list[Memory]:
        where = f"kind = {sql_str(kind)}"
        eq = {"kind": kind}
        if status is not None:
            where += f" AND status = {sql_str(status)}"
            eq["status"] = status
        return self._select(where, eq)

    def count(self, kind: str, status: str = "active") -> int:
        tbl = self.core.table("memories")
        return 0 if tbl is None else tbl.count_rows(f"kind = {sql_str(kind)} AND status = {sql_str(status)}")

    def citing(self, source_ids: set[str]) -> list[Memory]:
        """Every memory (any status) derived from at least one of ``source_ids``."""
        if not source_ids:
            return []
        tbl = self.core.table("memories")
        if tbl is None:
            return []
        rows = tbl.search().select(["id", "source_ids"]).limit(None).to_list()
        hit = [r["id"] for r in rows if source_ids.intersection(r["source_ids"] or [])]
        return self.get(hit)

    def delete(self, ids: list[str]) -> None:
        tbl = self.core.table("memories")
        if tbl is not None and ids:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                with self.core.writing():
                    self.core.rewrote(tbl)
                    done = retrying(lambda chunk=chunk: tbl.delete(sql_in("id", chunk)),
                                    "delete memories", table=tbl)
                    self.core.wrote_copy("memories", done, chunk)

    def vector_search(self, kind: str, vector: np.ndarray, limit: int,
                        status: str = "active") -> list[tuple[str, float]]:
        tbl = self.core.table("memories")
        if tbl is None:
            return []
        state = self.core.table_copy("memories", tbl)
        if state is not None:
            mask = snapshot.eq_mask(state, {"kind": kind, "status": status})
            hits = snapshot.search(state, vector, limit + TIE_EXTRA, mask)
            return ranked([(state.rows[n]["id"], sim) for n, sim in hits], limit)
        rows = (tbl.search(np.asarray(vector, dtype=np.float32), query_type="vector",
                           vector_column_name="vector").distance_type("cosine")
                .where(f"kind = {sql_str(kind)} AND status = {sql_str(status)}", prefilter=True)
                .select(["id", "namespace"]).limit(limit + TIE_EXTRA).to_list())
        # ties by id, as the source searches break them (``sources.ranked``): rows tied on a
        # score come back in physical order, which differs between homes holding the same rows
        return ranked([(r["id"], 1.0 - float(r["_distance"])) for r in rows
                       if r["namespace"] == self.core.namespace], limit)

    def fts_search(self, kind: str, query: str, limit: int,
                   status: str = "active") -> list[tuple[str, float]]:
        """BM25 over the texts of ``kind``'s memories of ``status``: (id, score), best first."""
        hits = self.derived.text_search("memories", query, limit, eq={"kind": kind, "status": status})
        return [(r["id"], r["bm25"]) for r in hits]
