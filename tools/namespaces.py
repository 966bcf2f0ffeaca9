"""Namespaces as first-class things: the check every reading tool makes, and what two resources
(``server/resources.py``) serve.

Only ``remember`` creates a namespace. ``recall``, ``explain``, ``consolidate`` and ``forget`` on
a name that does not exist answer a tool error naming the known ones, and write nothing (no
table, no recall log). The resources:

- ``trimem://namespaces``: every namespace with its counts of sources and sessions;
- ``trimem://{namespace}/status``: one namespace's sources, sessions, curation queue and
  failures, last consolidation and bytes on disk.

Both are JSON. Namespace names are the caller's strings: inside JSON they stay quoted data.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from . import validate as v
from .answer import names as list_names
from .answer import quoted
from .errors import ToolFailure
from .runtime import Runtime

if TYPE_CHECKING:
    from ..storage.rows import Session
    from ..storage.space import Space


def known(rt: Runtime) -> list[str]:
    return rt.store.namespaces()


def require(rt: Runtime, namespace: str) -> str:
    """The validated name of an existing namespace, else a tool error listing the known ones.
    A name seen once is remembered (namespaces are never removed); an unseen one is looked up
    again, since another process may have created it."""
    ns = v.namespace(namespace, rt.limits)
    seen = rt.__dict__.setdefault("_known_namespaces", set())
    if ns in seen:
        return ns
    names = known(rt)
    seen.update(names)
    if ns not in names:
        hint = (f"known: {list_names(names)}" if names else
                "none exists yet: `remember` creates one")
        raise ToolFailure(f"no namespace {quoted(ns)}; {hint}")
    return ns


def _sessions(space: Space) -> list[Session]:
    return [s for s in space.sessions.all() if s.namespace == space.namespace]


def listing(rt: Runtime) -> dict[str, Any]:
    out = []
    for ns in known(rt):
        space = rt.space(ns)
        out.append({"namespace": ns, "sources": space.sources.count(),
                    "sessions": len(_sessions(space))})
    return {"namespaces": out,
            "status": "read trimem://{namespace}/status for one namespace (the name "
                      "percent-encoded: all but A-Z a-z 0-9 - . _ ~)"}


def status(rt: Runtime, namespace: str) -> dict[str, Any]:
    ns = require(rt, namespace)
    space = rt.space(ns)
    sessions = _sessions(space)
    state = [s.curation for s in sessions]
    failures = [{"session_id": sid, "error": err} for sid, err in rt.curation.failures.recent(ns)]
    runs = space.derived.rows("audit", eq={"op": "consolidate"}, columns=["at", "detail"])
    last = max(runs, key=lambda r: r["at"]) if runs else None
    return {
        "namespace": ns,
        "sources": space.sources.count(),
        "sessions": len(sessions),
        "curation": {"queued": state.count("queued"), "failed": state.count("failed"),
                     "done": state.count("done"),
                     "failed_sessions": [s.session_id for s in sessions
                                         if s.curation == "failed"][:50],
                     "recent_failures_in_this_process": failures},
        "last_consolidation": None if last is None else {
            "at": last["at"].isoformat(),
            "trigger": json.loads(last["detail"]).get("trigger", "request")},
        "bytes_on_disk": space.disk_bytes(),
        "tables": space.stats(),
        "embedder": rt.embedder_choice.as_dict() | {"model": rt.embedder.name},
    }
