"""The Memory Wiki as MCP resources: ``trimem://{namespace}/wiki/{page}`` and an index.

Register with ``register_resources(server, rt)`` from ``server/app.py`` (one line after the
tools are registered). Pages are read-only views of the stored ``wiki_pages`` rows: their
Markdown content lists claims with their refs, then the linked trajectories. Everything on a page
derives from stored strings, so the page is returned inside a ``frame.wiki_frame`` (tags
neutralised), and its lines were built with ``frame.one_line`` (no name can start a line).
"""

from __future__ import annotations


def read_page(rt, namespace: str, page: str) -> str:
    from ...tools.namespaces import require_for_resource
    from ..frame import one_line, wiki_frame
    from .pages import PAGE
    from .store import ensure

    ns = require_for_resource(rt, namespace)   # a resource read never creates a namespace
    space = rt.space(ns)
    ensure(space)
    pid = page if page.startswith("wiki-") else f"wiki-{page}"
    rows = space.rows(PAGE, eq={"id": pid}, columns=["id", "type", "title", "text",
                                                     "trajectory_ids"])
    if not rows:
        return f"no wiki page {one_line(page)!r} in namespace {ns!r}; read trimem://{ns}/wiki/index"
    p = rows[0]
    links = "\n".join(f"- {one_line(t)}" for t in p["trajectory_ids"][:200])
    return wiki_frame(f"{p['text']}\n\n## trajectories ({len(p['trajectory_ids'])})\n{links}\n")


def register_resources(server, rt) -> None:
    @server.resource("trimem://{namespace}/wiki/{page}", name="wiki-page",
                     mime_type="text/markdown")
    def wiki_page(namespace: str, page: str) -> str:
        """One Memory Wiki page (index, entity, topic or inventory) of a namespace."""
        return read_page(rt, namespace, page)

    @server.resource("trimem://{namespace}/wiki", name="wiki-index", mime_type="text/markdown")
    def wiki_index(namespace: str) -> str:
        """The Memory Wiki's index page of a namespace: every page with its link count."""
        return read_page(rt, namespace, "index")
