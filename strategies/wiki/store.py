"""The wiki strategy's tables and how curation writes them.

Five tables per namespace (through ``space.derived.upsert/rows/nearest/text_search`` only):
``wiki_snapshots`` (immutable, one per exchange; its vector is its sources' mean, computed by
``load_snapshots``, not stored), ``wiki_claims`` (every claim ever extracted,
with its edit op and status), ``wiki_trajectories`` (ordered snapshot ids + the serialised
builder state of the trajectory; not its snapshots' text, which nothing read: a table of the
earlier shape is rewritten without it by ``put_trajectories``), ``wiki_pages`` (the Memory
Wiki) and ``wiki_groups`` (the state each page is maintained from, ``groups.py``).

How curation writes them is in ``curate.py`` (incremental appends, full replays); the pages'
own state is in ``groups.py``. Every row is read and written as a frozen row of ``rows.py``
(:class:`Snapshot` with its :class:`Claim` s, a ``wiki_claims`` :class:`Claim`,
:class:`Trajectory`, :class:`Page`, :class:`GroupRow`), through the functions here only.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .claims import snapshot_vector
from .rows import (
    CLAIM_SCHEMA,
    GROUP_SCHEMA,
    PAGE_SCHEMA,
    SNAP_COLUMNS,
    SNAP_SCHEMA,
    TRAJ_SCHEMA,
    Claim,
    GroupRow,
    Page,
    Snapshot,
    Trajectory,
)
from .trajectories import dump_state

if TYPE_CHECKING:
    from ..space_api import StrategySpace
    from .trajectories import Traj

log = logging.getLogger(__name__)
SNAP, CLAIM, TRAJ, PAGE = "wiki_snapshots", "wiki_claims", "wiki_trajectories", "wiki_pages"
GROUP = "wiki_groups"
__all__ = ["CLAIM_SCHEMA", "GROUP_SCHEMA", "PAGE_SCHEMA", "SNAP_SCHEMA", "TRAJ_SCHEMA", "Claim",
           "GroupRow", "Page", "Snapshot", "Trajectory"]


def ensure(space: StrategySpace) -> None:
    """Declare the vector-bearing schemas, so reads in a fresh process find the model-tagged
    tables (``Space.name`` only knows a derived kind has vectors once it has seen its schema)."""
    for kind, schema in ((SNAP, SNAP_SCHEMA), (TRAJ, TRAJ_SCHEMA), (PAGE, PAGE_SCHEMA),
                         (GROUP, GROUP_SCHEMA)):
        space.derived.table(kind, schema)
    for kind, cols in COPY_OMITS.items():
        space.derived.omit_from_copy(kind, cols)


# Columns the in-process copies leave to LanceDB: no recall reads them, and they were most of
# what the copies held (at 20,000 turns a page's text 70 % of the pages' bytes: only BM25
# routing searches it, in LanceDB; a trajectory's builder state 68 %: only curation reads it,
# by id, for the few trajectories it does not already hold in memory).
COPY_OMITS = {PAGE: ["text"], TRAJ: ["state"]}


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


def snapshots(space: StrategySpace, eq: dict[str, Any] | None = None,
              columns: list[str] | None = None) -> list[Snapshot]:
    """Snapshot rows as stored (no vector); ``columns``: those read (default: all)."""
    return [Snapshot.of(r) for r in space.derived.rows(SNAP, eq=eq, columns=columns or SNAP_COLUMNS)]


def load_snapshots(space: StrategySpace, ids: list[str] | None = None) -> list[Snapshot]:
    """Snapshot rows, each with its vector computed from its sources' (as when it was made)."""
    rows = space.derived.rows(SNAP, eq={"id": ids} if ids is not None else None)
    return with_vectors(space, [Snapshot.of(r) for r in rows])


def snapshot_vectors(space: StrategySpace, ids: list[str]) -> dict[str, np.ndarray]:
    """The vectors of snapshots ``ids`` (those that exist), by id."""
    rows = space.derived.rows(SNAP, eq={"id": sorted(set(ids))}, columns=["id", "source_ids"]) if ids else []
    return {s.id: s.vector for s in with_vectors(space, [Snapshot.of(r) for r in rows])}


