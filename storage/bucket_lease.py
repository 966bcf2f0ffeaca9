"""A lease on a row of a LanceDB table: one holder at a time across processes and machines, for a
store in object storage, where there are no lock files (``locks.py`` is for local folders).

The row of a key holds its holder (a new token at each take), when the lease ends (epoch
milliseconds) and a token the holder may set (``CurationTurns``: who curated last). Taking the
lease is one conditional ``merge_insert``: "update only if the row still holds the holder and
end time this process read, and that lease is over or released" (or "insert if there is no
row"). LanceDB evaluates the condition again on the newest version when two commits conflict
(what a ``remember`` relies on to number a session's messages, ``sessions.claim``; the commit
itself is safe where the store's conditional puts are, docs/object-storage.md), so of two
processes taking one lease at once, one wins. A holder renews its lease every third of it in a
thread; a renewal or the release writes only while the row still names it as holder. A holder
stopped past its lease loses it to the next taker, and learns that from :meth:`BucketHeld.check`
(its own end time passed, or a renewal found another holder).

Expiry is judged by each machine's clock: machines sharing a bucket need clocks that agree within
a small part of the lease (10 s by default), as NTP keeps them.

Every take, renewal and release is a table version: each process compacts the table (and deletes
versions over a minute old) every ``COMPACT_EVERY`` of its own writes, in the background.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Any, Callable

import pyarrow as pa

from .locks import LockBusy, LockLost

log = logging.getLogger(__name__)

LEASES = pa.schema([
    pa.field("key", pa.string(), nullable=False),
    pa.field("holder", pa.string()),       # "" when released
    pa.field("expires_ms", pa.int64()),    # epoch milliseconds; 0 when released
    pa.field("token", pa.string()),        # the holder's to set (kept across holders)
])
POLL_S = 0.1          # how often a taker that waits looks again
COMPACT_EVERY = 64    # this process's writes between compactions of the table


def _now_ms() -> int:
    return int(time.time() * 1000)


class BucketHeld:
    """A lease this process holds on a key (see :class:`BucketLeases`)."""

    def __init__(self, leases: BucketLeases, key: str, holder: str, expires_ms: int, token: str):
        self.leases, self.key, self.holder, self.token = leases, key, holder, token
        self.expires_ms = expires_ms
        self._lost = False
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True,
                                         name="trimem-bucket-lease")
        self._renewer.start()

    def lost(self) -> bool:
        return self._lost or _now_ms() >= self.expires_ms

    def check(self) -> None:
        """Raise :class:`locks.LockLost` when the lease ran out (this process was stopped or
        could not renew it) or another process holds it now."""
        if self.lost():
            raise LockLost(f"this process lost its lease on {self.key!r} in the store's "
                           f"{self.leases.name} table (not renewed within "
                           f"{self.leases.lease_s:g} s); nothing more was written: retry")

    def _renew_loop(self) -> None:
        every = self.leases.lease_s / 3
        while not self._stop.wait(every):
            try:
                ends = _now_ms() + int(self.leases.lease_s * 1000)
                if self.leases.write(self.key, self.holder, ends, self.token, mine=self.holder):
                    self.expires_ms = ends
                else:
                    self._lost = True
                    return
            except Exception as exc:  # noqa: BLE001 - the lease runs out; check() says so
                log.warning("renewing the lease on %r failed: %s", self.key, exc)

    def release(self) -> None:
        self._stop.set()
        self._renewer.join()
        if self._lost:
            return
        try:
            self.leases.write(self.key, "", 0, self.token, mine=self.holder)
        except Exception as exc:  # noqa: BLE001 - it runs out by itself
            log.warning("releasing the lease on %r failed (it ends in %.1f s): %s", self.key,
                        max(0.0, (self.expires_ms - _now_ms()) / 1000), exc)


class BucketLeases:
    """Leases kept as rows of the store's table ``name`` (module docstring)."""

    def __init__(self, open_table: Callable[[str, pa.Schema], Any], lease_s: float,
                 name: str = "_leases"):
        self._open = open_table
        self.lease_s = lease_s
        self.name = name
        self._writes = 0
        self._compacting = threading.Lock()
        self._guard = threading.Lock()

    def _table(self) -> Any:
        return self._open(self.name, LEASES)

    def read(self, key: str) -> dict | None:
        """The key's row as of the table's newest version (None: no row yet)."""
        from .db import sql_str  # lazy: storage.db imports this module's user

        tbl = self._table()
        tbl.checkout_latest()
        rows = tbl.search().where(f"key = {sql_str(key)}").limit(1).to_list()
        return rows[0] if rows else None

    def take(self, key: str, holder: str, wait_s: float,
             token: Callable[[str], str | None]) -> tuple[BucketHeld, str]:
        """Take the lease on ``key`` as ``holder`` (waiting at most ``wait_s``, else
        ``LockBusy``). ``token(found)`` gives the token to store with it (None: keep the one
        found). Returns the held lease and the token found."""
        end = time.monotonic() + wait_s
        while True:
            row = self.read(key)
            now = _now_ms()
            free = row is None or not row["holder"] or row["expires_ms"] <= now
            if free:
                found = "" if row is None else row["token"] or ""
                ends = now + int(self.lease_s * 1000)
                seen = None if row is None else (row["holder"], row["expires_ms"])
                kept = token(found) or found
                if self.write(key, holder, ends, kept, seen=seen):
                    return BucketHeld(self, key, holder, ends, kept), found
            if time.monotonic() + POLL_S > end:
                raise LockBusy(f"{key!r} is held by another process (its lease in the store's "
                               f"{self.name} table) for the whole {wait_s:g} s this call may "
                               "wait: retry in a moment")
            time.sleep(POLL_S)

    # -- claims on the next turn (``curating.py``'s fair tries), rows of their own -------------
    def claimed(self, key: str) -> str | None:
        """Who holds a claim on ``key``'s next turn that has not run out (None: no one)."""
        row = self.read(f"{key}.next")
        fresh = row is not None and row["holder"] and row["expires_ms"] > _now_ms()
        return row["holder"] if row is not None and fresh else None

    def claim(self, key: str, me: str, fresh_s: float) -> None:
        """Claim ``key``'s next turn for ``fresh_s`` (or renew this claim); another's claim that
        has not run out stands, and of two claiming at once one wins (a conditional write)."""
        row = self.read(f"{key}.next")
        now = _now_ms()
        if row is not None and row["holder"] not in ("", me) and row["expires_ms"] > now:
            return
        seen = None if row is None else (row["holder"], row["expires_ms"])
        self.write(f"{key}.next", me, now + int(fresh_s * 1000), "", seen=seen)

    def unclaim(self, key: str, me: str) -> None:
        """Drop this process's claim on ``key``'s next turn (it has the turn now)."""
        self.write(f"{key}.next", "", 0, "", mine=me)

    def write(self, key: str, holder: str, expires_ms: int, token: str, *,
              seen: tuple[str, int] | None = None, mine: str | None = None) -> bool:
        """One conditional write of ``key``'s row; True when it was written. ``seen``: only if
        the row still holds that holder and end (None with ``mine`` None: only if there is no
        row); ``mine``: only if the row names ``mine`` as holder (never inserts)."""
        from .db import retrying, sql_str  # lazy: storage.db imports this module's user

        if mine is not None:
            cond = f"target.holder = {sql_str(mine)}"
        elif seen is not None:
            cond = f"target.holder = {sql_str(seen[0])} AND target.expires_ms = {int(seen[1])}"
        else:
            cond = "target.expires_ms < 0"   # never true: insert only
        tbl = self._table()
        data = pa.Table.from_pylist([{"key": key, "holder": holder, "expires_ms": expires_ms,
                                      "token": token}], schema=LEASES)

        def merge() -> Any:
            q = tbl.merge_insert("key").when_matched_update_all(where=cond)
            return (q if mine is not None else q.when_not_matched_insert_all()).execute(data)

        got = retrying(merge, f"lease {key}", table=tbl)
        self._after_write(tbl)
        return got.num_updated_rows + got.num_inserted_rows > 0

    def _after_write(self, tbl: Any) -> None:
        with self._guard:
            self._writes += 1
            due = self._writes % COMPACT_EVERY == 0
        if due and self._compacting.acquire(blocking=False):
            threading.Thread(target=self._compact, args=(tbl,), daemon=True,
                             name="trimem-lease-compact").start()

    def _compact(self, tbl: Any) -> None:
        from .db import retrying  # lazy: storage.db imports this module's user

        try:
            retrying(lambda: tbl.optimize(cleanup_older_than=timedelta(seconds=60)),
                     f"compact {self.name}", table=tbl)
        except Exception as exc:  # noqa: BLE001 - an optimisation: the next run tries again
            log.warning("compacting the store's %s table failed: %s", self.name, exc)
        finally:
            self._compacting.release()
