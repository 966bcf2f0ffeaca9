"""Progress of long tool calls, reported to the client as MCP progress notifications.

A tool that runs its work in a worker thread passes :func:`relay` of the request context's
``report_progress`` down as a plain ``progress(done, total, message)`` callable; the client sees
``notifications/progress`` when it gave a ``progressToken`` (``progress_callback=`` of
``call_tool``) and nothing otherwise.
"""

from __future__ import annotations

from typing import Callable

import anyio.from_thread

Progress = Callable[[float, float, str], None]


def relay(report) -> Progress:
    """A thread-side callable that runs the async ``report`` on the event loop."""
    def progress(done, total, message):
        anyio.from_thread.run(report, done, total, message)
    return progress