def with_vectors(space: StrategySpace, snaps: list[Snapshot]) -> list[Snapshot]:
    """``snaps`` (read without vectors) with their vectors, computed from their sources'."""
    vectors = space.sources.vectors(sorted({i for s in snaps for i in s.source_ids}))
    return [replace(s, vector=snapshot_vector(s.source_ids, vectors, space.dim)) for s in snaps]


def put_snapshots(space: StrategySpace, snaps: list[Snapshot]) -> None:
    """Store snapshots (their vectors stay out); a table of the earlier shape, which stored
    them, is rewritten without them first."""
    space.derived.reshape(SNAP, SNAP_SCHEMA, lambda r: {k: v for k, v in r.items() if k != "vector"})
    space.derived.upsert(SNAP, SNAP_SCHEMA, [s.as_dict() for s in snaps])


def delete_snapshots(space: StrategySpace, ids: list[str]) -> None:
    space.derived.delete_rows(SNAP, {"id": ids})


def claims(space: StrategySpace, eq: dict[str, Any] | None = None,
           columns: list[str] | None = None) -> list[Claim]:
    """Rows of ``wiki_claims``; ``columns``: those read (default: all)."""
    return [Claim.of(r) for r in space.derived.rows(CLAIM, eq=eq, columns=columns)]


def put_claims(space: StrategySpace, rows: list[Claim]) -> None:
    space.derived.upsert(CLAIM, CLAIM_SCHEMA, [c.as_dict() for c in rows])


def delete_claims(space: StrategySpace, ids: list[str]) -> None:
    space.derived.delete_rows(CLAIM, {"id": ids})


def put_trajectories(space: StrategySpace, rows: list[Trajectory]) -> None:
    """Store trajectory rows; a table of the earlier shape (with the snapshots' text copied
    into each row) is rewritten without that column first."""
    space.derived.reshape(TRAJ, TRAJ_SCHEMA, lambda r: {k: v for k, v in r.items() if k != "text"})
    space.derived.upsert(TRAJ, TRAJ_SCHEMA, [r.as_dict() for r in rows])


def trajectories(space: StrategySpace, eq: dict[str, Any] | None = None,
                 columns: list[str] | None = None,
                 contains: dict[str, str] | None = None) -> list[Trajectory]:
    return [Trajectory.of(r) for r in space.derived.rows(TRAJ, eq=eq, columns=columns, contains=contains)]


def count_trajectories(space: StrategySpace) -> int:
    return space.derived.count_rows(TRAJ)


def delete_trajectories(space: StrategySpace, ids: list[str]) -> None:
    space.derived.delete_rows(TRAJ, {"id": ids})


def order_key(s: Snapshot):
    t = s.session_time or s.timestamp
    return (t.timestamp() if t is not None else 0.0, s.session_id, s.idx)


def traj_row(T: Traj, snaps: list[Snapshot]) -> Trajectory:
    claims = [c for s in snaps for c in s.claims]
    names = [n for c in claims for n in c.names]
    heads = [h for c in claims for h in c.heads]
    # the most frequent first, ties in order of first mention (a set's order would change with
    # each process's string hashing, and the title with it)
    top = sorted(dict.fromkeys(names), key=lambda n: -names.count(n))[:3] or \
        sorted(dict.fromkeys(heads), key=lambda h: -heads.count(h))[:3]
    times = [s.timestamp for s in snaps if s.timestamp is not None]
    return Trajectory(
        T.id, title=", ".join(top) or (claims[0].text[:60] if claims else T.id),
        snapshot_ids=[s.id for s in snaps],
        source_ids=[i for s in snaps for i in s.source_ids],
        sessions=sorted({s.session_id for s in snaps}), names=sorted(set(names)),
        heads=sorted(set(heads)), facets=sorted({f for s in snaps for f in s.facets}),
        speakers=sorted({p for s in snaps for p in s.speakers}), n=len(snaps),
        first_time=min(times) if times else None, last_time=max(times) if times else None,
        status="closed" if T.closed else "open", continues=T.continues,
        state=dump_state(T),
        vector=T.sum / (np.linalg.norm(T.sum) or 1.0) if T.sum is not None else None)


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
