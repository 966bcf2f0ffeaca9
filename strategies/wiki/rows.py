"""The shapes of the wiki's tables and their rows, as ``store.py`` reads and writes them.

One frozen row type per table: :class:`Snapshot` (``wiki_snapshots``, its claims parsed from
the JSON column), :class:`Claim` (a row of ``wiki_claims``, and a claim inside a snapshot),
:class:`Trajectory`, :class:`Page` and :class:`GroupRow`. Each is made from a stored row by
``of`` and written back by ``as_dict``, in the stored form (column values byte for byte as
earlier versions wrote them); the fields a read did not ask for keep their defaults. Only
``store.py`` turns rows into these and back; the other modules use their attributes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from ...storage.derived import MODEL_BOUND

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
PAGE_SCHEMA = pa.schema([("id", S), ("namespace", S), ("type", S), ("key", S), ("title", S),
                         ("text", S), ("trajectory_ids", L), ("names", L), ("facets", L),
                         ("subject", S), ("first_time", TS), ("last_time", TS),
                         ("n_links", pa.int64()), ("hub", pa.bool_()), ("vector", VEC)])
GROUP_SCHEMA = pa.schema([("id", S), ("namespace", S), ("kind", S), ("key", S),
                          ("live", pa.bool_()), ("state", S), ("sum", pa.binary())],
                         metadata=MODEL_BOUND)


def _columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if f.name != "namespace"]


SNAP_COLUMNS, CLAIM_COLS = _columns(SNAP_SCHEMA), _columns(CLAIM_SCHEMA)
TRAJ_COLUMNS, PAGE_COLUMNS = _columns(TRAJ_SCHEMA), _columns(PAGE_SCHEMA)


class _Row:
    __slots__ = ()

    def view(self, columns: list[str]) -> dict[str, Any]:
        """These columns and ``namespace`` by name, as a read of them returns a row."""
        return {c: getattr(self, c) for c in sorted(set(columns) | {"namespace"})}


@dataclass(frozen=True, slots=True)
class Claim(_Row):
    """A claim (``claims.make_claim``): inside its snapshot (the JSON of ``Snapshot.claims``:
    the sentence's fields, ``ends`` and, when another model wrote it, ``written_by``) and, once
    a trajectory took it, a row of ``wiki_claims`` (``CLAIM_SCHEMA``: where it stands, its edit
    op and status). ``dates``: its resolved spans (``dates.resolve``), stored as JSON text in
    the table; ``slot`` and ``timestamp`` are "" where it has none."""

    id: str
    text: str = ""
    speaker: str = ""
    subject: str = ""
    source_id: str = ""
    ref: str = ""
    session_id: str = ""
    timestamp: str = ""
    names: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    facets: list[str] = field(default_factory=list)
    dates: list[dict[str, str]] = field(default_factory=list)
    slot: str = ""
    ends: bool = False
    written_by: str | None = None
    snapshot_id: str = ""
    trajectory_id: str = ""
    position: int = 0
    op: str = ""
    target: str = ""
    status: str = ""
    by: str = ""
    namespace: str = ""

    @classmethod
    def of(cls, row: dict[str, Any]) -> Claim:
        """From a ``wiki_claims`` row or a claim of a snapshot's JSON."""
        d = row.get("dates")
        spans = (json.loads(d) if d else []) if isinstance(d, str) else d or []
        return cls(row.get("id") or "", row.get("text") or "", row.get("speaker") or "",
                   row.get("subject") or "", row.get("source_id") or "", row.get("ref") or "",
                   row.get("session_id") or "", row.get("timestamp") or "",
                   row.get("names") or [], row.get("heads") or [], row.get("facets") or [],
                   spans, row.get("slot") or "", bool(row.get("ends")), row.get("written_by"),
                   row.get("snapshot_id") or "",
                   row.get("trajectory_id") or "", row.get("position") or 0,
                   row.get("op") or "", row.get("target") or "", row.get("status") or "",
                   row.get("by") or "", row.get("namespace") or "")

    def as_dict(self) -> dict[str, Any]:
        """The ``wiki_claims`` row (storage fills in ``namespace``)."""
        out = {c: getattr(self, c) for c in CLAIM_COLS}
        out["dates"] = json.dumps(self.dates)
        for k in ("names", "facets", "heads"):
            out[k] = list(out[k])
        return out

    def in_snapshot(self) -> dict[str, Any]:
        """The claim as its snapshot's JSON holds it (``None`` where it has no time or slot)."""
        out = {"id": self.id, "text": self.text, "speaker": self.speaker, "subject": self.subject,
               "source_id": self.source_id, "ref": self.ref, "session_id": self.session_id,
               "timestamp": self.timestamp or None, "names": self.names, "heads": self.heads,
               "facets": self.facets, "dates": self.dates, "slot": self.slot or None,
               "ends": self.ends}
        if self.written_by is not None:
            out["written_by"] = self.written_by
        return out


@dataclass(frozen=True, slots=True)
class Snapshot(_Row):
    """One exchange (``claims.build_snapshots``, ``SNAP_SCHEMA``): its messages' ids, refs and
    text, its claims, what they name, and its vector (its sources' mean, computed when it is
    made or read with ``store.load_snapshots``; None otherwise), never stored."""

    id: str
    session_id: str = ""
    seq: int = 0
    idx: int = 0
    timestamp: datetime | None = None
    session_time: datetime | None = None
    speakers: list[str] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    text: str = ""
    claims: list[Claim] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    facets: list[str] = field(default_factory=list)
    vector: Any = None
    namespace: str = ""

    @classmethod
    def of(cls, row: dict[str, Any], vector: Any = None) -> Snapshot:
        claims = [Claim.of(c) for c in json.loads(row["claims"])] if row.get("claims") else []
        return cls(row.get("id") or "", row.get("session_id") or "", row.get("seq") or 0,
                   row.get("idx") or 0, row.get("timestamp"), row.get("session_time"),
                   row.get("speakers") or [], row.get("source_ids") or [], row.get("refs") or [],
                   row.get("text") or "", claims, row.get("names") or [],
                   row.get("heads") or [], row.get("facets") or [], vector,
                   row.get("namespace") or "")

    def as_dict(self) -> dict[str, Any]:
        """The stored row: no vector, the claims as JSON (storage fills in ``namespace``)."""
        out = {c: getattr(self, c) for c in SNAP_COLUMNS}
        out["claims"] = json.dumps([c.in_snapshot() for c in self.claims], ensure_ascii=False)
        return out


@dataclass(frozen=True, slots=True)
class Trajectory(_Row):
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


@dataclass(frozen=True, slots=True)
class Page(_Row):
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
