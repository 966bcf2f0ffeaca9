"""What the background curation worker (:mod:`.curation`) keeps track of in one process: the
calls it lets pass (:class:`CallGate`), its recent failures per namespace (:class:`Failures`),
and how long each strategy takes to curate a session (:class:`StepTimes`)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..strategies.base import Curates

FAILURES_KEPT = 20        # per namespace, for the status resource
FAILURE_CHARS = 300       # of each error message


class Failures:
    """The last ``FAILURES_KEPT`` curation failures of each namespace in this process (oldest
    first), each ``(session_id, error)``. Bounded per namespace, so a long-running server's
    memory does not grow with them and a busy namespace cannot push another's out of sight."""

    def __init__(self, keep: int = FAILURES_KEPT) -> None:
        self._keep = keep
        self._by_ns: dict[str, deque[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    def add(self, namespace: str, session_id: str, error: str) -> None:
        with self._lock:
            kept = self._by_ns.setdefault(namespace, deque(maxlen=self._keep))
            kept.append((session_id, error[:FAILURE_CHARS]))

    def recent(self, namespace: str) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._by_ns.get(namespace, ()))

    def __iter__(self) -> Iterator[tuple[str, str, str]]:
        """Every kept failure as ``(namespace, session_id, error)``."""
        with self._lock:
            return iter([(ns, *f) for ns, kept in self._by_ns.items() for f in kept])

    def __len__(self) -> int:
        with self._lock:
            return sum(len(kept) for kept in self._by_ns.values())

    def __repr__(self) -> str:
        return f"Failures({list(self)!r})"


class CallGate:
    """Counts the calls of one kind (recalls, writes) running in this process and notes when
    the last one ended, so that background work can let them pass."""

    def __init__(self):
        self._n = 0
        self._ended = float("-inf")   # time.monotonic() when the last call ended
        self._cond = threading.Condition()

    def __enter__(self):
        with self._cond:
            self._n += 1

    def __exit__(self, *exc):
        with self._cond:
            self._n -= 1
            self._ended = time.monotonic()
            self._cond.notify_all()

    def wait_clear(self, timeout: float) -> bool:
        """Block until no call runs (True) or ``timeout`` passes (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._n == 0, timeout=timeout)

    def quiet_in(self, quiet_s: float) -> float:
        """Seconds until no call will have run for ``quiet_s`` (0: quiet now); while one runs,
        ``quiet_s`` (ask again then)."""
        with self._cond:
            if self._n:
                return quiet_s
            return max(0.0, self._ended + quiet_s - time.monotonic())


class StepTimes:
    """Each curating strategy's mean wall time per session in this process: an exponentially
    weighted mean (``WEIGHT`` for the newest session), so it follows a store that grows while
    one outlier session moves it little. Used only to order a session's strategies; none is
    stored."""

    WEIGHT = 0.2

    def __init__(self) -> None:
        self._mean: dict[str, float] = {}
        self._lock = threading.Lock()

    def note(self, name: str, seconds: float) -> None:
        with self._lock:
            old = self._mean.get(name)
            self._mean[name] = seconds if old is None else old + self.WEIGHT * (seconds - old)

    def means(self) -> dict[str, float]:
        """The current means in seconds, rounded to milliseconds (benchmarks report them)."""
        with self._lock:
            return {k: round(v, 3) for k, v in self._mean.items()}

    def longest_first(self, strats: list[Curates]) -> list[Curates]:
        """``strats`` by mean time, longest first; a strategy not yet timed comes before the
        timed ones (it may be the longest), in the order given (a stable sort)."""
        with self._lock:
            mean = dict(self._mean)
        return sorted(strats, key=lambda s: -mean.get(s.name, float("inf")))
