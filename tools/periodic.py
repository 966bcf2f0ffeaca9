"""Consolidation every N curated sessions of a namespace (``TRIMEM_CONSOLIDATE_EVERY_SESSIONS``).

Off by default (N = 0): users of other memory servers complained about consolidation they did not
ask for. The paper (000, §3.2) suggests consolidating every 10–20 sessions.

How it works, when N > 0:

* Each time the curation worker finishes a session of a namespace, the session's id is added to
  that namespace's set of "sessions curated since the last consolidation". The set is kept in
  the store's ``_meta`` table (one key per namespace), so it survives restarts. It is a set, not
  a counter, because a session is curated again whenever messages are appended to it (or some
  of it is forgotten): a host that calls ``remember`` after every exchange must not trigger a
  consolidation every N exchanges.
* Once the worker has no more sessions of that namespace waiting and the set holds N or more
  sessions, the worker thread runs the same consolidation as the ``consolidate`` tool
  (:func:`trimem.tools.consolidate.run_consolidation`, paper defaults: ``min_cluster_size``
  10), under the namespace lock, logs it and records it in the audit log with
  ``trigger="every N sessions"``; then the set is emptied. A consolidation that fails keeps
  the set, so the next curated session of the namespace tries again.

Processes curating one namespace take turns (``storage/curating.py``), and a turn after another
process's reads the set afresh, so each curated session is counted once.
"""

from __future__ import annotations

import json
import logging
from contextlib import ExitStack

from ..storage.locks import LockBusy
from .consolidate import run_consolidation

log = logging.getLogger(__name__)
KEY = "consolidate.sessions_since_last/"   # + namespace name
MIN_CLUSTER_SIZE = 10                      # the paper's (appendix C), as the tool's default


def meta_key(namespace: str) -> str:
    return KEY + namespace


class PeriodicConsolidation:
    """Counts curated sessions per namespace and consolidates every ``every`` of them."""

    def __init__(self, runtime, every: int):
        self.rt = runtime
        self.every = max(0, int(every))

    @property
    def enabled(self) -> bool:
        return self.every > 0

    def pending(self, namespace: str) -> list[str]:
        """Sessions of ``namespace`` curated since its last consolidation (as stored)."""
        raw = self.rt.store.get_meta(meta_key(namespace))
        if not raw:
            return []
        try:
            got = json.loads(raw)
        except ValueError:   # a damaged value only delays consolidation: start counting again
            log.warning("ignoring unreadable %s in _meta", meta_key(namespace))
            return []
        return [s for s in got.get("sessions", []) if isinstance(s, str)]

    def _save(self, namespace: str, sessions: list[str]) -> None:
        self.rt.store.set_meta(meta_key(namespace), json.dumps({"sessions": sessions}))

    def session_curated(self, namespace: str, session_id: str) -> int:
        """Count one curated session (once, however often it is curated); returns the count."""
        sessions = self.pending(namespace)
        if session_id not in sessions:
            sessions.append(session_id)
            self._save(namespace, sessions)
        return len(sessions)

    def due(self, namespace: str) -> bool:
        return self.enabled and len(self.pending(namespace)) >= self.every

    def run_if_due(self, namespace: str):
        """Consolidate ``namespace`` if N sessions were curated since the last time; returns the
        :class:`~trimem.tools.consolidate.ConsolidateResult`, or None when not due."""
        if not self.enabled:
            return None
        with ExitStack() as stack:
            try:   # not waiting: the worker thread holds nothing while another process curates
                stack.enter_context(self.rt.curating(namespace, wait_s=0))
            except LockBusy:   # the count stays: the next curated session tries again
                log.info("namespace %r is being curated by another process; consolidating later",
                         namespace)
                return None
            sessions = self.pending(namespace)
            if len(sessions) < self.every:
                return None
            trigger = f"every {self.every} sessions"
            log.info("consolidating namespace %r: %d sessions curated since the last time (%s)",
                     namespace, len(sessions), trigger)
            out = run_consolidation(self.rt, namespace, min_cluster_size=MIN_CLUSTER_SIZE,
                                    trigger=trigger)
            self._save(namespace, [])
        log.info("consolidated namespace %r in %.1f s: %d clusters, %d operations, "
                 "compression ratio %.3f", namespace, out.duration_s, out.clusters,
                 len(out.operations), out.compression_ratio)
        return out
