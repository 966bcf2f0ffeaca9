"""The recall log's writer: records are appended off the response path, in batches.

Appending one recall record to LanceDB (a new fragment and a new table version) took ~10 ms of
every recall, longer than plain's whole ranking. So a recall hands its row to this writer and
answers; one daemon thread per namespace appends whatever has queued up in one ``add``. The
stored texts its trace is compacted against are read before the recall answers (so nothing it
names can change afterwards); the packing itself, pure, is left to the write (``logs.py``).

What keeps the log's contract:

* every reader of the log (``explain``, ``forget`` and its scrub, pruning, ``close``) calls
  :meth:`flush` first, which writes what is queued before it reads: in this process a record is
  never missed, and a forget never leaves behind a queued record of what it forgot;
* the first record of a process is written synchronously, and so is every record after a
  background write failed (a read-only or full memory folder): the recall that meets the failure
  reports it (``[not logged: ...]``) as before. The one record that cannot report is the batch
  whose background write failed: it is lost, with a warning in the server's log;
* records queued when the process is killed (``kill -9``) are lost; ``close`` (SIGTERM, stdin
  closed) flushes them;
* every write runs under ``guard`` (the namespace's write lock, shared with ``forget`` in every
  process), taken *before* the writer's own lock: a forget holding it may flush the queue
  itself, and the write checks that what a record names was not forgotten meanwhile.

The same writer appends ``remember``'s audit entries (``Log.audit(..., queued=True)``): one
commit fewer on every exchange an agent loop remembers. Those carry no guard (nothing scrubs
them) and their readers (``explain``'s history, the audit log) flush first as well.

A hand-written writer rather than a ``ThreadPoolExecutor``: the batching (one ``add`` for all
that queued while the last one ran) and the flush-by-the-reader are the point, and neither is a
pool's.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Callable

from .locks import LockBusy

log = logging.getLogger(__name__)
IDLE_EXIT_S = 10.0   # the thread ends after this long with nothing queued (a new record restarts it)
SYNC_WAIT_S = 0.5    # a synchronous record waits this long for the lock, then is queued instead


def _no_guard(wait_s: float | None) -> AbstractContextManager[object]:
    return nullcontext()


class RecallWriter:
    """Queue of rows for ``write(rows)``; see the module docstring."""

    def __init__(self, write: Callable[[list[dict]], None], name: str,
                 guard: Callable[[float | None], AbstractContextManager[object]] = _no_guard,
                 what: str = "recall record(s)", lost: str = "explain will not find them"):
        self._write = write
        self._name = name
        self._what, self._lost = what, lost   # the warnings' words
        self._guard = guard
        self._cv = threading.Condition()
        self._io = threading.RLock()     # one batch at a time (a flush waits for the running one)
        self._pending: list[dict] = []
        self._claimed: list[dict] = []   # taken from the queue by a flush, not written yet
        self._thread: threading.Thread | None = None
        self._sync = True                # until a synchronous write succeeds, and after a failure
        self._closed = False

    def submit(self, row: dict) -> None:
        """Write ``row`` now (synchronous mode: raises what the write raises) or queue it."""
        with self._cv:
            sync = self._sync or self._closed
        if sync:
            try:
                with self._guard(SYNC_WAIT_S), self._io:
                    self._write([row])
            except LockBusy:   # a recall does not wait for another process's write: queue it
                sync = False
            else:
                with self._cv:
                    self._sync = False
                return
        with self._cv:
            self._pending.append(row)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name=self._name)
                self._thread.start()
            self._cv.notify()

    def flush(self, wait_s: float | None = None) -> None:
        """Write everything queued so far, after a batch being written. Called inside the
        writer's own write (its pruning reads the log), it re-enters and writes what queued since.
        What it claims waits in ``_claimed`` for the guard; whoever holds the guard first writes
        all that is claimed (a forget holding the lock writes the writer thread's claim itself,
        rather than waiting for that thread, which waits for the lock). Raises what taking
        ``guard`` raises (a lock another process holds for longer than ``wait_s``, default the
        lock's own bound); the records stay queued."""
        with self._cv:
            self._claimed += self._pending
            self._pending = []
            claimed = bool(self._claimed)
        if not claimed:
            with self._io:   # only waits for a batch being written
                return
        with self._guard(wait_s), self._io:
            with self._cv:
                rows, self._claimed = self._claimed, []
            if rows:
                self._write_batch(rows)

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread (it writes what is queued on its way out), then write anything left
        (before the process exits); records submitted after this are written synchronously."""
        end = time.monotonic() + timeout
        with self._cv:
            self._closed = True
            thread = self._thread
            self._cv.notify()
        if thread is not None:
            thread.join(timeout)
        try:
            self.flush(max(0.1, end - time.monotonic()))
        except Exception as exc:   # noqa: BLE001 - exiting: say what is lost
            log.warning("%d %s not logged (%s): %s", self.queued, self._what, self._lost, exc)

    @property
    def queued(self) -> int:
        with self._cv:
            return len(self._pending) + len(self._claimed)

    def _loop(self) -> None:
        while True:
            with self._cv:
                if not (self._pending or self._claimed) and not self._closed:
                    self._cv.wait(IDLE_EXIT_S)
                if not (self._pending or self._claimed):
                    self._thread = None
                    return
            try:
                self.flush()
            except Exception as exc:   # noqa: BLE001 - the guard (a lock) could not be taken
                log.warning("%d %s wait to be logged: %s", self.queued, self._what, exc)
                with self._cv:   # kept queued; tried again after a pause
                    self._cv.wait(1.0)

    def _write_batch(self, rows: list[dict]) -> None:
        try:
            self._write(rows)
        except Exception as exc:   # noqa: BLE001 - the recall already answered; say so and go sync
            log.warning("%d %s not logged (%s): %s", len(rows), self._what, self._lost, exc)
            with self._cv:
                self._sync = True
