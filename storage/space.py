"""One namespace's storage (:class:`Space`): the repositories of its tables, composed over one
:class:`~trimem.storage.core.SpaceCore` (the store, the namespace's key, table names and handles,
the write lock, the bound model).

When the configured embedder changes, :meth:`Space.bind_model` re-embeds the rows into the new
model's table (idempotently: an interrupted run resumes), records the switch in ``_meta`` and only
then drops the old table.
"""

from __future__ import annotations

import logging
import os
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np

from .budget import CopyBudget
from .core import VECTOR_KINDS, EmbedFn, SpaceCore, model_tag
from .db import Store, retrying, utcnow
from .derived import Derived
from .logs import Log
from .memories import Memories
from .passages import Passages
from .sessions import Sessions
from .sources import Sources
from .upkeep import Upkeep

log = logging.getLogger(__name__)
__all__ = ["EmbedFn", "Space", "model_tag"]


class Space:
    """All reads and writes of one namespace, by table: ``sources`` (messages) with their
    ``passages``, ``sessions``, ``memories``, ``derived`` (the strategies' own tables), ``log``
    (recalls and audit) and ``upkeep`` (compaction, indexes). Get it from :meth:`Store.space`."""

    def __init__(self, store: Store, namespace: str):
        self.store = store
        self.namespace = namespace
        self.core = core = SpaceCore(store, namespace)
        self.key = core.key
        self.upkeep = Upkeep(core)
        core.on_write(self.upkeep.after_write)
        self.derived = Derived(core)
        self.passages = Passages(core)
        self.sources = Sources(core, self.passages)
        self.sessions = Sessions(core)
        self.memories = Memories(core, self.derived)
        self.log = Log(core, self.sources, self.memories)
        self.forgotten: set[str] = set()             # source ids forgotten (by any process)

    # -- tables and the write lock ------------------------------------------------------------
    @property
    def model(self) -> str | None:
        return self.core.model

    @property
    def dim(self) -> int | None:
        return self.core.dim

    def name(self, kind: str) -> str:
        """The table name of ``kind`` in this namespace (model-tagged for vector tables)."""
        return self.core.name(kind)

    def table(self, kind: str, schema=None, create: bool = False):
        """The table of ``kind`` (None while it does not exist, unless ``create``)."""
        return self.core.table(kind, schema, create)

    def writing(self) -> AbstractContextManager[object]:
        """The namespace's write lock around a commit (``SpaceCore.writing``)."""
        return self.core.writing()

    def fenced(self) -> AbstractContextManager[str]:
        """A fence against forgets in other processes (``SpaceCore.fenced``)."""
        return self.core.fenced()

    def exists(self) -> bool:
        """Whether anything was ever written to this namespace (reads never create it)."""
        return self.core.exists()

    now = staticmethod(utcnow)

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
        core = self.core
        with self.store.lock:
            core.embed = embed
            if core.model == model and core.dim == dim:
                return
            core.model, core.dim = model, dim
            self.sources.fts_ready = False
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
                for sess in self.sessions.all():
                    self.sessions.put(sess.with_curation("queued"))
            if self.exists():   # a store from before passages: index its long messages now
                self.passages.backfill()

    def _reembed(self, kind: str, old_name: str, embed: EmbedFn) -> None:
        old = self.store.open_table(old_name)
        # the sources' full-text and look-up indexes are built where the table is created for a
        # write (``Sources.table``); a switch followed by recalls only would otherwise search
        # without BM25
        new = self.sources.table(create=True) if kind == "sources" else self.table(kind, create=True)
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
        self.log.audit("reembed", [], {"table": kind, "from": old_name, "to": self.name(kind),
                                   "rows": len(rows)})
        self.store.drop_table(old_name)

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

    def stats(self) -> dict:
        out = {}
        prefix = f"ns_{self.key}__"
        for name in self.store.table_names():
            if name.startswith(prefix):
                out[name[len(prefix):]] = self.store.open_table(name).count_rows()
        return out

    def disk_bytes(self) -> int | None:
        """Bytes of this namespace's table folders on disk (None for an object-store home)."""
        if "://" in self.store.uri:
            return None
        total = 0
        for d in Path(self.store.uri).glob(f"ns_{self.key}__*.lance"):
            for root, _, files in os.walk(d):
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files
                             if os.path.exists(os.path.join(root, f)))
        return total
