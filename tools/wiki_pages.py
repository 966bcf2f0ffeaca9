"""The Memory Wiki as MCP resources: ``trimem://{namespace}/wiki/{page}`` and an index.

Registered by ``server/app.py`` after the tools. The namespace check is the one every reading
tool makes (``namespaces.require_for_resource``: a resource read never creates a namespace);
the page text comes from the wiki strategy (``strategies/wiki/resources.py``).
"""

from __future__ import annotations

from ..strategies.wiki.resources import page_text
from .namespaces import require_for_resource
from .runtime import Runtime


def read_page(rt: Runtime, namespace: str, page: str) -> str:
    ns = require_for_resource(rt, namespace)
    return page_text(rt.space(ns), ns, page)


def register(server, rt: Runtime) -> None:
    @server.resource("trimem://{namespace}/wiki/{page}", name="wiki-page",
                     mime_type="text/markdown")
    def wiki_page(namespace: str, page: str) -> str:
        """One Memory Wiki page (index, entity, topic or inventory) of a namespace."""
        return read_page(rt, namespace, page)

    @server.resource("trimem://{namespace}/wiki", name="wiki-index", mime_type="text/markdown")
    def wiki_index(namespace: str) -> str:
        """The Memory Wiki's index page of a namespace: every page with its link count."""
        return read_page(rt, namespace, "index")
