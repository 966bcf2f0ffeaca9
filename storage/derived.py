"""Generic tables for the strategies' derived data (threads, edges, snapshots, pages, ...).

Strategies declare a pyarrow schema and use these methods; they never touch LanceDB directly.
Tables are per namespace like every other. A schema with a ``vector`` column (or the
``MODEL_BOUND`` metadata) gets a model-tagged table name (see ``Space.name``); derived data can
always be rebuilt from the sources, so on a model switch such tables are dropped rather than
re-embedded and their sessions re-curated. Every row must carry ``id`` (the upsert key) and
``namespace`` (filled in here). A ``vector`` column is sized here to the dimension of the
namespace's embedding model (``sized``), so a strategy never states one. ``reshape`` rewrites a
table stored with an earlier version's columns into the current ones.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from . import snapshot
from .core import SpaceCore, model_tag
from .db import ensure_index, retrying, sql_in, sql_str
from .fts import match_rows
from .locks import LockBusy
from .ranking import TIE_EXTRA, fts_config
from .schema import DERIVED_FLOAT, compressed

log = logging.getLogger(__name__)
# a search that finds a derived table's full-text index missing builds it under the namespace's
# write lock (``Store.index_lock``), waiting at most this long for a writer
READ_INDEX_WAIT_S = 2.0


# Schema metadata of a derived table without vectors whose rows still depend on the embedding
# model (e.g. a running sum of vectors kept as bytes): it is model-tagged like a vector table, so
# a model switch drops it with the others.
MODEL_BOUND = {b"trimem.model_bound": b"1"}


def model_bound(schema: pa.Schema) -> bool:
    """Whether ``schema``'s table is named for the embedding model (``Space.name``)."""
    return "vector" in schema.names or (schema.metadata or {}).get(
        b"trimem.model_bound") == MODEL_BOUND[b"trimem.model_bound"]


def sized(schema: pa.Schema, dim: int | None) -> pa.Schema:
    """``schema`` with its ``vector`` column as ``dim`` float16s (``schema.DERIVED_FLOAT``; a
    strategy declares that a table has vectors, the namespace's bound model says how long they
    are) and its strings and bytes compressed on disk (``schema.compressed``)."""
    schema = compressed(schema)
    i = schema.get_field_index("vector")
    if i < 0 or dim is None:
        return schema
    return schema.set(i, pa.field("vector", pa.list_(DERIVED_FLOAT, dim)))


def _where(eq: dict[str, Any] | None, extra: str | None = None,
           contains: dict[str, str] | None = None) -> str | None:
    parts = [f"array_has({col}, {sql_str(str(val))})" for col, val in (contains or {}).items()]
    for col, val in (eq or {}).items():
        if isinstance(val, (list, tuple, set)):
            parts.append(sql_in(col, [str(v) for v in val]))
        elif isinstance(val, bool):
            parts.append(f"{col} = {'true' if val else 'false'}")
        elif isinstance(val, (int, float)):
            parts.append(f"{col} = {val!r}")
        else:
            parts.append(f"{col} = {sql_str(str(val))}")
    if extra:
        parts.append(extra)
    return " AND ".join(parts) or None


