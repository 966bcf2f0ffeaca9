"""What each Memory Wiki page is built from, kept so a page can be updated without re-reading.

A *group* (kind, key) holds: the trajectories it links, the running sum of the vectors of the
snapshots it is about and their time span, and its claims reduced to what the page shows: the
counts of current and historical claims, the ``BUF`` newest current claims (the page shows
``MAX_LINES``), the 20 oldest historical ones (with what replaced them), names, facets, and for
inventories their sessions. Groups exist before their page does (an entity named once, an
inventory seen in one snapshot), so crossing a page's threshold later needs no look-back but
for the vector sum. Rows of ``wiki_groups``: id ``kind|key``, a JSON state, and ``sum``, the
running sum as float64 bytes (the page vector is its normalised float32 copy, kept on the page
alone). Only the index's group and a page's group linking more than ``SUM_TRAJS`` trajectories
keep their sums: most groups never become pages, and one without its sum sums its snapshots
afresh when it is next written as a page (unless the process that wrote it kept its sum:
``SumCache``), in time order as curation added them
(``wikiupdate.resum``, reading at most ``SUM_TRAJS`` trajectories' snapshots): the same float64
numbers as a kept sum, so the same page vector. The table is model-bound (``MODEL_BOUND``):
dropped with the other derived tables when the embedder changes. A table written before
``sum`` existed (the sum base64 in the state, and an unread page vector) is rewritten into this
shape by ``upgrade``.
``pages.py`` says which groups a snapshot and a claim belong to and when a group is a page.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from ..frame import one_line
from . import dates as dt
from .store import GroupRow, group_rows, upgrade_groups

if TYPE_CHECKING:
    from ..space_api import StrategySpace
    from .store import Claim, Snapshot

BUF, MAX_LINES, MAX_HIST, MAX_NAMES = 80, 40, 20, 50
# a page's group linking more trajectories keeps its sum (3 KB at 384 dimensions); on LoCoMo
# conv-26, 18 of its 302 pages do, and the sums took 2,214 bytes per stored turn when all did
SUM_TRAJS = 16
SETS = ("trajs", "facets", "sessions", "variants", "spk", "head_trajs", "snaps")


def gid(kind: str, key: str) -> str:
    return f"{kind}|{key}"


def clip(text: str, limit: int = 400) -> str:
    """A claim as a page line: at most ``limit`` characters. Every page a claim belongs to keeps
    its line, so a 100,000-character message copied whole into each cost gigabytes at the input
    limits; the full text stays in its source, which the ref names."""
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def claim_line(c: Claim) -> str:
    when = ""
    if c.dates:
        when = f" (≈{dt.label(c.dates[0])})"
    elif c.timestamp:
        when = f" ({c.timestamp[:10]})"
    return (f"- {one_line(c.subject)}: {one_line(clip(c.text))}{when} "
            f"[{one_line(c.ref or c.source_id)}]")


def hist_line(c: Claim, new: Claim | None) -> str:
    by = f" by: {one_line(clip(new.text))} [{one_line(new.ref)}]" if new else ""
    return f"{claim_line(c)} — {c.status}{by}"


class Group:
    # the sets named in SETS, set in __init__ through setattr
    trajs: set[str]
    facets: set[str]
    sessions: set[str]
    variants: set[str]
    spk: set[str]
    head_trajs: set[str]
    snaps: set[str]

    def __init__(self, kind: str, key: str, state: str | None = None,
                 total: bytes | None = None, *, dim: int):
        self.kind, self.key = kind, key
        d = json.loads(state) if state else {}
        for k in SETS:
            setattr(self, k, set(d.get(k, ())))
        if d.get("v"):      # the state of a table not yet upgraded
            total = base64.b64decode(d["v"])
        self.v = np.frombuffer(total, dtype=np.float64).copy() if total else np.zeros(dim)
        self.n_snap = d.get("n_snap", 0)   # snapshots added (a stored state changes with each)
        # stored without its sum (no page then, or a small one): ``v`` holds what was added since
        self.partial = state is not None and not total and bool(self.trajs)
        self.first, self.last = d.get("first"), d.get("last")
        self.n_act, self.n_hist = d.get("n_act", 0), d.get("n_hist", 0)
        self.act, self.hist = d.get("act", []), d.get("hist", [])
        self.names: list[str] = d.get("names", [])
        self.name_claims = d.get("name_claims", 0)
        self.date, self.pid = d.get("date", ""), d.get("pid", "")
        self.sync = d.get("sync")      # the index group only: {token, assigned}
        self.pages: dict[str, list] = d.get("pages", {})    # the index group only: directory

    def dump(self) -> str:
        d: dict[str, Any] = {k: sorted(getattr(self, k)) for k in SETS if getattr(self, k)}
        d.update(n_snap=self.n_snap, first=self.first, last=self.last,
                 n_act=self.n_act, n_hist=self.n_hist, act=self.act, hist=self.hist,
                 names=self.names, name_claims=self.name_claims, date=self.date, pid=self.pid)
        if self.sync is not None:
            d.update(sync=self.sync, pages=self.pages)
        return json.dumps(d, ensure_ascii=False)

    # -- trajectories and snapshots --------------------------------------------------------
    def link(self, tid: str) -> bool:
        """Link trajectory ``tid``; True if it is new here."""
        new = tid not in self.trajs
        self.trajs.add(tid)
        return new

    def add_snapshot(self, s: Snapshot) -> None:
        """Snapshot ``s`` is about this group: its vector joins the sum, its time the span."""
        self.v += np.asarray(s.vector, dtype=np.float64)
        self.n_snap += 1
        if s.timestamp is not None:
            t = s.timestamp.isoformat()
            self.first = min(self.first, t) if self.first else t
            self.last = max(self.last, t) if self.last else t

    # -- claims -----------------------------------------------------------------------------
    def add_claim(self, c: Claim, by: Claim | None) -> None:
        if c.status == "active":
            self._add_active([c.timestamp, c.id, claim_line(c)])
        else:
            self._add_hist(c, by)
        if c.names:
            self.names = sorted(set(self.names) | set(c.names))[:MAX_NAMES]
        self.facets |= set(c.facets)
        if self.kind == "inventory":
            self.sessions.add(c.session_id)
            if len(self.snaps) < 2:
                self.snaps.add(c.snapshot_id)

    def move_claim(self, c: Claim, by: Claim | None) -> None:
        """An active claim of this group was revised or deprecated (``c``: its new row)."""
        self.n_act -= 1
        self.act = [x for x in self.act if x[1] != c.id]
        self._add_hist(c, by)

    def _add_active(self, item: list) -> None:
        holds_all = len(self.act) >= self.n_act
        self.n_act += 1
        buf = _newest_first(self.act + [item])
        if not holds_all and buf[-1] is item:
            buf.pop()       # below every buffered claim while unbuffered ones exist: not top-BUF
        self.act = buf[:BUF]

    def _add_hist(self, c: Claim, by: Claim | None) -> None:
        self.n_hist += 1
        item = [c.timestamp, c.id, hist_line(c, by)]
        self.hist = sorted(self.hist + [item], key=lambda x: (x[0], x[1]))[:MAX_HIST]

    def needs_refill(self) -> bool:
        return len(self.act) < min(MAX_LINES, self.n_act)

    def refill(self, active_claims: list[Claim]) -> None:
        self.act = _newest_first([[c.timestamp, c.id, claim_line(c)] for c in active_claims])[:BUF]

    # -- the page ---------------------------------------------------------------------------
    def content(self, title: str) -> str:
        lines = [f"# {title}", f"{self.n_act} current claims, {self.n_hist} historical."] + \
            [x[2] for x in self.act[:MAX_LINES]]
        if self.n_hist:
            lines.append("## history")
            lines += [x[2] for x in self.hist]
        body = "\n".join(lines)
        if self.kind == "inventory":
            body += f"\ncount: {self.n_act + self.n_hist} mentions in {len(self.sessions)} sessions"
        return body

    def vector(self) -> np.ndarray:
        return (self.v / (np.linalg.norm(self.v) or 1.0)).astype(np.float32)

    def keeps_sum(self, live: bool) -> bool:
        """Whether the stored row keeps the sum: the index's, and a page's (``live``) linking
        more than ``SUM_TRAJS`` trajectories; the others' is summed again when next written as a
        page."""
        return live and (self.kind == "index" or len(self.trajs) > SUM_TRAJS)

    def row(self, live: bool) -> GroupRow:
        """The stored row (the sum only where ``keeps_sum``)."""
        return GroupRow(gid(self.kind, self.key), self.kind, self.key, live, self.dump(),
                        self.v.astype("<f8").tobytes() if self.keeps_sum(live) else b"")


def _newest_first(items: list[list]) -> list[list]:
    """Claims by time, newest first; ties by claim id."""
    return sorted(sorted(items, key=lambda x: x[1]), key=lambda x: x[0], reverse=True)


class SumCache:
    """The vector sums of the small pages' groups this process wrote without them (``keeps_sum``
    false), by group id and a digest of the state written, so that the next write of such a page
    by this process takes its sum from here instead of summing its snapshots again
    (``wikiupdate.resum``: a read of its trajectories' snapshots from LanceDB, a quarter of the
    wiki's curation time at 20,000 turns). A group's stored state changes whenever a snapshot is
    added to it (``n_snap``), so a write by another process misses here and is summed again;
    a forget anywhere (``invalidate``) and a replay or rebuild empty it. At most ``MAX`` sums
    (3 KB each at 384 dimensions), least recently used dropped first.

    The sum taken from here has the snapshots added since in the order curation added them,
    as a kept sum has (``keeps_sum``); summed again it adds them in time order: the same
    numbers while sessions are curated in time order, which a late session can change in the
    last bits (as it can a kept sum)."""

    MAX = 1024

    def __init__(self):
        self._sums: OrderedDict[str, tuple[bytes, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _digest(state: str) -> bytes:
        return hashlib.blake2b(state.encode(), digest_size=16).digest()

    def get(self, row: GroupRow) -> np.ndarray | None:
        """A copy of the sum kept for ``row`` as this process wrote it, or None."""
        with self._lock:
            hit = self._sums.get(row.id)
            if hit is None or row.state is None or hit[0] != self._digest(row.state):
                return None
            self._sums.move_to_end(row.id)
            return hit[1].copy()

    def put(self, row: GroupRow, v: np.ndarray) -> None:
        """``row`` (written without its sum) has the sum ``v``."""
        if row.state is None:
            return
        with self._lock:
            self._sums[row.id] = (self._digest(row.state), v.copy())
            self._sums.move_to_end(row.id)
            while len(self._sums) > self.MAX:
                self._sums.popitem(last=False)

    def invalidate(self) -> None:
        with self._lock:
            self._sums.clear()


def load(space: StrategySpace, keys, sums: SumCache | None = None) -> dict[tuple[str, str], Group]:
    """The stored groups for ``keys`` ((kind, key) pairs); missing ones start empty. A group
    stored without its sum gets the one ``sums`` kept for that state, if any."""
    keys = set(keys)
    upgrade(space)
    got: dict[tuple[str, str], Group] = {}
    for r in group_rows(space, sorted(gid(*k) for k in keys),
                        ["id", "kind", "key", "state", "sum"]) if keys else []:
        g = got[(r.kind, r.key)] = Group(r.kind, r.key, r.state, r.sum, dim=space.vector_dim)
        v = sums.get(r) if g.partial and sums is not None else None
        if v is not None:
            g.v, g.partial = v, False
    return {k: got.get(k) or Group(*k, dim=space.vector_dim) for k in keys}


def upgrade(space: StrategySpace) -> None:
    """Rewrite a ``wiki_groups`` table of the earlier shape into this one
    (``store.upgrade_groups``)."""
    upgrade_groups(space)
