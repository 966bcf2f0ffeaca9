"""What capture did, for ``trimem status``, the ``trimem://{namespace}/status`` resource and
``trimem view``: nothing about capture is silent."""

from __future__ import annotations

from .state import CaptureState

SHOWN = 20   # transcripts listed, newest capture first


def capture_status(home: str, namespace: str | None = None) -> dict:
    """The last capture of each transcript (of ``namespace``, when given), the markers still
    waiting, whether a drainer is running, and the hooks' own recent failures."""
    state = CaptureState(home)
    records = [r for r in state.transcripts()
               if namespace is None or r.get("namespace") == namespace]
    waiting = sum(len(v) for v in state.pending().values()) if state.root.exists() else 0
    return {
        "transcripts": len(records),
        "pending_events": waiting,
        "drainer_running": state.root.exists() and state.drainer_running(),
        "last": [{k: r.get(k) for k in ("transcript_path", "namespace", "session_id", "host",
                                        "last", "total")} for r in records[:SHOWN]],
        "hook_errors": state.errors()[-10:],
    }
