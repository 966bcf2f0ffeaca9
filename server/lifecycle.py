"""How ``trimem serve`` starts and stops.

Stopping: a host stops a server by closing its stdin or sending SIGTERM, a user by one Ctrl-C
(SIGINT). Each ends the process within ``STOP_S`` seconds with exit status 0 and no traceback:

- stdio: the MCP SDK's stdin reader blocks in a worker thread that cannot be cancelled, and the
  SDK installs no SIGINT handling, so a signal is handled here, in the main thread: background
  work is stopped (:meth:`Runtime.close`, bounded by ``GRACE_S``) and the process exits at once;
  stdin EOF ends the SDK's loop, then the same close and exit follow.
- HTTP: uvicorn catches the signal, shuts down gracefully (connections get ``HTTP_GRACE_S``) and
  re-raises it, which lands in the same handler. When stdin is a pipe (a host started the
  server), its EOF stops the server too; from a terminal, /dev/null or a service manager
  stdin is not watched.

The exit is ``os._exit`` after flushing: whatever curation is still running after ``GRACE_S``
is abandoned like a crash would abandon it (LanceDB commits are atomic, the session stays
``queued`` on disk) and the next start resumes it; interpreter finalisation with a thread inside
LanceDB's native code is what must not happen. A second Ctrl-C exits immediately.

Starting: sessions an earlier process left queued are resumed in the background shortly after
start-up (``RESUME_AFTER_S``, so the host's handshake is answered first: opening the store
imports LanceDB, which would compete with it on a busy machine), not at the first tool
call.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
import sys
import threading
import time

log = logging.getLogger(__name__)
STOP_S = 2.0          # the promise: every way of stopping ends the process within this
GRACE_S = 1.0         # of which background work may take this much
FLUSH_S = 0.3         # and the last flush of the logs this much
HTTP_GRACE_S = 0.5    # and open HTTP connections this much
RESUME_AFTER_S = 2.0   # after the host's handshake: importing the store competes with it


class Stopper:
    """Ends the process once: bounded close of the runtime, flush, exit status 0."""

    def __init__(self, runtime):
        self.runtime = runtime
        self._started = threading.Event()

    def stop(self, why: str, code: int = 0) -> None:
        if self._started.is_set():   # a second signal while closing: go now
            os._exit(code)
        self._started.set()
        # The close runs in its own thread and is waited for at most GRACE_S + FLUSH_S: a lock
        # held by a thread inside LanceDB (an index build, a table creation) or a full stderr
        # pipe must not keep the process alive past STOP_S.
        closer = threading.Thread(target=self._close, args=(why,), name="trimem-close",
                                  daemon=True)
        closer.start()
        closer.join(GRACE_S + FLUSH_S)
        os._exit(code)

    def _close(self, why: str) -> None:
        log.info("stopping (%s)", why)
        try:
            self.runtime.close(GRACE_S)
        except Exception:  # noqa: BLE001 - exiting anyway; say why in the log only
            log.exception("closing the runtime failed")
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass

    def on_signal(self, signum, frame) -> None:
        self.stop(signal.Signals(signum).name)

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.on_signal)


def resume_in_background(runtime) -> threading.Thread | None:
    """Open the store (which queues every session left ``queued`` or ``failed``) off the start
    path; curation then runs in its own worker as usual."""
    if not runtime.config.curation:
        return None

    def run() -> None:
        time.sleep(RESUME_AFTER_S)
        try:
            runtime.store   # noqa: B018 - opening it resumes queued curation
        except Exception as exc:  # noqa: BLE001 - the first tool call reports it to the host
            log.warning("could not resume curation at start-up: %s", exc)

    t = threading.Thread(target=run, name="trimem-resume", daemon=True)
    t.start()
    return t


def watch_stdin_pipe(on_eof) -> bool:
    """Call ``on_eof`` when stdin, if it is a pipe, reaches EOF (HTTP mode: the host that
    started the server has gone). Returns whether stdin is watched."""
    try:
        if not stat.S_ISFIFO(os.fstat(0).st_mode):
            return False
    except OSError:
        return False

    def run() -> None:
        try:
            while os.read(0, 65536):
                pass
        except OSError:
            pass
        on_eof()

    threading.Thread(target=run, name="trimem-stdin-watch", daemon=True).start()
    return True


def serve(server, settings, http: bool, host: str, port: int) -> int:
    stopper = Stopper(server.runtime)
    stopper.install()
    resume_in_background(server.runtime)
    if http:
        from .http import serve_http  # lazy: uvicorn (server.http), only for --http

        watch_stdin_pipe(lambda: os.kill(os.getpid(), signal.SIGTERM))
        serve_http(server, settings, host, port, graceful_s=HTTP_GRACE_S)
        stopper.stop("HTTP server stopped")
    else:
        server.run()
        stopper.stop("stdin closed")
    return 0   # not reached: stop() exits
