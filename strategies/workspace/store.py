"""The workspace's two tables, ``ws_threads`` and ``ws_edges`` (``graph.py`` says what they hold),
and their rows as typed, frozen objects.

This module is the only one that reads or writes these tables, and the only one that looks a
stored row up by column name: the rest of the strategy reads :class:`Thread` and :class:`Edge`
by attribute. A row is frozen, so the snapshot a recall reads (``cache.py``) can share rows with
the next one; what changes a row (an LLM-written head) builds a new one (``dataclasses.replace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from ...storage.budget import SAMPLE, sample_bytes

if TYPE_CHECKING:
    from ..space_api import StrategySpace

THREADS, EDGES = "ws_threads", "ws_edges"

THREAD_SCHEMA = pa.schema([   # the vector is sized to the namespace's model by storage
    ("id", pa.string()), ("namespace", pa.string()), ("session_id", pa.string()),
    ("scheme", pa.string()), ("idx", pa.int32()), ("seq_start", pa.int64()),
    ("seq_end", pa.int64()), ("source_ids", pa.list_(pa.string())), ("head", pa.string()),
    ("head_by", pa.string()), ("t_start", pa.string()), ("t_end", pa.string()),
    ("vector", pa.list_(pa.float32())),
])
EDGE_SCHEMA = pa.schema([
    ("id", pa.string()), ("namespace", pa.string()), ("scheme", pa.string()), ("src", pa.string()),
    ("dst", pa.string()), ("src_session", pa.string()), ("dst_session", pa.string()),
    ("weight", pa.float32()), ("etype", pa.string()),
])
THREAD_COLUMNS = ["id", "session_id", "scheme", "idx", "seq_start", "seq_end", "source_ids",
                  "head", "head_by", "t_start", "t_end", "vector"]
_NO_VECTOR = [c for c in THREAD_SCHEMA.names if c != "vector"]


@dataclass(frozen=True, slots=True)
class Thread:
    """One thread of a session under one segmentation scheme; the fields a read did not ask for
    keep their defaults."""

    id: str
    session_id: str = ""
    scheme: str = ""
    idx: int = 0
    seq_start: int = 0
    seq_end: int = 0
    source_ids: list[str] = field(default_factory=list)
    head: str = ""
    head_by: str = ""
    t_start: str = ""
    t_end: str = ""
    vector: Any = None        # the head h_j as read or built (list or array); None if not read
    namespace: str = ""

    @classmethod
    def of(cls, row: dict[str, Any]) -> Thread:
        return cls(row["id"], row.get("session_id") or "", row.get("scheme") or "",
                   row.get("idx") or 0, row.get("seq_start") or 0, row.get("seq_end") or 0,
                   row.get("source_ids") or [], row.get("head") or "", row.get("head_by") or "",
                   row.get("t_start") or "", row.get("t_end") or "", row.get("vector"),
                   row.get("namespace") or "")

    def as_dict(self, vector: bool = True) -> dict[str, Any]:
        """The row by column name (without ``namespace`` when unset: storage fills it in)."""
        out = {c: getattr(self, c) for c in (THREAD_COLUMNS if vector else THREAD_COLUMNS[:-1])}
        if self.namespace:
            out["namespace"] = self.namespace
        return out


@dataclass(frozen=True, slots=True)
class Edge:
    """One directed edge of the thread graph (each edge is stored in both directions)."""

    id: str = ""
    scheme: str = ""
    src: str = ""
    dst: str = ""
    src_session: str = ""
    dst_session: str = ""
    weight: float = 0.0
    etype: str = ""

    @classmethod
    def of(cls, row: dict[str, Any]) -> Edge:
        return cls(row.get("id") or "", row.get("scheme") or "", row.get("src") or "",
                   row.get("dst") or "", row.get("src_session") or "",
                   row.get("dst_session") or "", row.get("weight") or 0.0, row.get("etype") or "")

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in EDGE_SCHEMA.names if c != "namespace"}


def declare(space: StrategySpace) -> None:
    """Tell the space that ``ws_threads`` carries vectors (so its model-tagged name is used even
    in a process that has not written it yet)."""
    space.derived.table(THREADS, THREAD_SCHEMA)


def counts(space: StrategySpace) -> tuple[int, int]:
    """The row counts of the thread and edge tables."""
    return (space.derived.count_rows(THREADS), space.derived.count_rows(EDGES))


def threads(space: StrategySpace, eq: dict[str, Any] | None = None,
            columns: list[str] | None = None) -> list[Thread]:
    return [Thread.of(r) for r in space.derived.rows(THREADS, eq=eq, columns=columns)]


def nearest_threads(space: StrategySpace, vectors: list, k: int,
                    scheme: str) -> list[list[tuple[Thread, float]]]:
    """For each vector, the ``k`` threads of ``scheme`` nearest to it (id, session and head
    read) with their cosine, nearest first."""
    found = space.derived.nearest_many(THREADS, vectors, k, eq={"scheme": scheme},
                               columns=["id", "session_id", "vector"])
    return [[(Thread.of(r), r["similarity"]) for r in near] for near in found]


def edges_from(space: StrategySpace, thread_id: str) -> list[Edge]:
    return [Edge.of(r) for r in space.derived.rows(EDGES, eq={"src": thread_id},
                                           columns=["dst", "weight", "etype"])]


def write_session(space: StrategySpace, session_id: str, rows: list[Thread]) -> list[Thread]:
    """Replace the session's threads (and drop the edges touching them) by ``rows``; returns the
    rows as stored (each vector as the values the table keeps: float16, read as float32)."""
    declare(space)
    space.derived.delete_rows(EDGES, {"src_session": session_id})
    space.derived.delete_rows(EDGES, {"dst_session": session_id})
    space.derived.delete_rows(THREADS, {"session_id": session_id})
    rows = [replace(r, vector=space.derived.stored_vector(THREADS, r.vector),
                    namespace=space.namespace) for r in rows]
    if rows:
        space.derived.upsert(THREADS, THREAD_SCHEMA, [r.as_dict() for r in rows])
    return rows


def add_edges(space: StrategySpace, edges: list[Edge]) -> None:
    space.derived.upsert(EDGES, EDGE_SCHEMA, [e.as_dict() for e in edges])


def replace_edges(space: StrategySpace, schemes: tuple[str, ...], edges: list[Edge]) -> None:
    """The whole graph of these schemes replaced by ``edges``."""
    for scheme in schemes:
        space.derived.delete_rows(EDGES, {"scheme": scheme})
    add_edges(space, edges)


def delete_threads(space: StrategySpace, ids: list[str]) -> None:
    """These threads and every edge touching them."""
    space.derived.delete_rows(EDGES, {"src": ids})
    space.derived.delete_rows(EDGES, {"dst": ids})
    space.derived.delete_rows(THREADS, {"id": ids})


def every_thread(space: StrategySpace, with_rows: int) -> tuple[list[Thread], np.ndarray | None]:
    """Every thread (without its head vector) and the heads as one matrix, read column-wise
    (``Space.columns``): at 100k units, 24k threads as row dicts with their heads as lists of
    floats took seconds. ``with_rows``: the table's row count (0: nothing is read)."""
    if not with_rows:
        return [], None
    cols, vecs = space.derived.columns(THREADS, _NO_VECTOR + ["vector"])
    return [Thread.of(dict(zip(_NO_VECTOR, vals))) for vals in zip(*(cols[c] for c in _NO_VECTOR))], vecs


def every_edge(space: StrategySpace) -> Iterator[tuple[str, str, str, float, str]]:
    """(scheme, src, dst, weight, etype) of every edge, read column-wise."""
    e = space.derived.columns(EDGES, ["scheme", "src", "dst", "weight", "etype"])[0]
    return zip(e["scheme"], e["src"], e["dst"], e["weight"], e["etype"])


def thread_bytes(rows: list[Thread]) -> int:
    """What ``rows`` (without their vectors) take, estimated as ``budget.sample_bytes`` does
    for the same rows as dicts."""
    if not rows:
        return 0
    sample = rows[::max(1, len(rows) // SAMPLE)][:SAMPLE]
    return sample_bytes([r.as_dict(vector=False) for r in sample]) * len(rows) // len(sample)
