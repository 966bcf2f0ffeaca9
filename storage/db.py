"""The store: one LanceDB database (a folder or an object-store URI) holding every namespace.

Only the ``storage`` package imports lancedb. Caller values never reach a filter string except
through :func:`sql_str` (quoted, with embedded quotes doubled; NUL rejected), and namespaces never
reach one at all: each namespace has its own tables (see ``schema``).
"""

from __future__ import annotations

import atexit
import logging
import os
import random
import threading
import time
import weakref
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TypeVar

import pyarrow as pa

from . import allocators
from .budget import DEFAULT_MB, RamBudget
from .errors import StorageError, purged  # noqa: F401 (purged: callers)
from .lance import lancedb   # imported with the validators deferred (lance.py)
from .curating import CurationTurns
from .locks import Held, lease_lock
from .names import namespace_key, write_forget_stamp  # noqa: F401 (namespace_key: callers)
from .private import private_umask
from .schema import META, MIGRATIONS, NAMESPACES, SCHEMA_VERSION

if TYPE_CHECKING:
    from .space import Space

log = logging.getLogger(__name__)
T = TypeVar("T")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def sql_str(value: str) -> str:
    """Quote a caller's value as a SQL string literal for a LanceDB filter."""
    if not isinstance(value, str):
        raise TypeError(f"expected str, got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed in ids, refs or session ids")
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    vals = list(values)
    if not vals:
        return "false"
    return f"{column} IN ({', '.join(sql_str(v) for v in vals)})"


def sql_time(column: str, op: str, when: datetime) -> str:
    """A timestamp comparison; ``when`` is a parsed datetime, never caller text. The year is
    always four digits (``strftime('%Y')`` writes year 999 as ``999``, which no filter parses)."""
    assert op in {"<", "<=", ">", ">=", "="}
    utc = when.astimezone(timezone.utc).replace(tzinfo=None)
    return f"{column} {op} timestamp '{utc.isoformat(timespec='microseconds')}Z'"


def retrying(fn: Callable[[], T], what: str, attempts: int = 12, table: Any = None) -> T:
    """Run a write; on an optimistic-commit conflict (another writer won), back off and retry.

    LanceDB commits optimistically: two processes appending to one table can conflict, and the
    loser must retry. A conflict is never dropped silently: after ``attempts`` it raises. With
    ``table`` (the handle ``fn`` writes through), the handle is moved to the table's newest
    version before each try: a write planned from the version this handle last saw, when
    another process has committed since (before this one took the namespace's lock), conflicts
    at its commit -- on every retry, the handle not moving -- and each failed try of a rewrite
    (a compaction, a merge) leaves its new data files behind, named by no version, holding the
    text of rows a later forget deletes (the three-process forget race found a forgotten
    message in six such files of a compaction). A handle left on a version another process
    purged is handled the same way.
    """
    for i in range(attempts):
        try:
            if table is not None:
                table.checkout_latest()
            return fn()
        except (OSError, RuntimeError, ValueError) as exc:
            msg = str(exc).lower()
            transient = "conflict" in msg or "retry" in msg or "concurrent" in msg
            stale = table is not None and purged(exc)
            if not (transient or stale) or i == attempts - 1:
                raise
            time.sleep(min(0.5, 0.01 * 2 ** i) * (0.5 + random.random()))
            log.debug("retrying %s after conflict: %s", what, exc)
    raise AssertionError("unreachable")


def ensure_index(tbl, column: str, config, attempts: int = 12) -> bool:
    """Create an index on ``column`` unless one exists; True when this call built it.

    Two processes opening a new table race to index it. The loser's commit conflicts, and
    retrying on the same (stale) handle conflicts again, so each retry first moves the handle to
    the newest version and stops if the winner's index is there.
    """
    for i in range(attempts):
        if i:
            tbl.checkout_latest()
        if any(ix.columns == [column] for ix in tbl.list_indices()):
            return False
        try:
            tbl.create_index(column, config=config, replace=False)
            return True
        except (OSError, RuntimeError, ValueError) as exc:
            msg = str(exc).lower()
            if "already exists" in msg:
                return False
            if not ("conflict" in msg or "retry" in msg or "concurrent" in msg) or i == attempts - 1:
                raise
            time.sleep(min(0.5, 0.01 * 2 ** i) * (0.5 + random.random()))
    raise AssertionError("unreachable")


def private_folder(path: Path) -> None:
    """Create the memory folder readable by its owner only (0700); an existing one others can
    enter is made private too (its files are then out of their reach, whatever their modes)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.stat()
    if st.st_mode & 0o077 and hasattr(os, "getuid") and st.st_uid == os.getuid():
        os.chmod(path, 0o700)
        log.warning("made the memory folder %s private to its owner (it was mode %04o)", path,
                    st.st_mode & 0o777)


_OPEN_STORES: "weakref.WeakSet[Store]" = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    """At interpreter exit, let background upkeep finish first: a daemon thread still inside
    LanceDB's native code when Python finalizes aborts the process ("FATAL: exception not
    rethrown", "PyGILState_Release ... must be current")."""
    for store in list(_OPEN_STORES):
        store.close(timeout=20)


