"""Locks shared by the processes on one memory folder: leases that a dead or stopped holder loses.

Several short-lived processes share a memory folder: ``trimem serve`` (one per host), the capture
hook and its drainer, imports. What must not interleave between them is done under a lock file
(``_locks/<namespace key>.lease``, ``_capture/drain.lease``). Each lock is a *lease* (filelock's
``SoftFileLease``): the holder's marker file names its pid, host and process start, and a thread
of the holder refreshes it every ``lease_s / 3``. A process that wants the lock

* takes it over at once when the holder's process is gone (killed, crashed);
* takes it over when the marker has not been refreshed for ``lease_s`` (a stopped or hung
  holder: its refresh thread stopped with it);
* removes an *empty* marker once it is ``lease_s`` old (seen unchanged that long, or its mtime
  that old): a holder killed between creating its marker and writing it leaves one, and
  filelock never takes an empty marker over (it reads it as an old filelock's live hold), so
  the folder would stay locked for good -- the kill -9 test met it (:meth:`LeaseLock._clear_empty`);
* gives up after ``wait_s`` with :class:`LockBusy`, whose message names the lock, its holder and
  what to do. No call waits longer than ``wait_s`` (``TRIMEM_LOCK_WAIT_S``, default 30 s, more
  than the lease of 10 s, ``TRIMEM_LOCK_LEASE_S``).

A lock path that is not a regular file (a folder, a FIFO, a link), or a lock folder that is not a
folder, is refused at once (:class:`LockUnusable`): opening a FIFO would block for ever. A
holder that was stopped, lost its lease and then resumed learns it before it writes again
(:meth:`Held.check` raises :class:`LockLost`): the callers check before each write that relies
on the lock.

Why filelock and not portalocker (both checked, 2026-12: filelock 4.3.2, portalocker 4.4.2; neither
declares a dependency or a console script, so neither adds a command to the user's PATH):
filelock, which trimem already had through ``tokenizers`` -> ``huggingface_hub``, ships the
lease itself: the heartbeat, the takeover of a dead holder by its pid and process start time and
of a silent one by age, and a resumed loser whose release leaves the new holder's marker alone.
portalocker locks with the operating system (``flock``, ``msvcrt.locking``; shared locks on
Windows need its optional pywin32): a stopped holder keeps such a lock for ever, so the lease
would have to be written by hand on top of it.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import StorageError

LEASE_S = 10.0   # a holder silent this long (stopped, hung) loses the lock
WAIT_S = 30.0    # the longest any call waits for a lock
POLL_S = 0.05
SLICE_S = 1.0    # a waiting call looks for an empty marker this often


class LockError(StorageError):
    """A lock could not be taken; the message says which and what to do."""


class LockBusy(LockError):
    """Another live process held the lock for the whole wait."""


class LockUnusable(LockError):
    """The lock path (or its folder) is not what it must be, or the settings disagree."""


class LockLost(LockError):
    """This process held the lock, was stopped or hung, and another process took it over."""


def _kind(st: os.stat_result) -> str:
    mode = st.st_mode
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISLNK, "a symbolic link"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a regular file"


def check_path(path: Path) -> None:
    """Refuse a lock path that is not a regular file, or whose folder is not a folder; make the
    folder (private) when it is missing."""
    folder = path.parent
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise LockUnusable(f"cannot create the lock folder {folder}: {exc}") from exc
        st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise LockUnusable(f"the lock folder {folder} is {_kind(st)}, not a folder: remove it "
                           "(trimem makes it again) and retry; nothing was written")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise LockUnusable(f"the lock file {path} is {_kind(st)}, not a regular file: remove it "
                           "(trimem makes it again) and retry; nothing was written")


def holder_pid(path: Path) -> int | None:
    """The pid the lock's marker names (None when free or unreadable). Reads the marker's text
    without blocking: the path was checked to be a regular file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            found = re.search(r"^pid=(\d+)$", fh.read(4096), re.M)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Held:
    """A lock this process holds (see :meth:`LeaseLock.hold`)."""

    def __init__(self, path: Path, lease, lease_s: float):
        self.path = path
        self._lease = lease
        self._lease_s = lease_s
        self._identity = _identity(path)

    def lost(self) -> bool:
        """Whether another process took the lock over (this one was silent for the lease)."""
        return (self._lease.compromise is not None or self._identity is None
                or _identity(self.path) != self._identity)

    def check(self) -> None:
        """Raise :class:`LockLost` when the lock was taken over: call before a write that
        relies on it."""
        if self.lost():
            raise LockLost(f"this process lost the lock {self.path}: it was stopped or did not "
                           f"respond for {self._lease_s:g} s and another process took the lock "
                           "over; nothing more was written: retry")

    def release(self) -> None:
        try:
            self._lease.release(force=True)
        except OSError:   # the marker went with a takeover; the new holder's stays
            pass