class Derived:
    """The strategies' own tables, by kind (``Space.derived``)."""

    def __init__(self, core: SpaceCore):
        self.core = core
        self._fts_seen: dict[tuple[str, str], object] = {}   # (kind, column) -> a handle that had it
        self._shape_done: set[str] = set()    # kinds whose columns were checked (``reshape``)
        self._scalar_done: set[str] = set()   # kinds whose scalar indexes were built

    def omit_from_copy(self, kind: str, columns: Iterable[str]) -> None:
        """Leave ``columns`` out of ``kind``'s in-process copy (``SpaceCore.omit_from_copy``)."""
        self.core.omit_from_copy(kind, columns)

    def memo(self, kind: str, name: str) -> dict | None:
        """A dict kept with the in-process copy of ``kind``'s table at the version it holds
        (empty at first, gone with that version), for what readers derive from its rows and
        would derive again from the same rows on the next recall; None where LanceDB answers."""
        tbl = self.table(kind)
        state = self.core.table_copy(kind, tbl) if tbl is not None else None
        return None if state is None else state.made.setdefault(name, {})

    def table(self, kind: str, schema: pa.Schema | None = None, create: bool = False) -> Any:
        if schema is not None:
            schema = sized(schema, self.core.dim)
        if schema is not None and model_bound(schema):
            self.core.vector_kinds.setdefault(kind, schema)
        elif (schema is None and kind not in self.core.vector_kinds
              and kind not in self.core.plain_kinds):
            # a reader in a fresh process does not know yet whether `kind` has vectors: a
            # model-tagged table on disk says it does
            tagged = (f"ns_{self.core.key}__{kind}__{model_tag(self.core.model, self.core.dim)}"
                      if self.core.model and self.core.dim is not None else None)
            if tagged and self.core.store.open_table(tagged) is not None:
                self.core.vector_kinds[kind] = None
            else:
                self.core.plain_kinds.add(kind)
        tbl = self.core.table(kind, schema, create=create)
        if create and tbl is not None:
            self.core.encode(kind, tbl)
        return tbl

    def reshape(self, kind: str, schema: pa.Schema, convert: Callable[[dict], dict]) -> bool:
        """Rewrite ``kind``'s table into ``schema`` when it is stored with other columns (a
        store written by an earlier version): each row through ``convert``, under the namespace
        lock, then the table dropped and written again. Checked once per process per kind; True
        when it rewrote. A crash between the drop and the write leaves the table missing, which
        a strategy must treat as derived data to rebuild from the sources."""
        done = self._shape_done
        if kind in done:
            return False
        schema = sized(schema, self.core.dim)
        with self.core.writing():
            self.core.store.refresh(self.core.name(kind))    # another process may have rewritten it
            tbl = self.table(kind, schema)
            if tbl is None or set(tbl.schema.names) == set(schema.names):
                done.add(kind)
                return False
            old = tbl.to_arrow().to_pylist()
            rows = [convert({k: v for k, v in r.items() if k != "namespace"}) for r in old
                    if r.get("namespace") == self.core.namespace]
            self.core.store.drop_table(tbl.name)
            self.core.drop_copy(kind)
            new = self.table(kind, schema, create=True)
            if rows:
                for r in rows:
                    r["namespace"] = self.core.namespace
                retrying(lambda: new.add(pa.Table.from_pylist(rows, schema=schema)),
                         f"reshape {kind}", table=new)
        self._scalar_done.discard(kind)   # the new table has none yet
        done.add(kind)
        log.info("rewrote %s into its current columns (%d rows)", tbl.name, len(rows))
        return True

    def upsert(self, kind: str, schema: pa.Schema, rows: list[dict], key: str = "id") -> None:
        """Insert or replace ``rows`` (matched on ``key``) in one commit."""
        if not rows:
            return
        # one row per key (the last wins): a merge with two source rows for one key is refused
        rows = list({r[key]: r for r in rows}.values())
        for r in rows:
            r["namespace"] = self.core.namespace
            if "vector" in r:
                r["vector"] = np.asarray(r["vector"], dtype=np.float32).tolist()
        tbl = self.table(kind, schema, create=True)
        with self.core.writing():
            self.core.rewrote(tbl)
            done = retrying(lambda: tbl.merge_insert(key).when_matched_update_all()
                            .when_not_matched_insert_all().execute(rows), f"upsert {kind}",
                            table=tbl)
            self.core.wrote_copy(kind, done, [r[key] for r in rows] if key == "id" else None)
        self.core.after_write(kind, len(rows))

    def stored_vector(self, kind: str, vector: Any) -> list[float]:
        """``vector`` as ``kind``'s table keeps it and a reader gets it back: rounded to float16
        in a table this version creates (``DERIVED_FLOAT``), float32 in one an earlier version
        created. For a strategy that keeps in memory what it writes (a patched snapshot must
        equal a fresh read)."""
        tbl = self.table(kind)
        kept = tbl.schema.field("vector").type.value_type if tbl is not None else DERIVED_FLOAT
        v = np.asarray(vector, dtype=np.float32)
        return (v.astype(np.float16).astype(np.float32) if kept == pa.float16() else v).tolist()

    def scalar_indexes(self, kind: str, columns: dict[str, str], rebuild: bool = False) -> None:
        """Scalar indexes on a derived table's filter columns (``{"id": "btree", "status":
        "bitmap"}``), so lookups by id or key do not scan the whole table as it grows. Built once
        the table holds ``Store.scalar_index_min_rows`` rows (a flat scan of fewer is quick, and
        each index costs tens of KB on disk whatever the table's size; until then each call
        counts the rows again), then checked once per process per kind; rows written later are
        folded in by the usual ``optimize`` upkeep and read by a flat scan of the unindexed part
        until then. ``rebuild``: rebuild them from the rows that remain (``forget``: an index
        segment keeps the values of deleted rows, and keys such as a page's can be words of a
        message), on a smaller table those it has. Failures (a full or read-only disk) are
        logged: an index only speeds reads up."""
        from lancedb.index import Bitmap, BTree  # lazy: circular before lancedb loads

        done = self._scalar_done
        if kind in done and not rebuild:
            return
        tbl = self.table(kind)
        if tbl is None:
            return
        small = tbl.count_rows() < self.core.store.scalar_index_min_rows
        if small:
            if not rebuild:
                return
            have = {c for ix in tbl.list_indices() for c in ix.columns}
            columns = {c: how for c, how in columns.items() if c in have}
        try:
            with self.core.store.index_lock(self.core.namespace):
                for col, how in columns.items():
                    cfg = Bitmap() if how == "bitmap" else BTree()
                    if rebuild:
                        with self.core.writing():
                            retrying(lambda col=col, cfg=cfg: tbl.create_index(col, config=cfg, replace=True),
                                     f"rebuild index {kind}.{col}", table=tbl)
                    else:
                        ensure_index(tbl, col, cfg)
            if not small:
                done.add(kind)
        except (OSError, RuntimeError, ValueError) as exc:
            if rebuild:
                raise   # forget must not leave a deleted value behind in an index
            log.warning("cannot build scalar indexes on %s (%s)", tbl.name, exc)

    def rows(self, kind: str, eq: dict[str, Any] | None = None, where: str | None = None,
             columns: list[str] | None = None, limit: int | None = None,
             contains: dict[str, str] | None = None) -> list[dict]:
        """Rows matching equality filters ``eq`` and ``contains`` (list column -> a value it
        must hold), values escaped, and a trusted ``where``."""
        tbl = self.table(kind)
        if tbl is None:
            return []
        state = self.core.table_copy(kind, tbl) \
            if where is None and self.core.copy_serves(kind, columns) else None
        if state is not None:
            try:
                hit = np.flatnonzero(snapshot.eq_mask(state, eq, contains))[:limit]
            except snapshot.Unsupported:
                pass
            else:
                cols = sorted(set(columns) | {"namespace"}) if columns else None
                vec = cols is None or "vector" in cols
                return [snapshot.pick(state, int(n), cols, vec) for n in hit]
        q = tbl.search()
        w = _where(eq, where, contains)
        if w:
            q = q.where(w)
        if columns:
            q = q.select(sorted(set(columns) | {"namespace"}))
        out = q.limit(limit).to_list()
        return [r for r in out if r.get("namespace") == self.core.namespace]

    def delete_rows(self, kind: str, eq: dict[str, Any]) -> None:
        tbl = self.table(kind)
        w = _where(eq)
        if tbl is not None and w:
            ids = eq.get("id") if set(eq) == {"id"} else None
            with self.core.writing():
                self.core.rewrote(tbl)
                # the version this delete is made on (under the lock no commit comes between)
                before = tbl.version if self.core.holds_copy(kind) else None
                done = retrying(lambda: tbl.delete(w), f"delete {kind}", table=tbl)
                keys = [] if ids is None else list(ids) if isinstance(ids, (list, tuple, set)) \
                    else [ids]
                self.core.wrote_where(kind, tbl, done, eq if ids is None else None, keys, before)

    def count_rows(self, kind: str, eq: dict[str, Any] | None = None) -> int:
        tbl = self.table(kind)
        return 0 if tbl is None else tbl.count_rows(_where(eq))

    def columns(self, kind: str, columns: list[str]) -> tuple[dict[str, list], np.ndarray | None]:
        """Every row of ``kind`` in this namespace, column-wise, in the order ``rows`` returns
        them: ``columns`` (``vector`` aside) as lists, and the vectors as one float32 matrix when
        ``vector`` is asked for (else None). For reading a whole table that may be large (a
        graph snapshot): one Arrow scan, no dict and no list of floats per row (at 239k edges and
        24k threads, ``rows`` spent seconds building them)."""
        tbl = self.table(kind)
        want = [c for c in columns if c != "vector"]
        if tbl is None:
            return {c: [] for c in want}, (np.zeros((0, self.core.dim or 0), np.float32)
                                           if "vector" in columns else None)
        cols = sorted(set(columns) | {"namespace"})
        data = tbl.search().select(cols).limit(None).to_arrow()
        mine = data["namespace"].to_numpy(zero_copy_only=False) == self.core.namespace
        if not mine.all():
            data = data.filter(pa.array(mine))
        vecs = None
        if "vector" in columns:
            vecs = snapshot.matrix(data) if data.num_rows else np.zeros((0, self.core.dim or 0),
                                                                        np.float32)
        return {c: snapshot.pylist(data.column(c)) for c in want}, vecs

    def nearest(self, kind: str, vector: np.ndarray, k: int, eq: dict[str, Any] | None = None,
                columns: Iterable[str] = ("id",)) -> list[dict]:
        """Rows nearest to ``vector`` by cosine; each gets ``similarity``."""
        tbl = self.table(kind)
        if tbl is None:
            return []
        columns = tuple(columns)
        state = self.core.table_copy(kind, tbl) if self.core.copy_serves(kind, columns) else None
        if state is not None:
            try:
                mask = snapshot.eq_mask(state, eq) if eq else None
            except snapshot.Unsupported:
                pass
            else:
                cols = sorted(set(columns) | {"namespace"})
                return [dict(snapshot.pick(state, n, cols, "vector" in cols), similarity=sim)
                        for n, sim in snapshot.search(state, vector, k, mask)]
        q = (tbl.search(np.asarray(vector, dtype=np.float32), query_type="vector",
                        vector_column_name="vector").distance_type("cosine")
             .select(sorted(set(columns) | {"namespace"})))
        w = _where(eq)
        if w:
            q = q.where(w, prefilter=True)
        out = []
        for r in q.limit(k).to_list():
            if r.get("namespace") == self.core.namespace:
                r["similarity"] = 1.0 - float(r.pop("_distance"))
                out.append(r)
        return out

    def nearest_many(self, kind: str, vectors: list, k: int, eq: dict[str, Any] | None = None,
                     columns: Iterable[str] = ("id",)) -> list[list[dict]]:
        """``nearest`` for several vectors in one query (one scan of an unindexed table instead
        of one per vector): a list of results per vector, in the order given."""
        tbl = self.table(kind)
        out: list[list[dict]] = [[] for _ in vectors]
        if tbl is None or not vectors:
            return out
        columns = tuple(columns)
        if len(vectors) == 1 or (self.core.copy_serves(kind, columns)
                                 and self.core.table_copy(kind, tbl) is not None):
            return [self.nearest(kind, v, k, eq, columns) for v in vectors]
        q = (tbl.search([np.asarray(v, dtype=np.float32) for v in vectors], query_type="vector",
                        vector_column_name="vector").distance_type("cosine")
             .select(sorted(set(columns) | {"namespace"})))
        w = _where(eq)
        if w:
            q = q.where(w, prefilter=True)
        for r in q.limit(k).to_list():
            if r.get("namespace") == self.core.namespace:
                r["similarity"] = 1.0 - float(r.pop("_distance"))
                out[int(r.pop("query_index"))].append(r)
        return [sorted(rs, key=lambda r: -r["similarity"]) for rs in out]

    def text_search(self, kind: str, query: str, k: int, column: str = "text",
                    eq: dict[str, Any] | None = None, columns: Iterable[str] = ("id",)) -> list[dict]:
        """BM25 over ``column`` (an FTS index is built on first use); each row gets ``bm25``."""
        tbl = self.table(kind)
        if tbl is None or not query.strip():
            return []
        # an index, once there, stays for the handle's life (a rebuild replaces it): looked up
        # once per handle, not on every search (``list_indices`` is a LanceDB call)
        if self._fts_seen.get((kind, column)) is not tbl:
            if not any(ix.columns == [column] for ix in tbl.list_indices()):
                try:   # a read: it waits for a writer only briefly (``READ_INDEX_WAIT_S``)
                    with self.core.store.index_lock(self.core.namespace, READ_INDEX_WAIT_S):
                        ensure_index(tbl, column, fts_config())
                except LockBusy as exc:   # built by a later search
                    log.info("the full-text index of %s waits for a writer; searching "
                             "without it this time (%s)", tbl.name, exc)
                    return []
                except (OSError, RuntimeError, ValueError) as exc:
                    # a read path must not fail on a write it only does to speed itself up (a
                    # full or read-only disk): without the index there is no BM25, dense works
                    log.warning("cannot build the full-text index of %s (%s); searching "
                                "without it", tbl.name, exc)
                    return []
            self._fts_seen[(kind, column)] = tbl
        out = []
        for r in match_rows(tbl, query, column, sorted(set(columns) | {"namespace"}), _where(eq),
                            k + TIE_EXTRA):
            if r.get("namespace") == self.core.namespace:
                r["bm25"] = float(r.pop("_score"))
                out.append(r)
        # ties by id, as the source searches break them (``sources.ranked``): equal rows in
        # another physical order (another home) must rank alike
        return sorted(out, key=lambda r: (-round(r["bm25"], 5), str(r.get("id"))))[:k]
