"""The resources as MCP adapters over the service layer: the namespace listing and status
(``tools/namespaces.py``) and the Memory Wiki's pages (``tools/wiki_pages.py``).

A resource read never creates a namespace; an unknown one is the same message a tool gives,
raised as the SDK's ``ResourceError`` (the client gets it as a protocol error).
"""

from __future__ import annotations

import functools
import json
from urllib.parse import unquote

from mcp.server.mcpserver.exceptions import ResourceError

from ..tools.errors import ToolFailure
from ..tools.namespaces import listing, status
from ..tools.runtime import Runtime
from ..tools.wiki_pages import read_page


def reported(fn):
    """A resource function whose ``ToolFailure`` reaches the client as a ``ResourceError``."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except ToolFailure as exc:
            raise ResourceError(str(exc)) from exc
    return wrapper


def register(server, rt: Runtime) -> None:
    @server.resource("trimem://namespaces", name="namespaces", mime_type="application/json",
                     description="Every namespace of this memory, with its counts of sources "
                                 "(stored messages) and sessions.")
    @reported   # a store that cannot be opened says so
    def namespaces_resource() -> str:
        return json.dumps(listing(rt), ensure_ascii=False, indent=1, default=str)

    @server.resource("trimem://{namespace}/status", name="namespace-status",
                     mime_type="application/json",
                     description="One namespace's status: sources, sessions, curation queue and "
                                 "failures, last consolidation, bytes on disk, and the last "
                                 "capture of each host transcript.")
    @reported
    def namespace_status(namespace: str) -> str:
        from ..capture.status import capture_status

        name = unquote(namespace)
        out = status(rt, name)
        out["capture"] = capture_status(rt.config.home, name)   # what the host's hooks stored
        return json.dumps(out, ensure_ascii=False, indent=1, default=str)

    @server.resource("trimem://{namespace}/wiki/{page}", name="wiki-page",
                     mime_type="text/markdown")
    @reported
    def wiki_page(namespace: str, page: str) -> str:
        """One Memory Wiki page (index, entity, topic or inventory) of a namespace."""
        return read_page(rt, namespace, page)

    @server.resource("trimem://{namespace}/wiki", name="wiki-index", mime_type="text/markdown")
    @reported
    def wiki_index(namespace: str) -> str:
        """The Memory Wiki's index page of a namespace: every page with its link count."""
        return read_page(rt, namespace, "index")
