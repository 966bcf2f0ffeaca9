"""The wiki strategy's tables and how curation writes them.

Five tables per namespace (through ``space.derived.upsert/rows/nearest/text_search`` only):
``wiki_snapshots`` (immutable, one per exchange; its vector is its sources' mean, computed by
``load_snapshots``, not stored), ``wiki_claims`` (every claim ever extracted,
with its edit op and status), ``wiki_trajectories`` (ordered snapshot ids + the serialised
builder state of the trajectory; not its snapshots' text, which nothing read: a table of the
earlier shape is rewritten without it by ``put_trajectories``), ``wiki_pages`` (the Memory
Wiki) and ``wiki_groups`` (the state each page is maintained from, ``groups.py``).

How curation writes them is in ``curate.py`` (incremental appends, full replays); the pages'
own state is in ``groups.py``. A page is read and written as a frozen :class:`Page` row, through
the functions here only.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ...storage.derived import MODEL_BOUND
from .claims import snapshot_vector
from .trajectories import dump_state

if TYPE_CHECKING:
    from ..space_api import StrategySpace

log = logging.getLogger(__name__)
SNAP, CLAIM, TRAJ, PAGE = "wiki_snapshots", "wiki_claims", "wiki_trajectories", "wiki_pages"
TS = pa.timestamp("us", tz="UTC")
VEC = pa.list_(pa.float32())   # sized to the namespace's model by storage (derived.sized)
S = pa.string()
L = pa.list_(pa.string())

# no vector: a snapshot's is its sources' (``claims.snapshot_vector``), computed when it is read;
# still model-bound, so a model switch drops the snapshots with the trajectories built on them
SNAP_SCHEMA = pa.schema([("id", S), ("namespace", S), ("session_id", S), ("seq", pa.int64()),
                         ("idx", pa.int64()), ("timestamp", TS), ("session_time", TS),
                         ("speakers", L), ("source_ids", L), ("refs", L), ("text", S),
                         ("claims", S), ("names", L), ("heads", L), ("facets", L)],
                        metadata=MODEL_BOUND)
CLAIM_SCHEMA = pa.schema([("id", S), ("namespace", S), ("snapshot_id", S), ("trajectory_id", S),
                          ("position", pa.int64()), ("session_id", S), ("source_id", S),
                          ("ref", S), ("speaker", S), ("subject", S), ("timestamp", S),
                          ("text", S), ("slot", S), ("op", S), ("target", S), ("status", S),
                          ("by", S), ("names", L), ("facets", L), ("heads", L), ("dates", S)])
TRAJ_SCHEMA = pa.schema([("id", S), ("namespace", S), ("title", S),
                         ("snapshot_ids", L), ("source_ids", L), ("sessions", L), ("names", L),
                         ("heads", L), ("facets", L), ("speakers", L), ("n", pa.int64()),
                         ("first_time", TS), ("last_time", TS), ("status", S), ("continues", S),
                         ("state", S), ("vector", VEC)])
CLAIM_COLS = [f.name for f in CLAIM_SCHEMA if f.name != "namespace"]
PAGE_SCHEMA = pa.schema([("id", S), ("namespace", S), ("type", S), ("key", S), ("title", S),
                         ("text", S), ("trajectory_ids", L), ("names", L), ("facets", L),
                         ("subject", S), ("first_time", TS), ("last_time", TS),
                         ("n_links", pa.int64()), ("hub", pa.bool_()), ("vector", VEC)])
PAGE_COLUMNS = [f.name for f in PAGE_SCHEMA if f.name != "namespace"]
GROUP = "wiki_groups"
GROUP_SCHEMA = pa.schema([("id", S), ("namespace", S), ("kind", S), ("key", S),
                          ("live", pa.bool_()), ("state", S), ("sum", pa.binary())],
                         metadata=MODEL_BOUND)


def ensure(space: StrategySpace) -> None:
    """Declare the vector-bearing schemas, so reads in a fresh process find the model-tagged
    tables (``Space.name`` only knows a derived kind has vectors once it has seen its schema)."""
    for kind, schema in ((SNAP, SNAP_SCHEMA), (TRAJ, TRAJ_SCHEMA), (PAGE, PAGE_SCHEMA),
                         (GROUP, GROUP_SCHEMA)):
        space.derived.table(kind, schema)


# Filter columns of each table (what ``space.derived.rows(eq=...)`` looks up), indexed by
# ``index_tables`` so that curation's and recall's lookups do not scan a growing table.
INDEXES = {SNAP: {"id": "btree", "session_id": "btree"},
           CLAIM: {"id": "btree", "trajectory_id": "btree", "source_id": "btree", "slot": "btree"},
           TRAJ: {"id": "btree", "status": "bitmap"},
           PAGE: {"id": "btree", "key": "btree"},
           GROUP: {"id": "btree"}}


def index_tables(space: StrategySpace, rebuild: bool = False) -> None:
    """Scalar indexes on the wiki tables' filter columns (once per process per table);
    ``rebuild`` after a forget, so no deleted key survives in an index segment."""
    for kind, cols in INDEXES.items():
        space.derived.scalar_indexes(kind, cols, rebuild)


def load_snapshots(space: StrategySpace, ids: list[str] | None = None) -> list[dict]:
    """Snapshot rows, each with its vector computed from its sources' (as when it was made)."""
    rows = space.derived.rows(SNAP, eq={"id": ids} if ids is not None else None)
    return _with_vectors(space, rows)


