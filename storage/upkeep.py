"""Table upkeep for a namespace: compaction, and the vector index, off the request path.

Every commit adds a fragment and a version; a table of thousands of small fragments makes every
read and merge slower, and rows added after an index was built are searched without it. So:

* every ``optimize_every_commits`` commits or ``optimize_every_rows`` rows, a table is compacted
  (and its new rows folded into its indexes) in a background thread, one run per table at a time;
* ``optimize_idle_s`` after the last write, whatever is still uncompacted is compacted too, so the
  tail of a burst of writes does not stay unindexed until the next burst (at 10k rows, 1,038
  trailing unindexed rows made recall p50 61.6 ms instead of 22.5 ms);
* a process's first idle moment (or a flush) also compacts the tables an earlier process left
  with small fragments or unindexed rows (it stopped before its own idle compaction), and
  cleans those it left with superseded versions older than ``keep_versions`` (it stopped before
  its own cleanup);
* once a vector table reaches ``vector_index_min_rows``, and again each time it doubles, its HNSW
  index is (re)built in a child process (see :mod:`.index_build` for why not in a thread);
* each compaction, and one more run ``keep_versions`` after the last one (again after that while
  a run had to keep younger versions), deletes the files that
  only versions made more than ``keep_versions`` ago use (LanceDB's default keeps them seven
  days: a recall-heavy store held 16x its live data in them). Readers look for a newer version
  every second (``Store``). The one reader that can still lose a file is another process's
  query in flight on a version made long ago and superseded just before a compaction: it
  fails with "not found" and ``recall`` answers again on fresh handles.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

from .core import SpaceCore, has_vectors, model_tag
from .db import retrying
from .errors import StorageError, purged
from .lance import quiet_purge_warning
from .locks import LockBusy
from .purge import scrub

log = logging.getLogger(__name__)
UPKEEP_LOCK_WAIT_S = 1.0   # how long a background compaction waits for the namespace's lock


class Upkeep:
    """What keeps one namespace's tables fast (``Space.upkeep``): compaction, version cleanup
    and vector indexes, in the background after writes."""

    keep_versions = timedelta(seconds=60)   # how long a superseded version stays readable

    def __init__(self, core: SpaceCore):
        self.core = core
        self._commits: dict[str, tuple[int, int]] = {}   # kind -> (commits, rows) since upkeep
        self._optimizing: set[str] = set()
        self._upkeep_lock = threading.Lock()
        self._maint_lock = threading.Lock()      # one compaction (or purge) at a time
        self._index_rows: dict[str, int] = {}    # kind -> rows its vector index covered when built
        self._index_tried: dict[str, int] = {}   # kind -> rows at the last failed build
        self._index_jobs: dict[str, threading.Thread] = {}
        self._prune_at: dict[str, float] = {}    # kind -> when its last compaction's leftovers go
        self._idle_thread: threading.Thread | None = None
        self._last_write = 0.0
        self._closed = False
        # tables an earlier process left uncompacted or part-indexed (it stopped before its idle
        # compaction): looked for once, at this process's first idle moment (``_left_unsettled``)
        self._settle_existing = True
        self._settled_names: dict[str, str] = {}   # kind -> table name, for those found so
        self._wake = threading.Event()           # set on close: the idle thread exits at once

    # -- after every write --------------------------------------------------------------------
    def after_write(self, kind: str, n_rows: int = 0) -> None:
        with self._upkeep_lock:
            commits, rows = self._commits.get(kind, (0, 0))
            commits, rows = commits + 1, rows + n_rows
            due = ((commits >= self.core.store.optimize_every_commits
                    or rows >= self.core.store.optimize_every_rows)
                   and not self._busy(kind) and not self._closed)
            self._commits[kind] = (0, 0) if due else (commits, rows)
            if due:
                self._optimizing.add(kind)
            self._last_write = time.monotonic()
            idle = self._new_idle_thread()
        if due:
            threading.Thread(target=self._optimize_now, args=(kind,), name="trimem-optimize",
                             daemon=True).start()
        if idle is not None:
            idle.start()
        if has_vectors(kind) and n_rows:
            tbl = self.core.table(kind)
            n = tbl.count_rows() if tbl is not None else 0
            if n >= self.core.store.vector_index_min_rows and self._index_due(tbl, kind, n):
                with self._upkeep_lock:
                    job = self._index_jobs.get(kind)
                    if (job is None or not job.is_alive()) and not self._closed:
                        job = self._index_jobs[kind] = threading.Thread(
                            target=self.build_vector_index, args=(kind, True), daemon=True,
                            name="trimem-vector-index")
                        job.start()

    def _new_idle_thread(self) -> threading.Thread | None:
        """The idle thread to start, when none runs (call with ``_upkeep_lock`` held)."""
        if self._idle_thread is not None or self._closed:
            return None
        self._idle_thread = threading.Thread(target=self._idle_loop, daemon=True,
                                             name="trimem-idle-upkeep")
        return self._idle_thread

    def _busy(self, kind: str) -> bool:
        job = self._index_jobs.get(kind)
        return kind in self._optimizing or (job is not None and job.is_alive())

    def _index_due(self, tbl, kind: str, n: int) -> bool:
        """No vector index yet, or the table has doubled since it was built: rows added after a
        build are only appended to it as delta segments, and a 10k-row index stretched to 100k
        rows made the vector lookup ~8x slower. Rebuilding at each doubling keeps the total
        build work within twice one build of the final size."""
        tried = self._index_tried.get(kind)
        if tried is not None and n < 2 * tried:
            return False   # the last build failed (logged); try again when the table doubles
        if not self.has_vector_index(tbl):
            return True
        built = self._index_rows.get(kind)
        if built is None:   # first look in this process: take the index as it stands
            built = self._index_rows[kind] = n
        return n >= 2 * built

    def _idle_loop(self) -> None:
        """Compact what is left uncompacted once writes pause for ``optimize_idle_s``; delete
        the last compaction's leftovers ``keep_versions`` after it."""
        delay = self.core.store.optimize_idle_s
        while True:
            with self._upkeep_lock:
                turn = self._idle_turn(delay)
            if turn is None:
                return
            kinds, prune, check, sleep = turn
            named: dict[str, str] = {}
            if check:
                named = self._claim_unsettled(kinds)
                if not kinds and not named and not prune:
                    continue
            for k in kinds:
                self._optimize_now(k)
            for k, name in named.items():
                self._settled_names[k] = name   # its version cleanup opens it by this name too
                self._optimize_now(k, name=name)
            for k in set(prune) - set(kinds):
                self._optimize_now(k, again=False)
            if not kinds and not prune and not named:
                self._wake.wait(sleep)
                if not self._closed:
                    self._wake.clear()   # a flush woke us: run what is pending on the next turn

    def _idle_turn(self, delay: float) -> tuple[list[str], list[str], bool, float] | None:
        """One turn of the idle loop (call with ``_upkeep_lock`` held): the kinds to compact
        and the kinds whose leftovers to delete (both marked running), whether to look for what
        an earlier process left (``_left_unsettled``), and how long to sleep if nothing runs.
        None when closed, or idle with nothing left to do or wait for: the thread ends."""
        now = time.monotonic()
        wait = self._last_write + delay - now
        kinds, prune = self._idle_due(now, wait)
        pending = any(c for c, _ in self._commits.values())
        running = bool(self._optimizing)   # a compaction that will set a prune time
        check = wait <= 0 and self._settle_existing and not self._closed
        if self._closed or (wait <= 0 and not (pending or running or self._prune_at or check)):
            self._idle_thread = None
            return None
        for k in kinds:
            self._commits[k] = (0, 0)
        for k in kinds + prune:
            self._optimizing.add(k)
            self._prune_at.pop(k, None)
        sleep = wait if wait > 0 else 0.2 if pending else 0.5 if running else float("inf")
        sleep = max(0.2, min([sleep, *(at - now for at in self._prune_at.values())]))
        return kinds, prune, check, sleep

    def _idle_due(self, now: float, wait: float) -> tuple[list[str], list[str]]:
        """The kinds not busy that are due for their idle compaction (none while ``wait`` for
        writes to pause is left), and those due for their last compaction's cleanup."""
        if self._closed:
            return [], []
        kinds = [] if wait > 0 else [
            k for k, (c, _) in self._commits.items() if c and not self._busy(k)]
        prune = [k for k, at in self._prune_at.items() if at <= now and not self._busy(k)]
        return kinds, prune

    def _claim_unsettled(self, kinds: list[str]) -> dict[str, str]:
        """The tables an earlier process left unsettled (kind -> name), but for ``kinds`` (this
        turn compacts them anyway) and those busy, marked running; looked for once."""
        named = {k: n for k, n in self._left_unsettled().items() if k not in kinds}
        with self._upkeep_lock:
            named = {k: n for k, n in named.items() if not self._busy(k) and not self._closed}
            self._optimizing.update(named)
            self._settle_existing = False   # a flush waits for these from here on
        return named

    def _left_unsettled(self) -> dict[str, str]:
        """The kinds (and table names) of this namespace's tables, current model, with more than
        one small fragment, rows outside an index or stale superseded versions: an earlier
        process stopped before compacting them (or before deleting the versions its compaction
        superseded), and this one's counters start at zero, so nothing else would. A recall
        on them pays for it: on a LoCoMo conversation left so (629 turns in 29 fragments, the
        full-text index covering none of them) a BM25 search took 15-19 ms and auto p50 was
        121 ms; compacted, 103 ms, with the same contexts."""
        out: dict[str, str] = {}
        prefix = f"ns_{self.core.key}__"
        try:
            names = self.core.store.table_names()
        except Exception as exc:  # noqa: BLE001 - upkeep is an optimisation: log, go on
            log.warning("listing the tables of %r for upkeep failed: %s", self.core.namespace, exc)
            return out
        for name in names:
            suffix = name[len(prefix):]
            kind, _, tag = suffix.partition("__")
            if not name.startswith(prefix) or (tag and (
                    self.core.model is None or self.core.dim is None
                    or tag != model_tag(self.core.model, self.core.dim))):
                continue   # another namespace's, or another model's (no recall reads it)
            if self._unsettled(name):
                out[kind] = name
        return out

    def _unsettled(self, name: str, attempts: int = 3) -> bool:
        """Whether table ``name`` needs upkeep (:meth:`_left_unsettled`). Each table is checked
        on its own: another process's version cleanup can delete a manifest while this one
        lists the versions ("Not found"), which a fresh handle reads past; a table that still
        fails is logged and left out, never the others with it."""
        for attempt in range(attempts):
            try:
                tbl = self.core.store.open_table(name)
                if tbl is None:
                    return False
                frags = tbl.stats()["fragment_stats"]
                return frags["num_small_fragments"] > 1 or any(
                    (getattr(i, "num_unindexed_rows", 0) or 0) > 0
                    for i in tbl.list_indices()) or self._stale_versions(tbl)
            except Exception as exc:  # noqa: BLE001 - upkeep is an optimisation: log, go on
                if purged(exc) and attempt < attempts - 1:
                    continue
                log.warning("checking %s of %r for upkeep failed: %s", name, self.core.namespace, exc)
        return False

    def _optimize_now(self, kind: str, again: bool = True, name: str | None = None) -> None:
        """Optimize ``kind`` and come back ``keep_versions`` later to delete the versions this
        run superseded (``again``); without ``again``, only that deletion."""
        tbl = None
        try:
            name = name or self._settled_names.get(kind)
            tbl = self.core.store.open_table(name) if name else self.core.table(kind)
            if tbl is not None:
                # under the namespace's write lock like every commit (``SpaceCore.writing``); a
                # background run does not wait for it long: busy, it runs at the next turn
                with self.core.store.write_lock(self.core.namespace, UPKEEP_LOCK_WAIT_S), self._maint_lock:
                    self._optimize(tbl)
                # come back for what this run had to keep (versions younger than
                # ``keep_versions``; a flush runs the cleanup early): until then their files stay
                if again or self._older_versions(tbl):
                    with self._upkeep_lock:
                        self._prune_at[kind] = (time.monotonic()
                                                + self.keep_versions.total_seconds() + 1)
        except LockBusy:   # a forget or a long write holds the namespace: try again later
            with self._upkeep_lock:
                commits, rows = self._commits.get(kind, (0, 0))
                self._commits[kind] = (max(commits, 1), rows)
        except Exception as exc:  # upkeep is an optimisation: log it, never fail a write
            if purged(exc) and self._dropped(name, tbl):
                # a model switch (here or in another process) dropped the table mid-run
                log.debug("%s of %r was dropped while it was optimized", kind, self.core.namespace)
            else:
                log.warning("optimizing %s of %r failed: %s", kind, self.core.namespace, exc)
        finally:
            with self._upkeep_lock:
                self._optimizing.discard(kind)

    def _dropped(self, name: str | None, tbl) -> bool:
        """Whether the table an optimize failed on is no longer in the store."""
        name = name or getattr(tbl, "name", None)
        try:
            return bool(name) and name not in self.core.store.table_names()
        except Exception:  # noqa: BLE001 - cannot tell: the caller logs the failure
            return False

    def _optimize(self, tbl, purge: bool = False) -> None:
        """Compact ``tbl``, fold its new rows into its indexes and delete the files that only
        versions made more than ``keep_versions`` ago use (``purge``: every old version). The
        newest version is always kept; files no version names yet (a concurrent writer's, not
        committed) are left alone: ``delete_unverified`` stays False."""
        keep = timedelta(0) if purge else self.keep_versions
        if not keep:   # LanceDB warns at 0: every old version goes, as meant
            quiet_purge_warning()
        retrying(lambda: tbl.optimize(cleanup_older_than=keep), "optimize", table=tbl)

    def wait(self, timeout: float = 60.0, flush: bool = False) -> bool:
        """Wait for running compactions and index builds; False if still busy at ``timeout``.
        ``flush`` also runs the pending idle compaction and the pending version cleanup now and
        waits for them (tests, benchmarks and anything that wants the files on disk to stop
        changing; the cleanup then keeps versions younger than ``keep_versions``)."""
        end = time.monotonic() + timeout
        forced: set[str] = set()   # cleanups this flush ran early (one that comes back waits)
        if flush:   # the pending compaction and the pending version cleanup both run now
            with self._upkeep_lock:
                self._last_write = float("-inf")
                idle = self._new_idle_thread() if self._settle_existing else None
            if idle is not None:
                idle.start()
            self._wake.set()
        while True:
            with self._upkeep_lock:
                if flush:   # a compaction the flush ran schedules its cleanup: run that now too
                    for k in set(self._prune_at) - forced:
                        self._prune_at[k] = float("-inf")
                        forced.add(k)
                    self._last_write = float("-inf")
                now = time.monotonic()
                busy = bool(self._optimizing) or any(j.is_alive() for j in self._index_jobs.values())
                busy = busy or (flush and not self._closed
                                and (any(c for c, _ in self._commits.values())
                                     or any(at <= now for at in self._prune_at.values())
                                     or self._settle_existing))
            if not busy:
                return True
            if time.monotonic() >= end:
                log.warning("upkeep of %r still running after %.0f s", self.core.namespace, timeout)
                return False
            if flush:
                self._wake.set()   # the idle thread may be asleep on a wait computed before
            time.sleep(0.05)

    def close(self, timeout: float = 60.0) -> bool:
        """Start nothing new and wait for what runs (before the process exits)."""
        with self._upkeep_lock:
            self._closed = True
            idle = self._idle_thread
        self._wake.set()
        end = time.monotonic() + timeout
        if idle is not None:
            idle.join(timeout)
        return self.wait(max(0.0, end - time.monotonic()))

    # -- the vector index ---------------------------------------------------------------------
    @staticmethod
    def has_vector_index(tbl) -> bool:
        return any(ix.columns == ["vector"] for ix in tbl.list_indices())

    def build_vector_index(self, kind: str = "sources", rebuild: bool = False) -> bool:
        """(Re)build the HNSW index (scalar-quantised, cosine) of ``kind`` in a child process and
        wait for it; searches stay flat (or on the old index) until it lands."""
        tbl = self.core.table(kind)
        if tbl is None or (self.has_vector_index(tbl) and not rebuild):
            return False
        n = tbl.count_rows()
        cmd = [sys.executable, "-m", f"{__package__}.index_build", self.core.store.uri, tbl.name]
        started = time.monotonic()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        except (OSError, subprocess.SubprocessError) as exc:
            done = subprocess.CompletedProcess(cmd, -1, "", str(exc))
        if done.returncode != 0:   # an index is an optimisation: never fail a write for it
            self._index_tried[kind] = n
            log.warning("building the vector index of %s failed: %s", tbl.name,
                        (done.stderr or "").strip()[-2000:])
            return False
        self._index_rows[kind] = int(done.stdout.split()[-1]) if done.stdout.split() else n
        self._index_tried.pop(kind, None)
        tbl.checkout_latest()   # use it now, not at the next read-consistency check
        log.info("built the vector index of %s (%d rows) in %.1f s", tbl.name,
                 self._index_rows[kind], time.monotonic() - started)
        return True

    # -- compaction on demand -------------------------------------------------------------------
    def optimize(self, purge: bool = False) -> list[str]:
        """Compact every table and fold unindexed rows in. ``purge`` also rewrites the data
        files of each table that had rows deleted or replaced (``SpaceCore.rewrote``), so none
        keeps a deleted row's bytes (``purge.scrub``), and deletes old versions at once: what
        makes ``forget`` a hard delete on disk. It then checks that no table still lists a
        version from before its purge: :class:`StorageError` if one does after a second try
        (the forget then does not report done)."""
        done = []
        if purge:   # a build in progress reads old versions: let it finish (a compaction in
            for job in list(self._index_jobs.values()):   # the background waits for the lock)
                job.join(60)
        rewritten = self.core.take_rewritten() if purge else set()
        prefix = f"ns_{self.core.key}__"
        left: list[str] = []
        for name in self.core.store.table_names():
            if not name.startswith(prefix):
                continue
            tbl = self.core.store.open_table(name)
            # Purge: compact (deleted rows are dropped from rewritten files), then delete every
            # file only older versions use. Files no version names yet (a concurrent writer's,
            # not committed) are left alone: delete_unverified stays False.
            with self.core.writing(), self._maint_lock:
                if name in rewritten:
                    scrub(tbl)
                else:
                    self._optimize(tbl, purge)
                if purge and self._older_versions(tbl):
                    self._optimize(tbl, purge)   # a commit raced the cleanup: once more
                    if self._older_versions(tbl):
                        left.append(name)
            done.append(name[len(prefix):])
        if left:
            raise StorageError(f"old versions of {sorted(left)} could not be deleted (another "
                               "process keeps writing them); the forgotten text may still be on "
                               "disk: call forget again")
        return done

    def _stale_versions(self, tbl) -> bool:
        """Whether ``tbl`` still lists a superseded version made more than ``keep_versions``
        ago: its files (the rows as they were before a compaction, or before they were replaced
        or deleted) stay on disk until a cleanup runs. A process that compacted and exited
        before its own cleanup left them (a store at rest held 5x its live rows so)."""
        cutoff = datetime.now(timezone.utc) - self.keep_versions
        versions = retrying(tbl.list_versions, "list versions")
        latest = max(v["version"] for v in versions)
        return any(v["version"] < latest and _aware(v["timestamp"]) < cutoff for v in versions)

    @staticmethod
    def _older_versions(tbl) -> int:
        """How many versions older than the handle's own (just compacted) the table lists."""
        now = tbl.version
        return sum(1 for v in retrying(tbl.list_versions, "list versions") if v["version"] < now)

    def optimize_table(self, suffix: str) -> None:
        """Optimize one table, named as in ``Space.stats`` (e.g. ``audit``)."""
        tbl = self.core.store.open_table(f"ns_{self.core.key}__{suffix}")
        if tbl is not None:
            with self.core.writing(), self._maint_lock:
                self._optimize(tbl)


def _aware(ts: datetime) -> datetime:
    """LanceDB lists version times as naive local times."""
    return ts.astimezone(timezone.utc) if ts.tzinfo is None else ts
