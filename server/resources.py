"""The resources as MCP adapters over the service layer: the namespace listing and status
(``tools/namespaces.py``) and the Memory Wiki's pages (``tools/wiki_pages.py``).

A resource read never creates a namespace; an unknown one is the same message a tool gives,
raised as the SDK's ``ResourceError`` (the client gets it as a protocol error).

Every valid namespace name has exactly one resource URI: the name percent-encoded as RFC 6570's
simple expansion does it (every character but ``A-Z a-z 0-9 - . _ ~``, as UTF-8 bytes; Python's
``urllib.parse.quote(name, safe="")``), e.g. ``a/b`` -> ``trimem://a%2Fb/status``. The SDK
decodes it once, and that is the name: it is not decoded again (``trimem://%252e/status`` is the
namespace ``%2e``), so no name answers for another. A namespace is never a file path
(storage keys each by a slug and a digest of the exact name), so the SDK's path checks, which
would refuse names such as ``..``, ``/x`` or ``C:\\x``, are off for the namespace; a ``/`` in a
URI never ends up in one (the template's ``{namespace}`` stops there), so
``trimem://a/../status`` names nothing.
"""

from __future__ import annotations

import functools
import json

from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.resources.templates import ResourceSecurity

from ..tools.errors import ToolFailure
from ..tools.namespaces import listing, status
from ..tools.runtime import Runtime
from ..tools.wiki_pages import read_page
from ..capture.status import capture_status


def reported(fn):
    """A resource function whose ``ToolFailure`` reaches the client as a ``ResourceError``."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except ToolFailure as exc:
            raise ResourceError(str(exc)) from exc
    return wrapper


# a namespace is a name, not a path (see the module docstring); a wiki page id keeps the checks
NAME_NOT_PATH = ResourceSecurity(exempt_params={"namespace"})


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
                                 "capture of each host transcript. The namespace is "
                                 "percent-encoded (all but A-Z a-z 0-9 - . _ ~).",
                     security=NAME_NOT_PATH)
    @reported
    def namespace_status(namespace: str) -> str:
        out = status(rt, namespace)   # decoded once, by the SDK: the name itself
        out["capture"] = capture_status(rt.config.home, namespace)   # what the hooks stored
        return json.dumps(out, ensure_ascii=False, indent=1, default=str)

    @server.resource("trimem://{namespace}/wiki/{page}", name="wiki-page",
                     mime_type="text/markdown", security=NAME_NOT_PATH)
    @reported
    def wiki_page(namespace: str, page: str) -> str:
        """One Memory Wiki page (index, entity, topic or inventory) of a namespace."""
        return read_page(rt, namespace, page)

    @server.resource("trimem://{namespace}/wiki", name="wiki-index", mime_type="text/markdown",
                     security=NAME_NOT_PATH)
    @reported
    def wiki_index(namespace: str) -> str:
        """The Memory Wiki's index page of a namespace: every page with its link count."""
        return read_page(rt, namespace, "index")
