"""Background curation: strategies turn each session's raw sources into their derived memory.

``remember`` only writes sources (durable at once) and marks the session ``queued``; this worker
then runs every strategy that curates (``strategy.curate(env, session_id)``, idempotent: it
rebuilds that session's derived data) off the request path, so neither ``remember`` nor ``recall``
ever waits for curation or an LLM. A session is curated once it has been idle for
``delay_s`` (appends within that window are folded into one run). Sessions still ``queued`` when
the process stopped (or crashed) are picked up again when the store is next opened.

The strategies curate a session two at a time on a machine with two cores or more (each writes
only its own tables): on two cores, one strategy's embedding runs in native code beside another's
Python work and LanceDB reads. The two threads take the session's strategies from one queue,
longest first by each strategy's mean time per session in this process (:class:`StepTimes`;
registry order until each has run once), so the longest step starts at once and the others fill
the second thread: at 30,000 turns the wiki took 1.35 s a session, hybrid 0.7 and workspace
0.4, and a fixed split (hybrid alone, the other two after each other) made each session wait
1.75 s for what fits in 1.35.

Recalls and writes come first: before each strategy's curation step the worker waits (at most
``YIELD_MAX_S``) until no recall and no ``remember`` is running in this process. Curation and
the calls share two cores and one interpreter lock: at 100k units a recall that overlapped a
curation step took ~3x longer, and one exchange remembered while its session was being curated
took ~2x longer; a step already running is not interrupted, and a steady stream of calls cannot
starve curation for longer than ``YIELD_MAX_S`` per step. A session is not started while writes
are arriving: the worker waits until no ``remember`` has run in this process for
``WRITE_QUIET_S``, at most ``DEFER_MAX_S`` after the session became due, so a bulk ingest (an
import, a long transcript, calls back to back) embeds and stores at full speed and its sessions
are curated once it pauses; an agent loop's sessions are curated between its exchanges.
:meth:`CurationWorker.wait_idle` (tests, benchmarks, the CLI's end of an ingest) does not wait
for the quiet period.

Each session's curation holds its namespace's curation turn (``Runtime.curating``,
``storage/curating.py``): processes on one memory folder curate a namespace one at a time, and one
whose turn follows another's reads the namespace afresh. The worker tries for the turn once; when
another process holds it, the session is queued again for ``BUSY_RETRY_S`` later (the worker does
not wait there holding the namespace's lock, which this process's forget needs), and a session
found ``done`` in the turn was curated by the other process meanwhile and is skipped. Its tries
are fair: one that finds the turn taken claims the next, and a worker about to take the turn
while another process's claim stands lets that process go first, so two processes with sessions
waiting take turns session by session.

With ``consolidate_every`` = N > 0 (off by default), the worker also consolidates a namespace
once N of its sessions were curated since its last consolidation, after it has curated every
session of that namespace it had waiting (see ``periodic.py``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from contextlib import ExitStack
from typing import TYPE_CHECKING

from ..storage import ForgetRaced
from ..storage.locks import LockBusy
from ..strategies import registry
from ..strategies.base import Curates
from .curation_state import Failures, StepTimes
from .periodic import PeriodicConsolidation
from .recall import catch_up

if TYPE_CHECKING:
    from ..storage.curating import Turn
    from ..storage.space import Space
    from ..strategies.base import Curates, Env

log = logging.getLogger(__name__)
YIELD_MAX_S = 2.0
WRITE_QUIET_S = 0.5       # no remember for this long before a session's curation starts
DEFER_MAX_S = 30.0        # ... but a due session waits for a quiet moment at most this long
FENCE_TRIES = 3           # a curation that met another process's forget starts again
BUSY_RETRY_S = 0.2        # a session whose namespace another process is curating: look again then
# (a look is ~1.5 ms; the turn passes between processes with sessions waiting, see
# storage/curating.py, on average half this after the step before it ends)


class CurationWorker:
    def __init__(self, runtime, delay_s: float = 0.0, consolidate_every: int = 0):
        self.rt = runtime
        self.delay_s = delay_s
        self.threads = min(2, os.cpu_count() or 1)   # strategies curating one session at once
        self.periodic = PeriodicConsolidation(runtime, consolidate_every)
        self._due: dict[tuple[str, str], float] = {}
        self._busy = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.failures = Failures()
        self.times = StepTimes()
        self._stopped = False
        self._hurry = 0   # wait_idle callers: curate without waiting for writes to pause

    def enqueue(self, namespace: str, session_id: str) -> None:
        with self._cond:
            if self._stopped:   # the session stays `queued` on disk: the next process resumes it
                return
            self._due[(namespace, session_id)] = time.monotonic() + self.delay_s
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="trimem-curation",
                                                daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def resume(self, store) -> int:
        """Queue every session left ``queued`` (or ``failed``) by an earlier process."""
        n = 0
        for ns in store.namespaces():
            for sess in store.space(ns).sessions.all():
                if sess.curation in ("queued", "failed"):
                    self.enqueue(ns, sess.session_id)
                    n += 1
        if n:
            log.info("resuming curation of %d sessions", n)
        return n

    @property
    def busy(self) -> bool:
        """Whether a session is being curated now."""
        with self._cond:
            return self._busy > 0

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running (for benchmarks, tests and the CLI)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._hurry += 1
            self._cond.notify_all()
            try:
                while self._due or self._busy:
                    left = None if end is None else end - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cond.wait(timeout=0.05 if left is None else min(left, 0.05))
                return True
            finally:
                self._hurry -= 1

    def stop(self, timeout: float = 30.0) -> bool:
        """Run nothing more (queued sessions stay queued on disk and are resumed by the next
        process) and wait for the curation in progress; False if it is still running."""
        end = time.monotonic() + timeout
        with self._cond:
            self._stopped = True
            self._due.clear()
            self._cond.notify_all()
            while self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(timeout=min(left, 0.05))
        return True

    def _next(self) -> tuple[str, str] | None:
        with self._cond:
            while True:
                if self._stopped:
                    return None
                if not self._due:
                    self._cond.wait(timeout=1.0)
                    if not self._due:
                        return None
                    continue
                key, due = min(self._due.items(), key=lambda kv: kv[1])
                now = time.monotonic()
                wait = due - now
                if wait <= 0 and not self._hurry:   # writes arriving: let them pass first
                    wait = min(self.rt.writes.quiet_in(WRITE_QUIET_S), due + DEFER_MAX_S - now)
                if wait <= 0:
                    del self._due[key]
                    self._busy += 1
                    return key
                self._cond.wait(timeout=wait)

    def _loop(self) -> None:
        while True:
            key = self._next()
            if key is None:
                return  # idle: the thread ends; enqueue starts a new one
            try:
                taken = self.curate_now(*key, wait_s=0, due=True)
            except Exception as exc:  # e.g. the store became read-only or full: keep serving
                log.exception("curation of %s/%s failed", *key)
                self.failures.add(*key, str(exc))
            else:
                if taken:
                    self._consolidate_if_due(key[0])
                else:   # another process curates the namespace: this thread does not wait there
                    self._again(key, BUSY_RETRY_S)
            finally:
                from ..storage.allocators import trim  # lazy: pyarrow (storage.allocators), not at start-up

                trim()   # what the session's reads materialised, back to the system
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _consolidate_if_due(self, namespace: str) -> None:
        """Periodic consolidation (when enabled), once no session of ``namespace`` is waiting."""
        if not self.periodic.enabled or self._waiting(namespace):
            return
        try:
            self.periodic.run_if_due(namespace)
        except Exception as exc:  # the count is kept: the next curated session tries again
            log.exception("periodic consolidation of namespace %r failed", namespace)
            self.failures.add(namespace, "", f"periodic consolidation: {exc}")

    def _waiting(self, namespace: str) -> bool:
        """Whether more sessions of ``namespace`` are queued (or the worker is stopping)."""
        with self._cond:
            return self._stopped or any(ns == namespace for ns, _ in self._due)

    def _again(self, key: tuple[str, str], after_s: float) -> None:
        """Queue ``key`` again, due in ``after_s`` (unless it is queued sooner already)."""
        with self._cond:
            if not self._stopped:
                due = time.monotonic() + after_s
                self._due[key] = min(self._due.get(key, due), due)
                self._cond.notify_all()

    def curate_now(self, namespace: str, session_id: str, wait_s: float | None = None,
                   due: bool = False) -> bool:
        """Curate one session in the namespace's curation turn (``Runtime.curating``), waiting
        for it at most ``wait_s`` (default the lock wait, then ``LockBusy``). False when
        ``wait_s`` is 0 and another process holds the turn (nothing was done). ``due``: the
        worker's own pick, skipped when another process curated the session meanwhile."""
        with ExitStack() as stack:
            try:
                turn = stack.enter_context(self.rt.curating(namespace, wait_s, fair=due))
            except LockBusy:
                if wait_s == 0:
                    return False
                raise
            state = self._curate(namespace, session_id, turn, due)
            if state == "done" and self.periodic.enabled:
                self.periodic.session_curated(namespace, session_id)
        return True

    def _curate(self, namespace: str, session_id: str, turn: Turn, due: bool) -> str | None:
        """Run every curating strategy on one session: "done", "failed", or None (forgotten, or
        ``due`` and curated by another process since it was queued here)."""
        from ..strategies import aliasstats  # lazy: pyarrow (strategies.aliasstats), not at start-up

        env = self.rt.env(namespace)
        sess = env.space.sessions.get(session_id)
        if sess is None:   # forgotten meanwhile
            return None
        if due and sess.curation == "done":
            # each remember and forget marks its session queued before queueing it; "done" read in
            # the turn means another process (its own queue) curated every message since
            return None
        queue = deque(self.times.longest_first(registry.with_hook(Curates)))
        failed: list[str] = []
        taking = threading.Lock()

        def run() -> None:
            while True:
                with taking:
                    if not queue:
                        return
                    strat = queue.popleft()
                self.rt.recalls.wait_clear(YIELD_MAX_S)   # calls first (module docstring)
                self.rt.writes.wait_clear(YIELD_MAX_S)
                t0 = time.monotonic()
                try:
                    turn.check()   # still this process's turn (it was not stopped past the lease)
                    _fenced_curate(env, strat, session_id)
                except Exception as exc:  # one strategy's failure must not stop the others
                    log.exception("curation of %s/%s by %s failed", namespace, session_id, strat.name)
                    self.failures.add(namespace, session_id, f"{strat.name}: {exc}")
                    failed.append(strat.name)
                self.times.note(strat.name, time.monotonic() - t0)

        # two at once where there are two cores: each strategy writes only its own tables, and
        # one's embedding (native, off the interpreter lock) overlaps another's Python work
        helper = None
        if self.threads > 1 and len(queue) > 1:
            helper = threading.Thread(target=run, name="trimem-curation-2", daemon=True)
            helper.start()
        run()
        if helper is not None:
            helper.join()
        state = "failed" if failed else "done"
        try:   # the session's name votes, so a new process need not read every message again
            aliasstats.curate(env.space, session_id)
        except Exception as exc:  # recall counts them itself when they are missing
            log.exception("name votes of %s/%s failed", namespace, session_id)
            self.failures.add(namespace, session_id, f"name votes: {exc}")
        # only if no message came meanwhile: a remember that stored more set "queued" and queued
        # the session again (a read-then-put here would write back the count it read)
        env.space.sessions.set_curation(session_id, state, sess.n_messages)
        return state


def _fenced_curate(env: Env[Space], strat: Curates, session_id: str) -> None:
    """``strat.curate`` inside the namespace's forget fence (``Space.fenced``): a forget by
    another process while it runs fails its later commits instead of letting them write text
    the forget removed; it then starts again from what is stored now (the session itself may
    be gone: then there is nothing to curate)."""
    from ..storage.snapshot import bulk  # lazy: lancedb (storage.snapshot), not at start-up

    for attempt in range(FENCE_TRIES):
        try:
            with env.space.fenced() as stamp:
                if attempt or not env.space.forget_handled(stamp):
                    catch_up(env, force=True)   # read from after the forget
                    if env.space.sessions.get(session_id) is None:
                        return
                with bulk():   # its reads do not reload the tables it rewrites (storage/snapshot)
                    strat.curate(env, session_id)
            return
        except ForgetRaced:
            if attempt == FENCE_TRIES - 1:
                raise
            log.info("curation of %s by %s met a forget elsewhere; curating it again",
                     session_id, strat.name)