def snapshot_vectors(space: StrategySpace, ids: list[str]) -> dict[str, np.ndarray]:
    """The vectors of snapshots ``ids`` (those that exist), by id."""
    rows = space.derived.rows(SNAP, eq={"id": sorted(set(ids))}, columns=["id", "source_ids"]) if ids else []
    return {r["id"]: r["vector"] for r in _with_vectors(space, rows)}


def _with_vectors(space: StrategySpace, rows: list[dict]) -> list[dict]:
    vectors = space.sources.vectors(sorted({i for r in rows for i in r["source_ids"]}))
    for r in rows:
        r["vector"] = snapshot_vector(r["source_ids"], vectors, space.dim)
    return rows


def put_snapshots(space: StrategySpace, snaps: list[dict]) -> None:
    """Store snapshots (their vectors stay out); a table of the earlier shape, which stored
    them, is rewritten without them first."""
    space.derived.reshape(SNAP, SNAP_SCHEMA, lambda r: {k: v for k, v in r.items() if k != "vector"})
    space.derived.upsert(SNAP, SNAP_SCHEMA, [{k: v for k, v in s.items() if k != "vector"}
                                     for s in snaps])


def put_trajectories(space: StrategySpace, rows: list[Trajectory]) -> None:
    """Store trajectory rows; a table of the earlier shape (with the snapshots' text copied
    into each row) is rewritten without that column first."""
    space.derived.reshape(TRAJ, TRAJ_SCHEMA, lambda r: {k: v for k, v in r.items() if k != "text"})
    space.derived.upsert(TRAJ, TRAJ_SCHEMA, [r.as_dict() for r in rows])


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One stored trajectory (``TRAJ_SCHEMA``): its snapshots in order, what they are about, its
    time span and status, the builder's state as JSON text (``trajectories.Builder`` parses it)
    and its centroid, as a read-only float32 array when read; the fields a read did not ask for
    keep their defaults."""

    id: str
    title: str = ""
    snapshot_ids: list[str] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    facets: list[str] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)
    n: int = 0
    first_time: datetime | None = None
    last_time: datetime | None = None
    status: str = ""
    continues: str | None = None
    state: str = ""
    vector: Any = None
    namespace: str = ""

    @classmethod
    def of(cls, row: dict[str, Any]) -> Trajectory:
        v = row.get("vector")
        if v is not None:
            v = np.asarray(v, dtype=np.float32)
            v.flags.writeable = False    # rows are shared (``Space.memo``): nobody changes one
        return cls(row.get("id") or "", row.get("title") or "", row.get("snapshot_ids") or [],
                   row.get("source_ids") or [], row.get("sessions") or [], row.get("names") or [],
                   row.get("heads") or [], row.get("facets") or [], row.get("speakers") or [],
                   row.get("n") or 0, row.get("first_time"), row.get("last_time"),
                   row.get("status") or "", row.get("continues"), row.get("state") or "", v,
                   row.get("namespace") or "")

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in TRAJ_COLUMNS}

    def view(self, columns: list[str]) -> dict[str, Any]:
        """These columns and ``namespace`` by name, as a read of them returns a row."""
        return {c: getattr(self, c) for c in sorted(set(columns) | {"namespace"})}


TRAJ_COLUMNS = [f.name for f in TRAJ_SCHEMA if f.name != "namespace"]


def trajectories(space: StrategySpace, eq: dict[str, Any] | None = None,
                 columns: list[str] | None = None,
                 contains: dict[str, str] | None = None) -> list[Trajectory]:
    return [Trajectory.of(r) for r in space.derived.rows(TRAJ, eq=eq, columns=columns, contains=contains)]


def count_trajectories(space: StrategySpace) -> int:
    return space.derived.count_rows(TRAJ)


def delete_trajectories(space: StrategySpace, ids: list[str]) -> None:
    space.derived.delete_rows(TRAJ, {"id": ids})


def order_key(s: dict):
    t = s.get("session_time") or s.get("timestamp")
    return (t.timestamp() if t is not None else 0.0, s["session_id"], s["idx"])


def claim_row(c: dict) -> dict:
    out = {k: c.get(k) for k in CLAIM_COLS}
    out["dates"] = json.dumps(c.get("dates") or [])
    for k in ("slot", "target", "by", "timestamp", "ref", "speaker", "subject"):
        out[k] = out[k] or ""
    for k in ("names", "facets", "heads"):
        out[k] = list(out[k] or [])
    return out


def traj_row(T, snaps: list[dict]) -> Trajectory:
    claims = [c for s in snaps for c in json.loads(s["claims"])]
    names = [n for c in claims for n in c["names"]]
    heads = [h for c in claims for h in c["heads"]]
    top = sorted(set(names), key=lambda n: -names.count(n))[:3] or \
        sorted(set(heads), key=lambda h: -heads.count(h))[:3]
    times = [s["timestamp"] for s in snaps if s.get("timestamp") is not None]
    return Trajectory(
        T.id, title=", ".join(top) or (claims[0]["text"][:60] if claims else T.id),
        snapshot_ids=[s["id"] for s in snaps],
        source_ids=[i for s in snaps for i in s["source_ids"]],
        sessions=sorted({s["session_id"] for s in snaps}), names=sorted(set(names)),
        heads=sorted(set(heads)), facets=sorted({f for s in snaps for f in s["facets"]}),
        speakers=sorted({p for s in snaps for p in s["speakers"]}), n=len(snaps),
        first_time=min(times) if times else None, last_time=max(times) if times else None,
        status="closed" if T.closed else "open", continues=T.continues,
        state=dump_state(T), vector=T.sum / (np.linalg.norm(T.sum) or 1.0))



@dataclass(frozen=True, slots=True)
class Page:
    """One wiki page (``pages.py``): type, key, title, text, linked trajectories and the rest of
    ``PAGE_SCHEMA``; the fields a read did not ask for keep their defaults."""

    id: str
    type: str = ""
    key: str = ""
    title: str = ""
    text: str = ""
    trajectory_ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    facets: list[str] = field(default_factory=list)
    subject: str = ""
    first_time: datetime | None = None
    last_time: datetime | None = None
    n_links: int = 0
    hub: bool = False
    vector: Any = None          # as read or built (list or array); None when not read
    namespace: str = ""

    @classmethod
    def of(cls, row: dict[str, Any]) -> Page:
        return cls(row["id"], row.get("type") or "", row.get("key") or "", row.get("title") or "",
                   row.get("text") or "", row.get("trajectory_ids") or [], row.get("names") or [],
                   row.get("facets") or [], row.get("subject") or "", row.get("first_time"),
                   row.get("last_time"), row.get("n_links") or 0, bool(row.get("hub")),
                   row.get("vector"), row.get("namespace") or "")

    def as_dict(self) -> dict[str, Any]:
        """The row by column name, as stored (storage fills in ``namespace``)."""
        return {c: getattr(self, c) for c in PAGE_COLUMNS}

    def view(self, columns: list[str]) -> dict[str, Any]:
        """These columns and ``namespace`` by name, as a read of them returns a row."""
        return {c: getattr(self, c) for c in sorted(set(columns) | {"namespace"})}


def pages(space: StrategySpace, eq: dict[str, Any] | None = None,
          columns: list[str] | None = None) -> list[Page]:
    return [Page.of(r) for r in space.derived.rows(PAGE, eq=eq, columns=columns)]


def page_keys(space: StrategySpace, ids: list[str]) -> dict[str, str]:
    """The key of each stored page of ``ids`` (id -> key)."""
    return {p.id: p.key for p in pages(space, eq={"id": ids}, columns=["id", "key"])}


def page_ids(space: StrategySpace) -> list[str]:
    return [p.id for p in pages(space, columns=["id"])]


def nearest_pages(space: StrategySpace, vector: np.ndarray, k: int, columns: list[str]) -> list[Page]:
    """The ``k`` pages nearest to ``vector`` by cosine, nearest first."""
    return [Page.of(r) for r in space.derived.nearest(PAGE, vector, k, columns=columns)]


def page_bm25(space: StrategySpace, query: str, k: int) -> dict[str, float]:
    """The BM25 score of the ``k`` pages whose text matches ``query`` best, by page id."""
    return {r["id"]: r["bm25"] for r in space.derived.text_search(PAGE, query, k, columns=["id"])}


def put_pages(space: StrategySpace, rows: list[Page]) -> None:
    space.derived.upsert(PAGE, PAGE_SCHEMA, [p.as_dict() for p in rows])


def delete_pages(space: StrategySpace, ids: list[str]) -> None:
    space.derived.delete_rows(PAGE, {"id": ids})


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One stored page group (``groups.py``): its id ``kind|key``, whether it is a page, its
    state as JSON text (``groups.Group`` is what it parses into) and its running vector sum as
    float64 bytes (empty where it is not kept)."""

    id: str
    kind: str = ""
    key: str = ""
    live: bool = False
    state: str | None = None
    sum: bytes | None = None

    @classmethod
    def of(cls, row: dict[str, Any]) -> GroupRow:
        return cls(row["id"], row.get("kind") or "", row.get("key") or "", bool(row.get("live")),
                   row.get("state"), row.get("sum"))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "key": self.key, "live": self.live,
                "state": self.state, "sum": self.sum}


