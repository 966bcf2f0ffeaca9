"""One namespace's curation, one process at a time: a turn on a lease, and whether another process
curated the namespace since this one last did.

Curation reads what a namespace's derived tables hold and writes on that basis: the wiki's
groups, pages and trajectory index, workspace's threads, hybrid's consolidation span every
session of the namespace. Two processes on one memory folder (two hosts' servers, a server and
the capture hook's drainer, an import) that curated sessions of one namespace at the same time
each planned their writes from tables the other was rewriting: in three runs of eight sessions
curated by two processes at once, the wiki's trajectories, groups and pages and workspace's edges
came out unlike what one process derives in the order the steps began (115-137 of ~209 pages
differed; 38 trajectories against 39-40). Each commit was under the namespace's write lock
(``Store.write_lock``); the read-modify-write of a session's step was not.

So a session's curation (and a consolidation, and the host model's curation) holds the
namespace's *curation turn*: for a store in a local folder, a lease on
``_locks/<namespace key>.curate.lease`` (``locks.py``: a dead or stopped holder loses it), apart
from the write lock, which commits of remember, forget and the recall log take for milliseconds.
A turn also tells its holder whether another process curated the namespace since this process's
last turn (:attr:`Turn.moved`): each turn writes a new token to ``_locks/<key>.curated``, and a
holder that finds a token other than its own drops its caches of the namespace's tables and
reads them afresh (``Runtime.curating``). Without that, what this process read before
(LanceDB's handles look for new versions once a second; the strategies' caches recheck row counts,
which a rewrite in place does not move) could be older than the other's writes.

Turns are fair between processes that each have sessions waiting (``fair``, the worker's
tries): a process that finds the turn taken leaves its claim in ``_locks/<key>.curate.next``,
and a process about to take the turn while another's claim is fresh (``CLAIM_FRESH_S``) lets it
go first. Without that a process curating many sessions back to back (an import, a captured
transcript) took the turn again the moment it let it go, and the other's sessions (a live
session's) waited on disk until it was done.

A store on object storage has no lock files: there the turn is a lease on the namespace's row
of the store's ``_leases`` table (``bucket_lease.py``: taken by a conditional write, renewed
while held), the row carries the token, and a claim on the next turn is a row of that table.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from .bucket_lease import BucketHeld, BucketLeases
from .locks import Held, LockBusy, lease_lock
from .names import namespace_key, read_token, write_token

log = logging.getLogger(__name__)
T = TypeVar("T")


def _best_effort(what: str, fn: Callable[[], T]) -> T | None:
    """``fn()``, or None with a warning when it fails: a claim only orders the turns, and a
    curation must not fail (nor a turn taken be left held) because one could not be read or
    written (a full disk, a bucket's request failing)."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - see the docstring
        log.warning("%s failed: %s", what, exc)
        return None


# How long a process's claim on the next turn stands: a few of the worker's looks at a busy
# turn (every 0.2 s, ``tools/curation.BUSY_RETRY_S``), each of which renews it; a claim left by
# a process that stopped waiting holds the others back at most this long.
CLAIM_FRESH_S = 2.0


@dataclass(frozen=True)
class Turn:
    """A curation turn this process holds."""

    held: Held | BucketHeld | None   # the lease (a lock file, or a row on a bucket)
    moved: bool         # another process curated the namespace since this one's last turn

    def check(self) -> None:
        """Raise ``locks.LockLost`` when another process took the turn over (this one was
        stopped or hung past the lease): call before a step that writes."""
        if self.held is not None:
            self.held.check()


class CurationTurns:
    """The curation turns of one store's namespaces (see the module docstring)."""

    def __init__(self, uri: str, lease_s: float, wait_s: float,
                 open_table: Callable[[str, Any], Any] | None = None):
        self.uri = uri
        self.lease_s = lease_s
        self.wait_s = wait_s
        self._local = "://" not in uri
        self._token = secrets.token_hex(8)    # this process's, in every token it writes
        self._count = itertools.count(1)
        self._mine: dict[str, str] = {}       # namespace key -> the last token this process saw to
        self._guard = threading.Lock()
        self._thread_locks: dict[str, threading.RLock] = {}   # object-store homes only
        self._bucket_held: dict[str, BucketHeld] = {}         # key -> the lease held (bucket)
        self._here: dict[str, int] = {}   # key -> turns this process's threads hold (nested too)
        self._leases = (BucketLeases(open_table, lease_s)
                        if not self._local and open_table is not None else None)

    @contextmanager
    def _bucket_turn(self, namespace: str, key: str, wait_s: float | None, writes: bool,
                     fair: bool) -> Iterator[Turn]:
        """The turn on an object-store home: this process's thread lock, then (outermost only)
        the namespace's row lease (``bucket_lease.py``), whose row carries the token; the
        claims of ``fair`` tries are rows of that table too."""
        wait = self.wait_s if wait_s is None else wait_s
        end = time.monotonic() + wait
        with self._guard:
            tlock = self._thread_locks.setdefault(key, threading.RLock())
        got = tlock.acquire(timeout=wait) if wait > 0 else tlock.acquire(blocking=False)
        if not got:
            raise LockBusy(f"namespace {namespace!r} is being curated by another task of "
                           "this process: retry in a moment")
        try:
            nested = self._bucket_held.get(key)
            if nested is not None or self._leases is None:
                yield Turn(nested, False)
                return
            leases, mine = self._leases, f"{self._token}.{next(self._count)}"
            claim = _best_effort("reading the claims on the next turn",
                                 lambda: leases.claimed(key)) if fair else None
            if claim not in (None, self._token):
                raise LockBusy(f"namespace {namespace!r}: another process's turn is next")
            try:
                held, found = leases.take(key, mine, max(0.0, end - time.monotonic()),
                                          lambda found: mine if writes else None)
            except LockBusy:
                if fair:
                    _best_effort("claiming the next turn",
                                 lambda: leases.claim(key, self._token, CLAIM_FRESH_S))
                raise
            self._bucket_held[key] = held
            try:
                if claim == self._token:
                    _best_effort("dropping this process's claim",
                                 lambda: leases.unclaim(key, self._token))
                with self._guard:
                    moved = found != self._mine.get(key)
                    if writes or moved:
                        self._mine[key] = mine if writes else found
                yield Turn(held, moved)
            finally:
                del self._bucket_held[key]
                held.release()
        finally:
            tlock.release()

    def _left(self, key: str) -> None:
        with self._guard:
            self._here[key] -= 1

    def _paths(self, key: str) -> tuple[Path, Path, Path]:
        folder = Path(self.uri) / "_locks"
        return (folder / f"{key}.curate.lease", folder / f"{key}.curated",
                folder / f"{key}.curate.next")

    def _claimed(self, path: Path) -> str | None:
        """The process token of a fresh claim on the next turn (None: no claim, or stale)."""
        who, _, at = read_token(path).partition(" ")
        try:
            fresh = 0 <= time.time() - float(at) < CLAIM_FRESH_S
        except ValueError:
            return None
        return who if who and fresh else None

    def _claim(self, path: Path) -> None:
        """Claim the next turn, or renew this process's claim; another's fresh claim stands (two
        processes overwriting each other's claims would each let the other go first)."""
        if self._claimed(path) in (None, self._token):
            write_token(path, f"{self._token} {time.time():.3f}")

    @contextmanager
    def turn(self, namespace: str, wait_s: float | None = None, writes: bool = True,
             fair: bool = False) -> Iterator[Turn]:
        """Hold ``namespace``'s curation turn, waiting at most ``wait_s`` (default the store's
        lock wait; 0 tries once), else ``locks.LockBusy``. Re-entrant in a thread. ``writes``
        False (a dry run): the turn writes no token, as it changes nothing. ``fair`` (one try,
        from a queue that will try again): busy while another process's claim is fresh, and a
        claim of this process's left when the turn is taken (module docstring)."""
        key = namespace_key(namespace)
        if not self._local:
            with self._bucket_turn(namespace, key, wait_s, writes, fair) as turn:
                yield turn
            return
        lease_path, stamp_path, next_path = self._paths(key)
        lock = lease_lock(lease_path, self.lease_s, self.wait_s)
        with ExitStack() as stack:
            try:
                if fair and self._claimed(next_path) not in (None, self._token):
                    raise LockBusy(f"namespace {namespace!r}: another process's turn is next")
                held = stack.enter_context(lock.hold(wait_s))
            except LockBusy:
                if fair and not self._here.get(key):   # held by another process, not a thread here
                    _best_effort("claiming the next turn", lambda: self._claim(next_path))
                raise
            if fair and self._claimed(next_path) == self._token:
                _best_effort("dropping this process's claim",
                             lambda: next_path.unlink(missing_ok=True))
            with self._guard:
                self._here[key] = self._here.get(key, 0) + 1
            stack.callback(self._left, key)
            with self._guard:
                found = read_token(stamp_path)
                moved = found != self._mine.get(key)
                if writes:
                    mine = f"{self._token}.{next(self._count)}"
                    # written now, not at the end: a holder that loses the turn half-way (stopped
                    # past the lease) has told whoever takes it over that the tables moved
                    write_token(stamp_path, mine)
                    self._mine[key] = mine
                elif moved:   # read afresh now (Runtime.curating): the token found is seen
                    self._mine[key] = found
            yield Turn(held, moved)

