"""The Memory Wiki's pages, as the resources ``trimem://{namespace}/wiki/{page}`` and an index
serve them (``server/resources.py``). The namespace check is the one every reading
tool makes (``namespaces.require``: a resource read never creates a namespace);
the page text comes from the wiki strategy (``strategies/wiki/resources.py``).
"""

from __future__ import annotations

from ..strategies.wiki.resources import page_text
from .namespaces import require
from .runtime import Runtime


def read_page(rt: Runtime, namespace: str, page: str) -> str:
    ns = require(rt, namespace)
    return page_text(rt.space(ns), ns, page)
