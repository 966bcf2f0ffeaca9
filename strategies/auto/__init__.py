"""``auto``: fuse the strategies' rankings per query, weighted by the query's kind."""

from .strategy import AutoStrategy

__all__ = ["AutoStrategy"]
