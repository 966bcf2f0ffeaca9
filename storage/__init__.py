"""Persistence: LanceDB tables under TRIMEM_HOME. The only package that imports lancedb."""

from .errors import ForgetRaced, NotFound, StorageError
from .filters import SourceFilter
from .rows import Session, Source

__all__ = ["ForgetRaced", "NotFound", "Session", "Source", "SourceFilter", "StorageError", "open_store"]


def open_store(home, **kw):
    """Open (or create) the store at ``home`` (a folder or an object-store URI)."""
    from .db import Store  # lazy: storage.db loads lancedb, not at start-up

    return Store(home, **kw)
