"""One namespace's tables, their indexes and their upkeep.

Vector-bearing tables are named after the model that made their vectors
(``ns_<key>__sources__<model-tag>``), so vectors of two models can never mix in one table.
When the configured embedder changes, :meth:`Space.bind_model` re-embeds the rows into the new
model's table (idempotently: an interrupted run resumes), records the switch in ``_meta`` and only
then drops the old table.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import warnings
from datetime import timedelta
from typing import Callable

import numpy as np

from .db import Store, namespace_key, retrying, utcnow
from .derived import DerivedMixin
from .logs import LogsMixin
from .memories import MemoriesMixin
from .schema import memories_schema, sources_schema
from .sources import SourcesMixin

log = logging.getLogger(__name__)
EmbedFn = Callable[[list[str]], np.ndarray]
VECTOR_KINDS = {"sources": sources_schema, "memories": memories_schema}


def model_tag(model: str, dim: int) -> str:
    return f"{re.sub(r'[^a-z0-9]+', '_', model.lower()).strip('_')[:40]}_{dim}"


class Space(SourcesMixin, LogsMixin, MemoriesMixin, DerivedMixin):
    """All reads and writes of one namespace. Get it from :meth:`Store.space`."""

    def __init__(self, store: Store, namespace: str):
        self.store = store
        self.namespace = namespace
        self.key = namespace_key(namespace)
        self.model: str | None = None
        self.dim: int | None = None
        self._commits: dict[str, tuple[int, int]] = {}   # kind -> (commits, rows) since upkeep
        self._optimizing: set[str] = set()
        self._upkeep_lock = threading.Lock()
        self._index_rows: dict[str, int] = {}   # kind -> rows when its vector index was built
        self._index_thread: threading.Thread | None = None
        self._registered = False
        self._fts_ready = False
        self._vector_kinds: dict[str, object] = {}   # derived tables with vectors (kind -> schema)
        self._plain_kinds: set[str] = set()          # derived tables known to have no vectors

    # -- naming -----------------------------------------------------------------------------
    def name(self, kind: str) -> str:
        if kind in VECTOR_KINDS or kind in self._vector_kinds:
            if self.model is None:
                raise RuntimeError("bind_model() must be called before using vector tables")
            return f"ns_{self.key}__{kind}__{model_tag(self.model, self.dim)}"
        return f"ns_{self.key}__{kind}"

    def table(self, kind: str, schema=None, create: bool = False):
        if create and schema is None and kind in VECTOR_KINDS:
            schema = VECTOR_KINDS[kind](self.dim)
        if create and not self._registered:
            self.store.register_namespace(self.namespace)
            self._registered = True
        return self.store.open_table(self.name(kind), schema if create else None)

    # -- the embedding model ------------------------------------------------------------------
    def bind_model(self, model: str, dim: int, embed: EmbedFn) -> None:
        """Use ``model`` for this namespace; re-embed rows stored under another model first."""
        with self.store.lock:
            if self.model == model and self.dim == dim:
                return
            self.model, self.dim = model, dim
            self._fts_ready = False
            tag = model_tag(model, dim)
            stale = False
            for name in self.store.table_names():
                parts = name[len(f"ns_{self.key}__"):].split("__")
                if not name.startswith(f"ns_{self.key}__") or len(parts) != 2 or parts[1] == tag:
                    continue
                if parts[0] in VECTOR_KINDS:
                    self._reembed(parts[0], name, embed)
                else:  # derived data: rebuilt from the sources by re-curating every session
                    self.store.drop_table(name)
                    stale = True
            if stale:
                for sess in self.list_sessions():
                    self.put_session(dict(sess, curation="queued"))

    def _reembed(self, kind: str, old_name: str, embed: EmbedFn) -> None:
        old = self.store.open_table(old_name)
        new = self.table(kind, create=True)
        done = {r["id"] for r in new.search().select(["id"]).limit(None).to_list()}
        rows = [r for r in old.search().limit(None).to_list() if r["id"] not in done]
        log.info("re-embedding %d %s rows of namespace %r with %s", len(rows), kind,
                 self.namespace, self.model)
        for i in range(0, len(rows), 256):
            batch = rows[i:i + 256]
            vecs = embed([r.get("search_text") or r["text"] for r in batch])
            for r, v in zip(batch, vecs):
                r["vector"], r["embed_model"] = v.astype(np.float32).tolist(), self.model
            retrying(lambda: new.merge_insert("id").when_not_matched_insert_all().execute(batch),
                     "re-embed")
        self.audit("reembed", [], {"table": kind, "from": old_name, "to": self.name(kind),
                                   "rows": len(rows)})
        self.store.drop_table(old_name)

    # -- upkeep -------------------------------------------------------------------------------
    def after_write(self, kind: str, n_rows: int = 0) -> None:
        """Every write lands here. Now and then a table is compacted and its new rows folded
        into its indexes, in the background (one run per table at a time): every commit adds a
        fragment and a version, and a table of thousands of small fragments makes every read
        and every merge slower. The vector index is built once a table is large enough."""
        with self._upkeep_lock:
            commits, rows = self._commits.get(kind, (0, 0))
            commits, rows = commits + 1, rows + n_rows
            due = (commits >= self.store.optimize_every_commits
                   or rows >= self.store.optimize_every_rows) and kind not in self._optimizing
            self._commits[kind] = (0, 0) if due else (commits, rows)
            if due:
                self._optimizing.add(kind)
        if due:
            threading.Thread(target=self._optimize_in_background, args=(kind,),
                             name="trimem-optimize", daemon=True).start()
        if kind in VECTOR_KINDS and n_rows:
            tbl = self.table(kind)
            n = tbl.count_rows() if tbl is not None else 0
            if n >= self.store.vector_index_min_rows and self._index_due(tbl, kind, n):
                if self._index_thread is None or not self._index_thread.is_alive():
                    self._index_thread = threading.Thread(
                        target=self.build_vector_index, args=(kind, True), daemon=True,
                        name="trimem-vector-index")
                    self._index_thread.start()

    def _index_due(self, tbl, kind: str, n: int) -> bool:
        """No vector index yet, or the table has doubled since it was built: rows added after a
        build are only appended to it as delta segments, and a 10k-row index stretched to 100k
        rows made the vector lookup ~8x slower. Rebuilding at each doubling keeps the total
        build work within twice one build of the final size."""
        if not self.has_vector_index(tbl):
            return True
        built = self._index_rows.get(kind)
        if built is None:   # first look in this process: take the index as it stands
            built = self._index_rows[kind] = n
        return n >= 2 * built

    def _optimize_in_background(self, kind: str) -> None:
        try:
            tbl = self.table(kind)
            if tbl is not None:
                retrying(lambda: tbl.optimize(), f"optimize {kind}")
        except Exception as exc:  # upkeep is an optimisation: log it, never fail a write
            log.warning("optimizing %s of %r failed: %s", kind, self.namespace, exc)
        finally:
            with self._upkeep_lock:
                self._optimizing.discard(kind)

    def wait_upkeep(self, timeout: float = 60.0) -> None:
        """Wait for background compaction and index builds (tests and benchmarks)."""
        import time as _t

        end = _t.monotonic() + timeout
        while _t.monotonic() < end:
            with self._upkeep_lock:
                busy = bool(self._optimizing)
            if not busy and not (self._index_thread and self._index_thread.is_alive()):
                return
            _t.sleep(0.05)

    @staticmethod
    def has_vector_index(tbl) -> bool:
        return any(ix.columns == ["vector"] for ix in tbl.list_indices())

    def build_vector_index(self, kind: str = "sources", rebuild: bool = False) -> bool:
        """HNSW (scalar-quantised, cosine) over the vectors; searches stay flat until it exists."""
        from lancedb.index import HnswSq

        tbl = self.table(kind)
        if tbl is None or (self.has_vector_index(tbl) and not rebuild):
            return False
        try:
            n = tbl.count_rows()
            retrying(lambda: tbl.create_index("vector", config=HnswSq(distance_type="cosine"),
                                              replace=True), "vector index")
            self._index_rows[kind] = n
            log.info("built the vector index of %s", tbl.name)
            return True
        except Exception:  # an index is an optimisation: never fail a write for it
            log.exception("building the vector index of %s failed", tbl.name)
            return False

    def optimize(self, purge: bool = False) -> list[str]:
        """Compact every table and fold unindexed rows in. ``purge`` also deletes old versions
        at once (what makes ``forget`` a hard delete on disk)."""
        done = []
        if purge:
            self.wait_upkeep()   # a background compaction must not race the purge
        prefix = f"ns_{self.key}__"
        for name in self.store.table_names():
            if not name.startswith(prefix):
                continue
            tbl = self.store.open_table(name)
            # Purge: compact (deleted rows are dropped from rewritten files), then delete every
            # file only older versions use. Files no version names yet (a concurrent writer's,
            # not committed) are left alone: delete_unverified stays False.
            kw = {"cleanup_older_than": timedelta(0)} if purge else {}
            with warnings.catch_warnings():  # purging is the point of forget: it is rare and
                warnings.simplefilter("ignore", UserWarning)  # a reader retries on a lost version
                retrying(lambda: tbl.optimize(**kw), "optimize")
            done.append(name[len(prefix):])
        return done

    def optimize_table(self, suffix: str) -> None:
        """Optimize one table, named as in :meth:`stats` (e.g. ``audit``)."""
        tbl = self.store.open_table(f"ns_{self.key}__{suffix}")
        if tbl is not None:
            retrying(lambda: tbl.optimize(), "optimize")

    def stats(self) -> dict:
        out = {}
        prefix = f"ns_{self.key}__"
        for name in self.store.table_names():
            if name.startswith(prefix):
                out[name[len(prefix):]] = self.store.open_table(name).count_rows()
        return out

    @staticmethod
    def dumps(obj) -> str:
        return json.dumps(obj, ensure_ascii=False, default=str, separators=(",", ":"))

    now = staticmethod(utcnow)
