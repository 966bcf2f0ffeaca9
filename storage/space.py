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
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from .budget import CopyBudget
from .db import Store, namespace_key, retrying, utcnow
from .derived import DerivedMixin
from .errors import ForgetRaced
from .logs import LogsMixin
from .memories import MemoriesMixin
from .names import read_forget_stamp
from .passages import PassagesMixin
from .schema import memories_schema, passages_schema, sources_schema
from .snapshot import SourceSnapshot, TableCopy
from .sources import SourcesMixin
from .upkeep import UpkeepMixin

log = logging.getLogger(__name__)
_FENCES = threading.local()   # per thread: namespace key -> the forget stamp its fence saw
EmbedFn = Callable[[list[str]], np.ndarray]
VECTOR_KINDS = {"sources": sources_schema, "memories": memories_schema,
                "passages": passages_schema}


def model_tag(model: str, dim: int) -> str:
    return f"{re.sub(r'[^a-z0-9]+', '_', model.lower()).strip('_')[:40]}_{dim}"


class Space(SourcesMixin, PassagesMixin, LogsMixin, MemoriesMixin, DerivedMixin, UpkeepMixin):
    """All reads and writes of one namespace. Get it from :meth:`Store.space`."""

    def __init__(self, store: Store, namespace: str):
        self.store = store
        self.namespace = namespace
        self.key = namespace_key(namespace)
        self.model: str | None = None
        self.dim: int | None = None
        self._init_upkeep()
        self._init_logs()
        self._init_passages()
        self._registered = False
        self._fts_ready = False
        self._vector_kinds: dict[str, object] = {}   # derived tables with vectors (kind -> schema)
        self._plain_kinds: set[str] = set()          # derived tables known to have no vectors
        self.forgotten: set[str] = set()             # source ids forgotten (by any process)
        self._source_snap = SourceSnapshot(namespace, store.source_copy_max_rows,
                                           store.budget.copies)
        self._copies: dict[str, TableCopy] = {}      # derived tables' copies, by kind
        self._fts_seen: dict[tuple[str, str], object] = {}   # (kind, column) -> a handle that had it
        self._rewritten: set[str] = set()            # tables with rows deleted or replaced
        self._rewritten_lock = threading.Lock()

    # -- naming -----------------------------------------------------------------------------
    def name(self, kind: str) -> str:
        if kind in VECTOR_KINDS or kind in self._vector_kinds:
            if self.model is None or self.dim is None:
                raise RuntimeError("bind_model() must be called before using vector tables")
            return f"ns_{self.key}__{kind}__{model_tag(self.model, self.dim)}"
        return f"ns_{self.key}__{kind}"

    def table(self, kind: str, schema=None, create: bool = False):
        if create and schema is None and kind in VECTOR_KINDS:
            if self.dim is None:
                raise RuntimeError("bind_model() must be called before using vector tables")
            schema = VECTOR_KINDS[kind](self.dim)
        if create and not self._registered:
            self.store.register_namespace(self.namespace)
            self._registered = True
        return self.store.open_table(self.name(kind), schema if create else None)

    @contextmanager
    def writing(self) -> Iterator[object]:
        """The namespace's write lock (``Store.write_lock``), held around every commit to its
        tables, in every process: LanceDB then never sees two commits to one table at once, so
        none fails on a conflict and leaves its files behind (a failed compaction's files hold
        every row it read, forgotten ones included, for the seven days LanceDB keeps them),
        and a forget holding the lock is not raced by a writer that read before it. Inside
        :meth:`fenced`, a forget made since the fence began fails the write (``ForgetRaced``)."""
        with self.store.write_lock(self.namespace) as held:
            seen = getattr(_FENCES, "seen", {}).get(self.key)
            if seen is not None and read_forget_stamp(self.store.uri, self.key) != seen:
                raise ForgetRaced(f"a forget in namespace {self.namespace!r} since this "
                                  "curation read its messages: nothing more of it was written")
            yield held

    @contextmanager
    def fenced(self) -> Iterator[str]:
        """Around work that reads messages and writes what it derives from them in several
        commits, outside the namespace lock (curation): a forget by another process in between
        makes each later commit of this thread fail with ``ForgetRaced`` instead of writing
        text the forget removed (a forget writes its stamp under the lock, after its deletes).
        Yields the stamp it saw ("" when no forget was ever made): reads inside must start from
        after that forget (``tools.recall.catch_up`` when :meth:`forget_handled` says no). A home
        in object storage keeps no stamp: there the fence sees nothing."""
        fences = _FENCES.__dict__.setdefault("seen", {})
        before = fences.get(self.key)
        stamp = fences[self.key] = read_forget_stamp(self.store.uri, self.key)
        try:
            yield stamp
        finally:
            if before is None:
                fences.pop(self.key, None)
            else:
                fences[self.key] = before

    def rewrote(self, tbl) -> None:
        """Note that a write deletes or replaces rows of ``tbl``: their bytes stay in its data
        files until they are rewritten, which the next purge does (``optimize(purge=True)``)."""
        with self._rewritten_lock:
            self._rewritten.add(tbl.name)

    def take_rewritten(self) -> set[str]:
        """The tables :meth:`rewrote` named since the last call."""
        with self._rewritten_lock:
            out, self._rewritten = self._rewritten, set()
            return out

    # -- the embedding model ------------------------------------------------------------------
    @property
    def vector_dim(self) -> int:
        """The bound model's vector dimension (a strategy's space is bound: ``Runtime.env``)."""
        if self.dim is None:
            raise RuntimeError("bind_model() must be called before using vector tables")
        return self.dim

    @property
    def copy_budget(self) -> CopyBudget:
        """The bytes budget shared by this process's in-process table copies, strategies'
        caches of derived tables among them (``strategies/nscache.py``)."""
        return self.store.budget.copies

    def bind_model(self, model: str, dim: int, embed: EmbedFn) -> None:
        """Use ``model`` for this namespace; re-embed rows stored under another model first."""
        with self.store.lock:
            self._embed = embed
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
                    self.put_session(sess.with_curation("queued"))
            if self.exists():   # a store from before passages: index its long messages now
                self.backfill_passages()

    def _reembed(self, kind: str, old_name: str, embed: EmbedFn) -> None:
        old = self.store.open_table(old_name)
        # the sources' full-text and look-up indexes are built where the table is created for a
        # write (``_sources``); a switch followed by recalls only would otherwise search without BM25
        new = self._sources(create=True) if kind == "sources" else self.table(kind, create=True)
        done = {r["id"] for r in new.search().select(["id"]).limit(None).to_list()}
        rows = [r for r in old.search().limit(None).to_list() if r["id"] not in done]
        log.info("re-embedding %d %s rows of namespace %r with %s", len(rows), kind,
                 self.namespace, self.model)
        for i in range(0, len(rows), 256):
            batch = rows[i:i + 256]
            vecs = embed([r.get("search_text") or r["text"] for r in batch])
            for r, v in zip(batch, vecs):
                r["vector"], r["embed_model"] = v.astype(np.float32).tolist(), self.model
            with self.writing():
                retrying(lambda batch=batch: new.merge_insert("id").when_not_matched_insert_all()
                         .execute(batch), "re-embed")
        self.audit("reembed", [], {"table": kind, "from": old_name, "to": self.name(kind),
                                   "rows": len(rows)})
        self.store.drop_table(old_name)

    def exists(self) -> bool:
        """Whether anything was ever written to this namespace (reads never create it)."""
        if not self._registered and self.namespace in self.store.namespaces():
            self._registered = True
        return self._registered

    def see_latest(self, *kinds: str) -> None:
        """Move these tables' handles to their newest version now (not after the connection's
        consistency interval): for a check under ``Store.write_lock``."""
        for kind in kinds:
            tbl = self.table(kind)
            if tbl is not None:
                tbl.checkout_latest()

    # -- forgets in other processes (see ``forgets``) -------------------------------------------
    def forget_news(self, force: bool = False) -> set[str] | None:
        """Ids forgotten in this namespace by any process since the last look (None: nothing
        new). On news the namespace's table handles are dropped, so reads see the deletes now."""
        gone = self.store.forgets.news(self.key, force)
        if gone is not None:
            self.store.refresh(f"ns_{self.key}__")
            self._note_forgotten(gone)
        return gone

    def forget_handled(self, stamp: str) -> bool:
        """Whether this process has applied the forget whose stamp is ``stamp`` (or none)."""
        return not stamp or self.store.forgets.seen(self.key) == stamp

    def mark_forgotten(self, source_ids: list[str]) -> None:
        """After this process's forget committed: tell the other processes."""
        self._note_forgotten(source_ids)
        self.store.forgets.mark(self.key, source_ids)

    def _note_forgotten(self, ids) -> None:
        if len(self.forgotten) > 100_000:   # a guard, not a ledger: caches were dropped anyway
            self.forgotten.clear()
        self.forgotten.update(ids)

    def _has_vectors(self, kind: str) -> bool:
        return kind in VECTOR_KINDS

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

    def disk_bytes(self) -> int | None:
        """Bytes of this namespace's table folders on disk (None for an object-store home)."""
        import os
        from pathlib import Path

        if "://" in self.store.uri:
            return None
        total = 0
        for d in Path(self.store.uri).glob(f"ns_{self.key}__*.lance"):
            for root, _, files in os.walk(d):
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files
                             if os.path.exists(os.path.join(root, f)))
        return total