def group_rows(space: StrategySpace, ids: list[str], columns: list[str]) -> list[GroupRow]:
    return [GroupRow.of(r) for r in space.derived.rows(GROUP, eq={"id": ids}, columns=columns)]


def group_ids(space: StrategySpace) -> list[str]:
    return [r["id"] for r in space.derived.rows(GROUP, columns=["id"])]


def delete_groups(space: StrategySpace, ids: list[str]) -> None:
    space.derived.delete_rows(GROUP, {"id": ids})


def put_groups(space: StrategySpace, rows: list[GroupRow]) -> None:
    space.derived.upsert(GROUP, GROUP_SCHEMA, [g.as_dict() for g in rows])


def upgrade_groups(space: StrategySpace) -> None:
    """Rewrite a ``wiki_groups`` table of the earlier shape (the sum base64 in the JSON state,
    a ``vector`` column no query read) into this one; the pages' sums carry over bit for bit."""
    space.derived.reshape(GROUP, GROUP_SCHEMA, _group_shape)


def _group_shape(row: dict) -> dict:
    d = json.loads(row["state"]) if row.get("state") else {}
    total = base64.b64decode(d.pop("v")) if d.get("v") else row.get("sum")
    return {"id": row["id"], "kind": row["kind"], "key": row["key"], "live": row["live"],
            "state": json.dumps(d, ensure_ascii=False), "sum": total if row["live"] else b""}