class Store:
    """Opens (creating if needed) the database at ``home`` and hands out namespace handles."""

    def __init__(self, home: str | Path, *, vector_index_min_rows: int = 10_000,
                 source_copy_max_rows: int = 200_000, max_ram_mb: float = DEFAULT_MB,
                 optimize_every_rows: int = 2_000, optimize_every_commits: int = 64,
                 optimize_idle_s: float = 3.0, lock_wait_s: float = 30.0,
                 lock_lease_s: float = 10.0, scalar_index_min_rows: int = 2_000):
        self.uri = str(home)
        if "://" not in self.uri:
            private_umask()   # LanceDB's files, locks, logs: the user's alone (private.py)
            try:
                private_folder(Path(self.uri))
            except OSError as exc:
                raise StorageError(f"cannot create the data folder {self.uri}: {exc}") from exc
        self.vector_index_min_rows = vector_index_min_rows
        self.scalar_index_min_rows = scalar_index_min_rows   # derived.py, scalar_indexes
        self.source_copy_max_rows = source_copy_max_rows   # storage/snapshot.py, SourceSnapshot
        self.budget = RamBudget(max_ram_mb)   # LanceDB's caches and the copies (budget.py)
        allocators.settle()                   # freed memory goes back to the system
        self.optimize_every_rows = optimize_every_rows
        self.optimize_every_commits = optimize_every_commits
        self.optimize_idle_s = optimize_idle_s
        self.lock_wait_s = lock_wait_s     # storage/locks.py
        self.lock_lease_s = lock_lease_s
        self.curations = CurationTurns(self.uri, lock_lease_s, lock_wait_s,   # curating.py
                                       open_table=self.open_table)
        # Another process (a second host's server on the same home) may write too: reads look
        # for newer versions at most once a second, so its writes show up without a restart.
        self.db = lancedb.connect(self.uri, read_consistency_interval=timedelta(seconds=1),
                                  session=self.budget.lance_session())
        self.lock = threading.RLock()   # guards the handle caches below; held only briefly
        self._spaces: dict[str, Space] = {}
        self._tables: dict[str, Any] = {}   # lancedb tables
        self._write_locks: dict[str, threading.RLock] = {}   # object-store homes only
        self._migrate()
        from .forgets import ForgetMarks  # lazy: cycle with storage.forgets

        self.forgets = ForgetMarks(self)
        self.forgets.baseline()
        _OPEN_STORES.add(self)

    # -- tables ---------------------------------------------------------------------------
    def table_names(self) -> list[str]:
        names, token = [], None
        while True:
            page = self.db.list_tables(page_token=token, limit=1000)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return names

    def open_table(self, name: str, schema: pa.Schema | None = None) -> Any:
        """The table ``name`` (a lancedb ``Table``); created with ``schema`` if missing, else None
        when missing. Typed ``Any``: most callers pass a schema or checked the table exists."""
        with self.lock:
            tbl = self._tables.get(name)
            if tbl is not None:
                return tbl
            try:
                tbl = self.db.open_table(name)
            except (ValueError, FileNotFoundError, RuntimeError):
                if schema is None:
                    return None
                tbl = retrying(lambda: self.db.create_table(name, schema=schema, exist_ok=True),
                               f"create {name}")
            self._tables[name] = tbl
            return tbl

    def refresh(self, prefix: str = "") -> None:
        """Forget cached table handles (all, or those whose name starts with ``prefix``): after
        another handle purged old versions' files, or another process forgot rows."""
        with self.lock:
            for name in [n for n in self._tables if n.startswith(prefix)]:
                del self._tables[name]

    def see_latest(self, prefix: str = "") -> None:
        """Move the cached table handles whose name starts with ``prefix`` to their newest
        version now, not at the connection's next consistency check (1 s): after another
        process's writes this one must read. Unlike :meth:`refresh`, the handles stay, so the
        copies of tables the other process did not write stay too (``storage/tablecopy.py``)."""
        with self.lock:
            tables = [t for n, t in self._tables.items() if n.startswith(prefix)]
        for tbl in tables:
            try:
                tbl.checkout_latest()
            except (OSError, RuntimeError, ValueError):   # dropped meanwhile: reopened when read
                self.refresh(tbl.name)

    def close(self, timeout: float = 30.0) -> bool:
        """Let running compactions and index builds finish and start no new ones (call before
        the process exits: a thread killed inside LanceDB's native code can crash the exit)."""
        with self.lock:
            spaces = list(self._spaces.values())
        end = time.monotonic() + timeout
        for sp in spaces:   # queued recall records first: writing them is upkeep's to follow
            sp.log.close(max(0.0, end - time.monotonic()))
        return all([sp.upkeep.close(max(0.0, end - time.monotonic())) for sp in spaces])

    @contextmanager
    def write_lock(self, namespace: str, wait_s: float | None = None) -> Iterator[Held | None]:
        """Held while a writer checks what a namespace holds and then writes on that basis (the
        remember dedup by ref), and by ``forget`` and the recall log's writes (a record must not
        land after a forget looked for it): one thread at a time in this process and, for a store
        in a local folder, one process at a time (a lease on ``_locks/<key>.lease``, see
        ``locks.py``: bounded waits, a dead or stopped holder taken over). LanceDB's optimistic
        commits cannot express "insert unless present" across processes. Re-entrant in a thread.
        Yields the lease (None for an object-store home): ``check()`` it before writing.
        ``wait_s``: the longest to wait (default ``lock_wait_s``), then ``locks.LockBusy``."""
        if "://" in self.uri:
            with self.lock:
                tlock = self._write_locks.setdefault(namespace, threading.RLock())
            with tlock:
                yield None
            return
        lock = lease_lock(Path(self.uri) / "_locks" / f"{namespace_key(namespace)}.lease",
                          self.lock_lease_s, self.lock_wait_s)
        with lock.hold(wait_s) as held:
            yield held

    def stamp_forget(self, key: str, token: str) -> None:
        """After a forget's mark: the same token in a plain file (``names.write_forget_stamp``),
        so what is kept outside the store (the capture digest) can tell it is out of date."""
        try:
            write_forget_stamp(self.uri, key, token)
        except OSError as exc:   # the digest then stays until rebuilt; say so
            log.error("could not write the forget stamp of %s: %s", key, exc)

    def index_lock(self, namespace: str, wait_s: float | None = None):
        """Held while one of ``namespace``'s FTS or scalar indexes is built: the namespace's
        write lock (:meth:`write_lock`), as around every other commit. An index build commits a
        table version; a write of another process committing meanwhile (a merge that rewrites a
        data file) then failed its commit, LanceDB tried it again, and each failed try left its
        rewritten data file behind, named by no version: the bytes of rows a later forget
        deleted, which no purge removes (the three-process forget race found a forgotten
        message's text in six such files). Per namespace, never ``lock``: a first build takes
        seconds on a large table, and other namespaces' calls must not wait for it."""
        return self.write_lock(namespace, wait_s)

    def drop_table(self, name: str) -> None:
        with self.lock:
            self._tables.pop(name, None)
            try:
                self.db.drop_table(name)
            except (ValueError, FileNotFoundError, RuntimeError):
                pass

    # -- meta, namespaces, migrations -------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        tbl = self.open_table("_meta")
        if tbl is None:
            return None
        rows = tbl.search().where(f"key = {sql_str(key)}").limit(1).to_list()
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        tbl = self.open_table("_meta", META)
        data = pa.Table.from_pylist([{"key": key, "value": value}], schema=META)
        retrying(lambda: tbl.merge_insert("key").when_matched_update_all()
                 .when_not_matched_insert_all().execute(data), "meta", table=tbl)

    def _migrate(self) -> None:
        current = int(self.get_meta("schema_version") or 0)
        if current > SCHEMA_VERSION:
            raise StorageError(f"the data in {self.uri} has schema version {current}, newer than this "
                               f"trimem ({SCHEMA_VERSION}); upgrade trimem")
        for version in range(current + 1, SCHEMA_VERSION + 1):
            step = MIGRATIONS.get(version)
            if step is not None:
                log.info("migrating store to schema version %d", version)
                step(self)
            self.set_meta("schema_version", str(version))

    def register_namespace(self, namespace: str) -> None:
        tbl = self.open_table("_namespaces", NAMESPACES)
        row = {"name": namespace, "key": namespace_key(namespace), "created_at": utcnow()}
        data = pa.Table.from_pylist([row], schema=NAMESPACES)
        retrying(lambda: tbl.merge_insert("name").when_not_matched_insert_all().execute(data),
                 "register namespace", table=tbl)

    def namespaces(self) -> list[str]:
        tbl = self.open_table("_namespaces")
        if tbl is None:
            return []
        # a set: a registry created before its name was a key may hold a name twice
        return sorted({r["name"] for r in tbl.search().select(["name"]).limit(None).to_list()})

    def space(self, namespace: str) -> Space:
        """The handle for one namespace (cached)."""
        from .space import Space  # lazy: cycle with storage.space

        with self.lock:
            sp = self._spaces.get(namespace)
            if sp is None:
                sp = self._spaces[namespace] = Space(self, namespace)
            return sp
