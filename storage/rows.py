"""Typed rows: what storage hands back above itself, instead of dicts keyed by column name.

A :class:`Source` is one stored message as read: frozen, so a row a cache holds (the sources'
in-process copy, a recall's ``TurnSearch``, the workspace's unit cache) can be shared without
copying and no caller can change it for another. What a caller adds to a row (a score, the
passage a search matched) goes into a new object (``span``: :meth:`Source.with_span`) or a
wrapper of the caller's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# The sources' columns as storage reads them (the vector aside), in the order of ``as_dict``.
SOURCE_COLUMNS = ["id", "namespace", "session_id", "seq", "ref", "speaker", "timestamp", "text",
                  "metadata", "embed_model", "created_at"]


@dataclass(frozen=True, slots=True)
class Source:
    """One stored message (a row of the ``sources`` table, without its vector)."""

    id: str
    namespace: str
    session_id: str
    seq: int
    ref: str | None
    speaker: str | None
    timestamp: datetime | None
    text: str
    metadata: dict[str, Any] | None    # parsed from the stored JSON; None when absent
    embed_model: str | None
    created_at: datetime | None
    # for a long message: the offsets of the passage the latest searches matched best
    # (``storage/passages.py``), which is what a recall quotes of it; None otherwise
    span: tuple[int, int] | None = None

    @classmethod
    def of(cls, row: dict[str, Any]) -> Source:
        """From a row as LanceDB returns it, ``metadata`` already parsed (a copy of it kept)."""
        meta = row.get("metadata")
        return cls(row["id"], row["namespace"], row["session_id"], row["seq"], row.get("ref"),
                   row.get("speaker"), row.get("timestamp"), row["text"],
                   dict(meta) if meta else meta, row.get("embed_model"), row.get("created_at"))

    def with_span(self, span: tuple[int, int] | None) -> Source:
        return replace(self, span=span)

    def view(self, *fields: str) -> dict[str, Any]:
        """These fields of the row, by name, in this order: what a tool shows of it (JSON)."""
        return {k: getattr(self, k) for k in fields}


# The sessions' columns (``schema.SESSIONS``), in the order of ``Session.as_dict``.
SESSION_COLUMNS = ["session_id", "namespace", "session_time", "first_ts", "last_ts", "n_messages",
                   "curation", "created_at", "updated_at"]


@dataclass(frozen=True, slots=True)
class Session:
    """One session's row (the ``sessions`` table): when it took place, the span of its
    messages' times, how many it holds and where its curation stands. ``Sessions.put`` sets
    ``namespace`` and ``updated_at`` when it writes one."""

    session_id: str
    session_time: datetime | None = None
    first_ts: datetime | None = None
    last_ts: datetime | None = None
    n_messages: int = 0
    curation: str | None = None        # none | queued | done | failed
    created_at: datetime | None = None
    updated_at: datetime | None = None
    namespace: str = ""

    @classmethod
    def of(cls, row: dict[str, Any]) -> Session:
        """From a row as LanceDB returns it (or a session's JSON as ``as_dict`` gave it)."""
        return cls(row["session_id"], row.get("session_time"), row.get("first_ts"),
                   row.get("last_ts"), int(row.get("n_messages") or 0), row.get("curation"),
                   row.get("created_at"), row.get("updated_at"), row.get("namespace") or "")

    def with_curation(self, state: str) -> Session:
        return replace(self, curation=state)

    def as_dict(self) -> dict[str, Any]:
        """The row by column name: what the table stores."""
        return {k: getattr(self, k) for k in SESSION_COLUMNS}


@dataclass(frozen=True, slots=True)
class RecallRecord:
    """One record of the recall log as ``explain`` replays it: the query, the strategy, the
    sources the context held, and the trace as the recall produced it (the text of every
    message or memory it names read back by id: ``storage/traces.py``)."""

    recall_id: str
    namespace: str
    created_at: datetime | None
    query: str
    strategy: str
    source_ids: list[str]
    trace: dict[str, Any]           # a JSON document: each strategy's own keys
    trace_bytes: int                # what the stored (compacted) trace takes


# The memories' columns as storage reads them (the vector aside), in the order of ``as_dict``.
MEMORY_COLUMNS = ["id", "namespace", "kind", "origin", "session_id", "timestamp", "text", "body",
                  "source_ids", "refs", "status", "lineage", "embed_model", "created_at"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    """One derived memory (a row of the ``memories`` table): an episode, a fact or another kind
    a strategy stores, with the sources it was derived from. ``Memories.add`` sets
    ``namespace`` and ``embed_model`` when it writes one, and needs its ``vector``; a read
    carries the vector only when asked for (``vectors=True``)."""

    id: str
    kind: str
    text: str
    namespace: str = ""
    origin: str | None = None        # host | llm | heuristic | sampled | consolidation
    session_id: str | None = None
    timestamp: datetime | None = None
    body: dict[str, Any] = field(default_factory=dict)     # the kind's own fields (stored as JSON)
    source_ids: list[str] | None = None
    refs: list[str] | None = None
    status: str | None = "active"    # active | merged | superseded
    lineage: dict[str, Any] = field(default_factory=dict)  # stored as JSON
    embed_model: str | None = None
    created_at: datetime | None = None
    # the embedding of ``text`` (as LanceDB returns it, or as an embedder made it); not compared
    vector: list[float] | np.ndarray | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, row: dict[str, Any]) -> Memory:
        """From a row as LanceDB returns it, ``body`` and ``lineage`` already parsed."""
        return cls(id=row["id"], namespace=row.get("namespace") or "", kind=row["kind"],
                   origin=row.get("origin"), session_id=row.get("session_id"),
                   timestamp=row.get("timestamp"), text=row.get("text") or "",
                   body=row.get("body") or {}, source_ids=row.get("source_ids"),
                   refs=row.get("refs"), status=row.get("status"),
                   lineage=row.get("lineage") or {}, embed_model=row.get("embed_model"),
                   created_at=row.get("created_at"), vector=row.get("vector"))

    def with_source_ids(self, source_ids: list[str]) -> Memory:
        return replace(self, source_ids=source_ids)

    def with_vector(self, vector: list[float] | np.ndarray) -> Memory:
        return replace(self, vector=vector)

    def as_dict(self) -> dict[str, Any]:
        """The row by column name (``body`` and ``lineage`` parsed, no vector): what a tool
        shows of it."""
        return {k: getattr(self, k) for k in MEMORY_COLUMNS}
