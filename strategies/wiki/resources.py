"""The Memory Wiki's pages as text, for the MCP resources ``trimem://{namespace}/wiki/{page}``.

``tools/wiki_pages.py`` registers the resources and checks the namespace (a resource read never
creates one); this module only renders. Pages are read-only views of the stored ``wiki_pages``
rows: their Markdown content lists claims with their refs, then the linked trajectories.
Everything on a page derives from stored strings, so the page is returned inside a
``frame.wiki_frame`` (tags neutralised), and its lines were built with ``frame.one_line`` (no
name can start a line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from ..frame import one_line, wiki_frame

if TYPE_CHECKING:
    from ..space_api import StrategySpace


def page_text(space: StrategySpace, ns: str, page: str) -> str:
    """The page ``page`` (``index``, ``entity-...``; ``wiki-`` prefix optional) of ``space``."""
    from .store import ensure, pages  # lazy: lancedb (wiki store), not at start-up

    ensure(space)
    pid = page if page.startswith("wiki-") else f"wiki-{page}"
    rows = pages(space, eq={"id": pid}, columns=["id", "type", "title", "text", "trajectory_ids"])
    if not rows:
        return (f"no wiki page {one_line(page)!r} in namespace {one_line(ns)!r}; read "
                f"trimem://{quote(ns, safe='')}/wiki/index")
    p = rows[0]
    links = "\n".join(f"- {one_line(t)}" for t in p.trajectory_ids[:200])
    return wiki_frame(f"{p.text}\n\n## trajectories ({len(p.trajectory_ids)})\n{links}\n")
