"""What one table held for a few keys at one version, kept so a read at that same version need
not ask LanceDB again (``Sessions.get``, ``Sources.session_refs``: the two reads a ``remember``
makes under the namespace's write lock, one exchange after another into the same session).

A LanceDB version never changes once committed, and every commit makes the next version
(``n + 1``). So a value is kept with the version it was read at, and served only while the
table's handle is at that version; any write by anyone (another process, a forget, a
compaction) moves the version and the next read goes to LanceDB. This process's own commit
tells its new version: a write of rows the keeper can account for (a session's row, a session's
new messages) moves every kept value from ``n`` to ``n + 1``, patched (``advanced``); values kept
at another version are left to miss.

Written by hand: a bounded LRU dict under one lock; ``functools.lru_cache`` keys on arguments
and cannot be told a version moved.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

KEEP = 64   # keys kept (sessions written to recently: a host writes to one at a time)


class Versioned(Generic[K, V]):
    """Values by key, each valid at one table version; see the module docstring."""

    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self._kept: OrderedDict[K, tuple[int, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, version: int) -> tuple[V] | None:
        """``(value,)`` kept for ``key`` if it was true at ``version``, else None (a value may
        itself be None: a session with no row yet)."""
        with self._lock:
            got = self._kept.get(key)
            if got is None or got[0] != version:
                return None
            self._kept.move_to_end(key)
            return (got[1],)

    def put(self, key: K, version: int, value: V) -> None:
        with self._lock:
            self._kept[key] = (version, value)
            self._kept.move_to_end(key)
            while len(self._kept) > self.keep:
                self._kept.popitem(last=False)

    def advanced(self, version: int, patch: Callable[[K, V], V]) -> None:
        """This process committed ``version``, whose change ``patch`` applies to a kept value
        (the identity for keys the commit did not touch): values true at ``version - 1`` are
        true at ``version`` once patched; the others stay behind and miss."""
        with self._lock:
            for key, (at, value) in list(self._kept.items()):
                if at == version - 1:
                    self._kept[key] = (version, patch(key, value))
