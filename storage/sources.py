"""Raw sources (messages): write once, search by full text and by vector, delete on forget."""

from __future__ import annotations

import hashlib
import heapq
import json

import numpy as np

from . import snapshot
from .core import SpaceCore
from .db import ensure_index, retrying, sql_in, sql_str, sql_time
from .filters import SourceFilter, where_of
from .fts import match_rows
from .passages import PASSAGE_CHARS, Passages
from .ranking import TIE_EXTRA, fts_config, ranked, search_text
from .ranking import search_text_of  # noqa: F401 (callers import it from here)
from .rows import SOURCE_COLUMNS, Source
from .scan import scan_rows
from .snapshot import SourceSnapshot
from .versioned import Versioned


def _clean(row: dict) -> Source:
    return Source.of(dict(row, metadata=json.loads(row["metadata"]) if row.get("metadata")
                          else None))


class Sources:
    """The namespace's ``sources`` table (``Space.sources``); a long message's passages are
    written and deleted with it and searched with it (``passages``)."""

    def __init__(self, core: SpaceCore, passages: Passages):
        self.core = core
        self.passages = passages
        self.fts_ready = False   # its indexes checked (again after a model switch)
        self._snap = SourceSnapshot(core.namespace, core.store.source_copy_max_rows,
                                    core.store.budget.copies)
        # (id, ref) of a session's messages by table version (``session_refs``, versioned.py)
        self._refs: Versioned[str, tuple[tuple[str, str | None], ...]] = Versioned()

    def table(self, create: bool = False):
        tbl = self.core.table("sources", create=create)
        if create and not self.fts_ready:
            # one creator per process (another process may race us), per namespace: the other
            # namespaces' reads do not wait for this build
            with self.core.store.index_lock(self.core.namespace):
                if not tbl.list_indices():
                    from lancedb.index import BTree  # lazy: circular before lancedb loads

                    # BM25 over search_text; B-trees so that lookups by id / ref / session
                    # (``get`` after every search, dedupe on every remember) do not scan
                    for column, config in (("search_text", fts_config()), ("id", BTree()),
                                           ("ref", BTree()), ("session_id", BTree())):
                        ensure_index(tbl, column, config)
                self.fts_ready = True
        return tbl

    def add(self, rows: list[dict], passages: list[dict] | None = None) -> None:
        """Append rows (already validated and embedded). One commit: all or nothing.
        ``passages``: the long rows' passages, embedded beforehand (``Passages.rows_of``)."""
        if not rows:
            return
        for r in rows:
            r["namespace"] = self.core.namespace
            r.setdefault("search_text", search_text(r))
            r["metadata"] = self.core.dumps(r["metadata"]) if r.get("metadata") is not None else ""
            r["embed_model"] = self.core.model
            r["vector"] = np.asarray(r["vector"], dtype=np.float32).tolist()
        # passages first: derived and idempotent, so the sources commit stays the
        # acknowledgement point and a crash between the two is repaired by the retry
        self.passages.add(rows, passages)
        tbl = self.table(create=True)
        with self.core.writing():
            got = retrying(lambda: tbl.add(rows), "add sources", table=tbl)
        added: dict[str, tuple[tuple[str, str | None], ...]] = {}
        for r in rows:
            added[r["session_id"]] = added.get(r["session_id"], ()) + ((r["id"], r.get("ref")),)
        self._refs.advanced(got.version, lambda sid, refs: refs + added.get(sid, ()))
        self._snap.touch()
        self.core.after_write("sources", len(rows))

    def existing(self, ids: set[str]) -> set[str]:
        """Which of ``ids`` are stored now (read from the newest version, not a cache)."""
        tbl = self.table()
        if tbl is None or not ids:
            return set()
        tbl.checkout_latest()
        rows = tbl.search().where(sql_in("id", ids)).select(["id"]).limit(None).to_list()
        return {r["id"] for r in rows}

    def drop_twins(self, ids: list[str], created_at) -> int:
        """Delete this write's copy (``created_at``) of each of ``ids`` that is stored twice: a
        writer that lost the namespace lock while stopped, and committed after the process
        that took it over stored the same refs (see ``tools/remember_write.py``)."""
        tbl = self.table()
        if tbl is None or not ids:
            return 0
        tbl.checkout_latest()
        rows = tbl.search().where(sql_in("id", set(ids))).select(["id"]).limit(None).to_list()
        seen: dict[str, int] = {}
        for r in rows:
            seen[r["id"]] = seen.get(r["id"], 0) + 1
        twins = sorted(i for i, n in seen.items() if n > 1)
        if twins:
            where = f"{sql_in('id', twins)} AND {sql_time('created_at', '=', created_at)}"
            with self.core.writing():
                self.core.rewrote(tbl)
                retrying(lambda: tbl.delete(where), "drop twins", table=tbl)
            self._snap.touch()
        return len(twins)

    def count(self, flt: SourceFilter | None = None) -> int:
        tbl = self.table()
        return tbl.count_rows(where_of(flt)) if tbl is not None else 0

    def _select(self, where: str, limit: int | None = None) -> list[Source]:
        tbl = self.table()
        if tbl is None:
            return []
        rows = scan_rows(tbl, where, SOURCE_COLUMNS, limit)
        return [_clean(r) for r in rows if r["namespace"] == self.core.namespace]

    def _snapshot(self):
        """The in-process copy of the sources at the table's version, or None where LanceDB
        answers (``snapshot.py``)."""
        return self._snap.current(self.table())

    def copied(self) -> bool:
        """Whether the in-process copy answers reads of rows and vectors (``snapshot.py``):
        then a reader need not keep rows or vectors of its own."""
        return self._snapshot() is not None

    def get(self, ids: list[str]) -> list[Source]:
        """Rows for ``ids``, in the order asked (unknown ids are skipped). A long message found
        by a recent search carries ``span``: its best passage's offsets (``passages.py``)."""
        if not ids:
            return []
        state = self._snapshot()
        by_id = (snapshot.source_rows(state, ids) if state is not None else
                 {r.id: r for r in self._select(sql_in("id", set(ids)))})
        return self.with_spans([by_id[i] for i in ids if i in by_id])

    def with_spans(self, rows: list[Source]) -> list[Source]:
        """``rows`` with each long message's best passage of the latest searches as ``span``
        (a new row where the span changes: rows are frozen). A search
        run after a row was read may have found a better passage of it: a row kept across
        searches (``search.TurnSearch.rows``, the workspace's unit cache) gets its span again
        here before it is quoted."""
        out = []
        for r in rows:
            span = self.passages.span_of(r.id) if len(r.text) > PASSAGE_CHARS else None
            if span is not None and span[1] <= len(r.text) and r.span != span:
                r = r.with_span(span)
            out.append(r)
        return out

    def by_refs(self, refs: list[str]) -> list[Source]:
        return self._select(sql_in("ref", set(refs))) if refs else []

    def session_refs(self, session_id: str) -> list[tuple[str, str | None]]:
        """``(id, ref)`` of every message the session holds: one read of two columns (a
        remember's check for stored refs and the number of messages, under the write lock)."""
        tbl = self.table()
        if tbl is None:
            return []
        at = tbl.version
        kept = self._refs.get(session_id, at)   # read (or written) at this version by this process
        if kept is not None:
            return list(kept[0])
        got = scan_rows(tbl, f"session_id = {sql_str(session_id)}", ["id", "ref", "namespace"])
        refs = tuple((r["id"], r["ref"]) for r in got if r["namespace"] == self.core.namespace)
        if tbl.version == at:   # the read saw that version (the handle did not move meanwhile)
            self._refs.put(session_id, at, refs)
        return list(refs)

    def by_session(self, session_id: str) -> list[Source]:
        rows = self._select(f"session_id = {sql_str(session_id)}")
        return sorted(rows, key=lambda r: r.seq)

    def all(self) -> list[Source]:
        return self._select("true")

    def fts_search(self, query: str, limit: int,
                    flt: SourceFilter | None = None) -> list[tuple[str, float]]:
        """(id, BM25 score) best first. The query is matched as plain words, never parsed as
        query syntax, so quotes, colons or operators in it cannot break or steer the search."""
        where = where_of(flt)
        tbl = self.table()
        if tbl is None or not query.strip():
            return []
        rows = match_rows(tbl, query, "search_text", ["id", "namespace"], where,
                          limit + TIE_EXTRA)
        base = ranked([(r["id"], float(r["_score"])) for r in rows
                       if r["namespace"] == self.core.namespace], limit)

        def passages(ptbl, extra: str | None, k: int) -> list[dict]:
            got = match_rows(ptbl, query, "search_text", ["source_id", "namespace", "start", "end"],
                             _and(where, extra), k)
            return [dict(r, score=float(r["_score"])) for r in got]

        return self.passages.merge_hits(base, limit, passages)

    def vector_search(self, vector: np.ndarray, limit: int,
                       flt: SourceFilter | None = None) -> list[tuple[str, float]]:
        """(id, cosine similarity) best first."""
        where = where_of(flt)
        tbl = self.table()
        if tbl is None:
            return []
        vec = np.asarray(vector, dtype=np.float32)
        state = self._snap.current(tbl)
        if state is not None:
            hits = snapshot.search(state, vec, limit + TIE_EXTRA, snapshot.source_mask(state, flt))
            base = ranked([(state.rows[n].id, s) for n, s in hits], limit)
        else:
            q = (tbl.search(vec, query_type="vector", vector_column_name="vector")
                 .distance_type("cosine").select(["id", "namespace"]))
            if where:
                q = q.where(where, prefilter=True)
            rows = q.limit(limit + TIE_EXTRA).to_list()
            base = ranked([(r["id"], 1.0 - float(r["_distance"])) for r in rows
                           if r["namespace"] == self.core.namespace], limit)

        def passages(ptbl, extra: str | None, k: int) -> list[dict]:
            q = (ptbl.search(vec, query_type="vector", vector_column_name="vector")
                 .distance_type("cosine").select(["source_id", "namespace", "start", "end"]))
            cond = _and(where, extra)
            if cond:
                q = q.where(cond, prefilter=True)
            return [dict(r, score=1.0 - float(r["_distance"])) for r in q.limit(k).to_list()]

        return self.passages.merge_hits(base, limit, passages)

    def sample_ids(self, k: int, seed: int = 0) -> list[str]:
        """Ids of up to ``k`` sources: the ``k`` of least ``sha256(seed, id)``, in that order
        (so any prefix is itself a uniform sample). Uniform over the sources, and the same rows
        give the same sample whatever their physical order (two homes holding the same rows,
        e.g. after an export and import, calibrate alike; an offset draw did not)."""
        tbl = self.table()
        if tbl is None or not tbl.count_rows():
            return []
        ids = [r["id"] for r in tbl.search().select(["id", "namespace"]).limit(None).to_list()
               if r["namespace"] == self.core.namespace]
        key = f"{seed}:".encode()
        return heapq.nsmallest(k, ids, key=lambda i: hashlib.sha256(key + i.encode()).digest())

    def sample_vectors(self, k: int, seed: int = 0) -> np.ndarray:
        """Vectors of the sources :meth:`sample_source_ids` draws, shape (n, dim), in id order;
        empty when there are none."""
        pick = self.sample_ids(k, seed)
        if not pick:
            return np.zeros((0, self.core.dim or 0), dtype=np.float32)
        vecs = self.vectors(pick)
        return np.asarray([vecs[i] for i in sorted(vecs)], dtype=np.float32).reshape(len(vecs), -1)

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        tbl = self.table()
        if tbl is None or not ids:
            return {}
        state = self._snap.current(tbl)
        if state is not None:
            return snapshot.vectors(state, ids)
        rows = tbl.search().where(sql_in("id", set(ids))).select(["id", "vector"]).limit(None).to_list()
        return {r["id"]: np.asarray(r["vector"], dtype=np.float32) for r in rows}

    def matrix(self, ids: list[str]) -> tuple[list[str], np.ndarray]:
        """The ``ids`` that exist, in the order given, and their stored vectors as one matrix
        (from the copy: one gather, not a copy and a dict entry per vector)."""
        tbl = self.table()
        state = self._snap.current(tbl) if tbl is not None and ids else None
        if state is not None and state.mat is not None:
            found = [i for i in ids if i in state.pos]
            return found, state.mat[np.fromiter((state.pos[i] for i in found), np.int64, len(found))]
        got = self.vectors(ids)
        found = [i for i in ids if i in got]
        return found, (np.stack([got[i] for i in found]) if found
                       else np.zeros((0, self.core.dim or 0), np.float32))

    def delete(self, ids: list[str]) -> None:
        """Delete sources and their passages (derived: they go first, the sources last)."""
        self.passages.delete(ids)
        tbl = self.table()
        if tbl is not None and ids:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                with self.core.writing():
                    self.core.rewrote(tbl)
                    retrying(lambda chunk=chunk: tbl.delete(sql_in("id", chunk)), "delete sources", table=tbl)
            self._snap.touch()

    def rebuild_text_index(self) -> None:
        """Rebuild the full-text index from the rows that remain (forget uses it, so no token
        of a deleted message survives in an old index segment)."""
        tbl = self.table()
        if tbl is not None:
            with self.core.writing():
                retrying(lambda: tbl.create_index("search_text", config=fts_config(), replace=True),
                         "fts rebuild", table=tbl)
        self.passages.rebuild_index()


def _and(*conds: str | None) -> str | None:
    parts = [f"({c})" for c in conds if c]
    return " AND ".join(parts) or None
