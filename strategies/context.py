"""Everything this process keeps for one namespace between calls, in one owner.

The runtime creates a :class:`NamespaceContext` the first time a namespace is used
(``Runtime.context``), hands it to strategies in ``Env.ns`` and closes it in ``Runtime.close``.
It holds the namespace's bound storage handle, the lock curation and forget take, the
strategies' caches (each under its own key, made on first use), ``auto``'s set of strategies
known to have memory here and its voter pool. Nothing of it lives in module globals, and
nothing is keyed by ``id()``: a closed runtime leaves no state behind.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from .space_api import StrategySpace

T = TypeVar("T")
# auto's four voters, the BM25 search it reads after the vote, and wiki's page routing
POOL_WORKERS = 6


class NamespaceContext:
    def __init__(self, namespace: str):
        self.namespace = namespace
        self.space: StrategySpace | None = None   # the namespace's storage, set by the runtime
        # held by curation of the namespace and by forget in it: a curation that read a source
        # before it was forgotten must not write memories derived from it afterwards
        self.lock = threading.RLock()
        self.ready: set[str] = set()       # auto: strategies known to have memory here
        self._guard = threading.Lock()
        self._state: dict[str, Any] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    def state(self, key: str, make: Callable[[], T]) -> T:
        """The cache kept under ``key`` (``"<strategy>.<what>"``), made by ``make()`` once."""
        with self._guard:
            if key not in self._state:
                self._state[key] = make()
            return self._state[key]

    def get(self, key: str) -> Any:
        with self._guard:
            return self._state.get(key)

    def put(self, key: str, value: Any) -> None:
        with self._guard:
            self._state[key] = value

    def invalidate(self) -> None:
        """Drop what every cache holds (a forget happened, here or in another process); caches
        with rules of their own (``nscache.NamespaceCache``) are told through ``invalidate``."""
        with self._guard:
            items = list(self._state.items())
        for _key, value in items:
            hook = getattr(value, "invalidate", None)
            if callable(hook):
                hook()

    def pool(self, workers: int = POOL_WORKERS) -> ThreadPoolExecutor:
        """A thread pool for work done side by side within one call (auto's voters, wiki's page
        routing); ``workers`` counts when the pool is made, on the namespace's first ask."""
        with self._guard:
            if self._closed:
                raise RuntimeError(f"namespace {self.namespace!r}: the runtime was closed")
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=workers,
                                                thread_name_prefix="trimem-ns")
            return self._pool

    def close(self) -> None:
        """Shut the pool down (running work finishes) and drop every cache."""
        with self._guard:
            self._closed = True
            pool, self._pool = self._pool, None
            self._state.clear()
            self.ready.clear()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