class LeaseLock:
    """One lock file shared by processes: one thread of this process at a time (re-entrant in
    that thread), and one process at a time. Get it from :func:`lease_lock`."""

    def __init__(self, path: Path, lease_s: float = LEASE_S, wait_s: float = WAIT_S):
        self.path = path
        self.lease_s = lease_s
        self.wait_s = wait_s
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._held: Held | None = None
        self._empty_seen: tuple[tuple[int, int, int], float] | None = None

    @contextmanager
    def hold(self, wait_s: float | None = None) -> Iterator[Held]:
        """Hold the lock (waiting at most ``wait_s``, default :attr:`wait_s`; 0 tries once)."""
        wait = self.wait_s if wait_s is None else wait_s
        end = time.monotonic() + wait
        got = (self._thread_lock.acquire(timeout=wait) if wait > 0
               else self._thread_lock.acquire(blocking=False))
        if not got:
            raise LockBusy(f"the lock {self.path} is held by another task of this process (for "
                           f"over {wait:g} s): retry in a moment")
        try:
            if self._depth == 0:
                self._held = self._take(max(0.0, end - time.monotonic()) if wait > 0 else 0.0)
            held = self._held
            assert held is not None
            self._depth += 1
            try:
                yield held
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._held = None
                    held.release()
        finally:
            self._thread_lock.release()

    def _take(self, wait: float) -> Held:
        from filelock import LeaseSettingsMismatch, SoftFileLease, Timeout  # lazy: filelock, not in a hook

        check_path(self.path)
        lease = SoftFileLease(str(self.path), lease_duration=self.lease_s, mode=0o600,
                              poll_interval=POLL_S)
        end = time.monotonic() + wait
        try:
            while True:
                self._clear_empty()
                left = end - time.monotonic()
                try:
                    if left > 0:
                        lease.acquire(timeout=min(SLICE_S, left))
                    else:
                        lease.acquire(blocking=False)
                    break
                except Timeout:
                    if left <= SLICE_S:
                        raise
        except Timeout:
            pid = holder_pid(self.path)
            who = f"process {pid}" if pid is not None else "another process"
            raise LockBusy(f"the memory folder is busy: {who} held the lock {self.path} for the "
                           f"whole {wait:g} s this call may wait; nothing was written. Retry in a "
                           "moment; if it stays busy, end that process (a lock whose holder died "
                           f"or stopped is taken over within {self.lease_s:g} s)") from None
        except LeaseSettingsMismatch as exc:
            raise LockUnusable(f"{exc}: give every trimem process on this memory folder the same "
                               "TRIMEM_LOCK_LEASE_S") from None
        except OSError as exc:
            check_path(self.path)   # raises the clearer error when the path is the cause
            raise LockError(f"cannot take the lock {self.path}: {exc}") from exc
        return Held(self.path, lease, self.lease_s)

    def _clear_empty(self) -> None:
        """Remove the marker when it is empty and ``lease_s`` old: seen unchanged (inode, mtime,
        ctime) for that long by this process, or its mtime that old (a fresh process -- a hook --
        need not wait a lease first). A live holder writes its marker right after creating it
        and refreshes it every ``lease_s / 3``. Written here, not taken from filelock: its
        takeover of a torn marker is private API. The marker is renamed aside and unlinked only
        when the aside file is the empty one judged; a marker a peer made in between is linked
        back (or, if a third made one, its holder learns the loss from :meth:`Held.check`)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode) or st.st_size:
            self._empty_seen = None
            return
        key, now = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns), time.monotonic()
        if self._empty_seen is None or self._empty_seen[0] != key:
            self._empty_seen = (key, now)
        if now - self._empty_seen[1] < self.lease_s and time.time() - st.st_mtime < self.lease_s:
            return
        aside = self.path.with_name(f"{self.path.name}.empty.{os.getpid()}.{secrets.token_hex(8)}")
        try:
            os.rename(self.path, aside)
        except OSError:
            return
        try:
            moved = os.lstat(aside)
            if (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino) or moved.st_size:
                try:
                    os.link(aside, self.path)
                except OSError:
                    pass
        finally:
            try:
                os.unlink(aside)
            except OSError:
                pass
        self._empty_seen = None


_LOCKS: dict[str, LeaseLock] = {}
_LOCKS_GUARD = threading.Lock()


def lease_lock(path: Path, lease_s: float = LEASE_S, wait_s: float = WAIT_S) -> LeaseLock:
    """The process-wide :class:`LeaseLock` of ``path``: two stores on one folder in one process
    share it, so their threads queue on it rather than on the marker (the latest settings
    given apply)."""
    key = os.path.abspath(path)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = LeaseLock(Path(key), lease_s, wait_s)
        lock.lease_s, lock.wait_s = lease_s, wait_s
        return lock
