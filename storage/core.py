"""What the repositories of one namespace share (:class:`SpaceCore`): the store, the namespace's
key, its tables' names and handles, the write lock, the bound embedding model, the in-process
table copies and the note of tables whose rows were deleted or replaced.

Vector-bearing tables are named after the model that made their vectors
(``ns_<key>__sources__<model-tag>``), so vectors of two models can never mix in one table.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import snapshot
from .tablecopy import TableCopy
from .db import Store, namespace_key, retrying, utcnow
from .errors import ForgetRaced
from .names import read_forget_stamp
from .schema import ZSTD, memories_schema, passages_schema, sources_schema, uncompressed_columns

log = logging.getLogger(__name__)
_FENCES = threading.local()   # per thread: namespace key -> the forget stamp its fence saw
EmbedFn = Callable[[list[str]], np.ndarray]
VECTOR_KINDS = {"sources": sources_schema, "memories": memories_schema,
                "passages": passages_schema}


def model_tag(model: str, dim: int) -> str:
    return f"{re.sub(r'[^a-z0-9]+', '_', model.lower()).strip('_')[:40]}_{dim}"


def has_vectors(kind: str) -> bool:
    """Whether ``kind`` is one of the namespace's own vector tables (not a strategy's)."""
    return kind in VECTOR_KINDS


class SpaceCore:
    """The state and the table access every repository of a namespace uses."""

    def __init__(self, store: Store, namespace: str):
        self.store = store
        self.namespace = namespace
        self.key = namespace_key(namespace)
        self.model: str | None = None
        self.dim: int | None = None
        self.embed: EmbedFn | None = None            # the bound model's embedder
        self.vector_kinds: dict[str, object] = {}    # derived tables with vectors (kind -> schema)
        self.plain_kinds: set[str] = set()           # derived tables known to have no vectors
        self._registered = False
        self._copies: dict[str, TableCopy] = {}   # tables' in-process copies, by kind
        self.copy_omits: dict[str, frozenset[str]] = {}   # kind -> columns its copy leaves out
        self._encoded: set[str] = set()
        self._rewritten: set[str] = set()            # tables with rows deleted or replaced
        self._rewritten_lock = threading.Lock()
        self._written: Callable[[str, int], None] = lambda kind, n_rows: None

    # -- naming -------------------------------------------------------------------------------
    def name(self, kind: str) -> str:
        if kind in VECTOR_KINDS or kind in self.vector_kinds:
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

    def exists(self) -> bool:
        """Whether anything was ever written to this namespace (reads never create it)."""
        if not self._registered and self.namespace in self.store.namespaces():
            self._registered = True
        return self._registered

    # -- writes -------------------------------------------------------------------------------
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
        after that forget (``tools.recall.catch_up`` when ``Space.forget_handled`` says no). A
        home in object storage keeps no stamp: there the fence sees nothing."""
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

    def on_write(self, hook: Callable[[str, int], None]) -> None:
        """Call ``hook(kind, n_rows)`` after every commit (the namespace's upkeep)."""
        self._written = hook

    def after_write(self, kind: str, n_rows: int = 0) -> None:
        self._written(kind, n_rows)

    def encode(self, kind: str, tbl) -> None:
        """Give the compressible columns of ``kind``'s table (``schema.compressed``) their
        on-disk compression where a table an earlier version created lacks it: its next
        compaction rewrites the old rows with it (``optimize``), new rows are written with it.
        The rows read back the same. Checked once per process per kind, before a write."""
        if kind in self._encoded:
            return
        cols = uncompressed_columns(tbl.schema)
        if cols:
            with self.writing():
                retrying(lambda: tbl.update_field_metadata(
                    *({"path": c, "metadata": ZSTD} for c in cols)), f"encode {kind}", table=tbl)
            log.info("%s: %d columns now compressed on disk", tbl.name, len(cols))
        self._encoded.add(kind)

    # -- in-process copies (``snapshot.py``) ------------------------------------------------------
    def table_copy(self, kind: str, tbl, follows_bulk_writes: bool = False,
                   key: str = "id") -> snapshot.State | None:
        """The in-process copy of ``kind``'s table at its version (``snapshot.py``), or None
        where LanceDB answers. ``follows_bulk_writes``: a table curation does not rewrite, so
        its copy is reloaded for curation's reads too. ``key``: the column naming a row, by
        which this process's commits tell the copy what they changed (``wrote_copy``,
        ``wrote_where``)."""
        copy = self._copies.get(kind)
        if copy is None:
            copy = self._copies.setdefault(kind, TableCopy(
                self.namespace, self.store.vector_index_min_rows, follows_bulk_writes,
                self.store.budget.copies, key, self.copy_omits.get(kind, frozenset())))
        return copy.current(tbl)

    def omit_from_copy(self, kind: str, columns: Iterable[str]) -> None:
        """Leave ``columns`` out of ``kind``'s copy (a copy made from now on): columns no
        recall reads, such as a wiki page's text (BM25 searches it in LanceDB), which would
        otherwise be most of what the copy holds. A read that asks for one goes to LanceDB."""
        self.copy_omits[kind] = self.copy_omits.get(kind, frozenset()) | frozenset(columns)

    def copy_serves(self, kind: str, columns: Iterable[str] | None) -> bool:
        """Whether ``kind``'s copy may answer a read of ``columns`` (None: every column)."""
        omits = self.copy_omits.get(kind)
        return not omits or (columns is not None and not omits.intersection(columns))

    def copies(self) -> dict[str, TableCopy]:
        """The derived tables' copies made so far, by kind (for measuring what they hold)."""
        return dict(self._copies)

    def touch_copy(self, kind: str) -> None:
        copy = self._copies.get(kind)
        if copy is not None:
            copy.touch()

    def wrote_copy(self, kind: str, result: Any, keys: Iterable[Any] | None) -> None:
        """Tell ``kind``'s copy what a commit of this process (LanceDB's ``result`` of it)
        changed: the rows of these ``keys`` (the copy's key column) and nothing else, so the copy
        may be patched; or, when ``keys`` is None or the result counts no row changed (then it
        may have made no version), only that the table changed."""
        if keys is None:
            self.touch_copy(kind)
        else:
            self.wrote_where(kind, None, result, None, keys)

    def holds_copy(self, kind: str) -> bool:
        """Whether ``kind``'s copy holds rows a commit could patch (``wrote_where``'s ``before``
        is worth a version look)."""
        copy = self._copies.get(kind)
        return copy is not None and copy.holds_rows

    def wrote_where(self, kind: str, tbl, result: Any, eq: dict[str, Any] | None,
                    keys: Iterable[Any] = (), before: int | None = None) -> None:
        """``wrote_copy`` for a commit through ``tbl`` that changed the rows of ``keys`` and
        deleted those matching ``eq`` (a delete by another column than the key, a merge that
        deletes what its source lacks; None: nothing more). The version the commit was made on:
        under the write lock no other commit comes between, so it is the one before
        ``result``'s when the commit changed a row (it made a version), else ``before``, the
        table's version looked at under the lock before the commit (a delete that matched
        nothing still makes a version in LanceDB 0.40; if it made none, ``result``'s version is
        ``before`` and there is nothing to tell). The rows ``eq`` deleted are read from the copy
        when it holds that version (``tbl``: the handle it must have been read through; only
        read when ``eq`` is given). When either is unknown the copy is only told that the
        table changed."""
        copy = self._copies.get(kind)
        if copy is None:
            return
        version = getattr(result, "version", None)
        if not isinstance(version, int):
            copy.touch()
            return
        changed = _changed(result)
        if version == before and not changed:
            return   # no version made: the copy is as current as it was
        base = version - 1 if changed else before
        gone = None if base is None or version != base + 1 else \
            frozenset() if eq is None else copy.matching(tbl, base, eq)
        if gone is None:
            copy.touch()
        else:
            copy.wrote(version, frozenset(str(k) for k in keys) | gone)

    def drop_copy(self, kind: str) -> None:
        self._copies.pop(kind, None)

    # -- values -------------------------------------------------------------------------------
    @staticmethod
    def dumps(obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=False, default=str, separators=(",", ":"))

    @staticmethod
    def now() -> datetime:
        return utcnow()


def _changed(result: Any) -> int:
    """The rows a commit's result (LanceDB's MergeResult, DeleteResult, UpdateResult) counts as
    changed: when none, the commit may have made no version."""
    return sum(getattr(result, name, 0) or 0 for name in (
        "num_inserted_rows", "num_updated_rows", "num_deleted_rows", "rows_updated"))
