"""One in-process cache per namespace of something read from that namespace's tables (the
workspace graph snapshot, the wiki turn maps), and the rules that keep it current:

* ``invalidate`` (after a write this process cannot patch in: forget, consolidate) bumps the
  namespace's generation and drops the cached item;
* a write this process can patch in is wrapped in ``writing`` and ends with ``replace`` (old item
  -> patched item), so recalls never re-read the tables for this process's own curation;
* another process's writes move the tables' row counts, re-checked at most every ``recheck_s``
  seconds; a recall while this process is ``writing`` keeps the cached item (the counts would
  show half a write).

A forget in another process reaches every cache through :func:`drop_namespace` (called by the
recall tool when the store's forget marks moved; see ``storage/forgets.py``).

Cached items carry ``gen``, ``counts`` and ``checked`` (``time.monotonic()`` of the last check).
"""

from __future__ import annotations

import threading
import time
import weakref
from contextlib import contextmanager
from typing import Any, Callable


_ALL: "weakref.WeakSet[NamespaceCache]" = weakref.WeakSet()


def drop_namespace(space) -> None:
    """Invalidate every cache's item for ``space``'s namespace (a forget happened elsewhere)."""
    for cache in list(_ALL):
        cache.invalidate(space)


class NamespaceCache:
    def __init__(self, counts: Callable[[Any], tuple]):
        _ALL.add(self)
        self._counts = counts
        self._lock = threading.Lock()
        self._items: dict[tuple, Any] = {}
        self._gen: dict[tuple, int] = {}
        self._writing: dict[tuple, int] = {}

    @staticmethod
    def key(space) -> tuple:
        return (id(space.store), space.namespace)

    def invalidate(self, space) -> None:
        k = self.key(space)
        with self._lock:
            self._gen[k] = self._gen.get(k, 0) + 1
            self._items.pop(k, None)

    @contextmanager
    def writing(self, space):
        k = self.key(space)
        with self._lock:
            self._writing[k] = self._writing.get(k, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._writing[k] -= 1

    def get(self, space, recheck_s: float) -> tuple[Any, int, tuple]:
        """(the cached item, generation, counts) while it is current; else (None, generation,
        counts) for the caller to read the tables and ``put`` the result."""
        k = self.key(space)
        with self._lock:
            item, gen, busy = self._items.get(k), self._gen.get(k, 0), self._writing.get(k, 0) > 0
        now = time.monotonic()
        if item is not None and item.gen == gen and (busy or now - item.checked < recheck_s):
            return item, gen, item.counts
        counts = self._counts(space)
        if item is not None and item.gen == gen and item.counts == counts:
            item.checked = now
            return item, gen, counts
        return None, gen, counts

    def put(self, space, item) -> None:
        """Keep ``item`` (read at ``item.gen``) unless the namespace was invalidated meanwhile."""
        k = self.key(space)
        with self._lock:
            if self._gen.get(k, 0) == item.gen:
                self._items[k] = item

    def current(self, space) -> Any:
        """The cached item to patch, or None (nothing cached, or invalidated)."""
        k = self.key(space)
        with self._lock:
            item = self._items.get(k)
            return item if item is not None and item.gen == self._gen.get(k, 0) else None

    def replace(self, space, old, new) -> None:
        """Swap a patched item in (``new.gen`` = ``old.gen``; counts re-read now), unless another
        thread replaced or invalidated ``old`` meanwhile."""
        new.counts, new.checked = self._counts(space), time.monotonic()
        k = self.key(space)
        with self._lock:
            if self._items.get(k) is old and self._gen.get(k, 0) == old.gen:
                self._items[k] = new
