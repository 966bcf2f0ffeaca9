"""Progress of long tool calls, reported to the client as MCP progress notifications.

A tool that runs its work in a worker thread passes :func:`relay` of the request context's
``report_progress`` down as a plain ``progress(done, total, message)`` callable; the client sees
``notifications/progress`` when it gave a ``progressToken`` (``progress_callback=`` of
``call_tool``) and nothing otherwise.
"""

from __future__ import annotations

from typing import Callable

Progress = Callable[[float, float, str], None]
EMBED_CHUNK = 256   # texts per embedding call when progress is reported


def relay(report) -> Progress:
    """A thread-side callable that runs the async ``report`` on the event loop."""
    import anyio.from_thread

    def progress(done, total, message):
        anyio.from_thread.run(report, done, total, message)
    return progress


def embed_reporting(rt, texts: list[str], progress: Progress | None, total: int | None = None):
    """``rt.embed(texts)``; with ``progress``, and more texts than one chunk, in chunks of
    :data:`EMBED_CHUNK` with a report after each (a single call otherwise, so the vectors and
    the speed of a call nobody watches are unchanged)."""
    import numpy as np

    if progress is None or len(texts) <= EMBED_CHUNK:
        return rt.embed(texts)
    total = total or len(texts)
    out = []
    for i in range(0, len(texts), EMBED_CHUNK):
        out.append(np.asarray(rt.embed(texts[i:i + EMBED_CHUNK])))
        progress(min(i + EMBED_CHUNK, len(texts)), total, "embedding")
    return np.concatenate(out)
