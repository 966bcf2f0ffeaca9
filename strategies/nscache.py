"""One namespace's in-process cache of something read from its tables (the workspace graph
snapshot, the wiki turn maps), and the rules that keep it current. Each lives in the namespace's
:class:`~trimem.strategies.context.NamespaceContext` (``Env.ns``), one object per namespace:

* ``invalidate`` (after a write this process cannot patch in: forget, consolidate) bumps the
  generation and drops the cached item;
* a write this process can patch in is wrapped in ``writing`` and ends with ``replace`` (old item
  -> patched item), so recalls never re-read the tables for this process's own curation;
* another process's writes move the tables' row counts, re-checked at most every ``recheck_s``
  seconds; a recall while this process is ``writing`` keeps the cached item (the counts would
  show half a write).

A forget in another process reaches every cache through ``NamespaceContext.invalidate`` (called
by the recall tool when the store's forget marks moved; see ``storage/forgets.py``).

Cached items carry ``gen``, ``counts`` and ``checked`` (``time.monotonic()`` of the last check).

RAM: an item with an ``nbytes`` estimate is charged to the store's RAM budget
(``storage/budget.py``, shared with the table copies): the least recently used copies or items
are dropped to make room, and an item larger than the whole share is not kept (every recall
then reads the tables again: the same result, slower). A dropped item is read again on the
next use.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..storage.budget import CopyBudget
    from .space_api import StrategySpace


class NamespaceCache:
    def __init__(self, counts: Callable[[StrategySpace], tuple]):
        self._counts = counts
        self._lock = threading.Lock()
        self._item: Any = None
        self._gen = 0
        self._writing = 0
        self._budget: CopyBudget | None = None   # the store's, known from the first ``get``

    def drop(self) -> None:
        """The RAM budget needs the room: the next ``get`` reads afresh (no lock: the budget
        may drop this cache while another thread charges it)."""
        self._item = None

    def _charge(self, item) -> bool:
        """Charge ``item`` to the budget; False when it must not be kept."""
        size = getattr(item, "nbytes", None)
        if self._budget is None or size is None:
            return True
        return self._budget.admit(self, int(size))

    def _charge_kept(self, item) -> None:
        """Charge ``item``, just kept; let it go again if the budget refuses it."""
        if not self._charge(item):
            with self._lock:
                if self._item is item:
                    self._item = None

    def invalidate(self) -> None:
        with self._lock:
            self._gen += 1
            self._item = None

    @contextmanager
    def writing(self):
        with self._lock:
            self._writing += 1
        try:
            yield
        finally:
            with self._lock:
                self._writing -= 1

    def get(self, space: StrategySpace, recheck_s: float) -> tuple[Any, int, tuple]:
        """(the cached item, generation, counts) while it is current; else (None, generation, counts)
        for the caller to read ``space``'s tables and ``put`` the result."""
        if self._budget is None:
            self._budget = space.copy_budget
        with self._lock:
            item, gen, busy = self._item, self._gen, self._writing > 0
        if item is not None:
            self._budget.used_now(self)
        now = time.monotonic()
        if item is not None and item.gen == gen and (busy or now - item.checked < recheck_s):
            return item, gen, item.counts
        counts = self._counts(space)
        if item is not None and item.gen == gen and item.counts == counts:
            item.checked = now
            return item, gen, counts
        return None, gen, counts

    def put(self, item) -> None:
        """Keep ``item`` (read at ``item.gen``) unless the namespace was invalidated meanwhile."""
        with self._lock:
            if self._gen != item.gen:
                return
            self._item = item
        self._charge_kept(item)

    def current(self) -> Any:
        """The cached item to patch, or None (nothing cached, or invalidated)."""
        with self._lock:
            item = self._item
            return item if item is not None and item.gen == self._gen else None

    def replace(self, space: StrategySpace, old, new) -> None:
        """Swap a patched item in (``new.gen`` = ``old.gen``; counts re-read from ``space``
        now), unless another thread replaced or invalidated ``old`` meanwhile."""
        new.counts, new.checked = self._counts(space), time.monotonic()
        with self._lock:
            if self._item is not old or self._gen != old.gen:
                return
            self._item = new
        self._charge_kept(new)
