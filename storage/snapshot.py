"""In-process copies of a namespace's small tables, for the reads every recall repeats.

Why: a LanceDB query here costs a fixed 5-9 ms whatever the table's size (query planning, and
one round trip through lancedb's background event loop per step: the schema, twice, the
execution, each batch). One ``auto`` recall on a conversation of a few hundred turns made about
30 queries: dense searches and look-ups by id or key over the sources and the strategies' small
derived tables took most of its time. Over a few thousand rows a dense search is one
matrix-vector product (microseconds) and a look-up a scan of a Python list.

What: while a table holds at most ``max_rows`` rows (for a derived table the store's
vector-index threshold, ``Store.vector_index_min_rows``: below it LanceDB itself scans every
vector, exactly; for the sources ``Store.source_copy_max_rows``: :class:`SourceSnapshot`) its
copy answers dense searches (cosine, exact: the same scan), look-ups by id and equality filters;
full-text search stays in LanceDB. Above the limit, or for a filter the copy does not speak, the
caller asks LanceDB. :class:`SourceSnapshot` keeps the sources (their columns, metadata parsed)
and follows appends and deletes by id; ``tablecopy.TableCopy`` keeps a whole derived table and
reads it again when another process changed it (they are small, and rewritten by merges).
Memory: the vectors as stored (4 bytes x dimension per row) and the rows: about 2 MB per
thousand rows at 384-d.

Freshness: the table's version is read (one call, about 0.2 ms) before a use when the last look
is more than ``CHECK_S`` old, when this process wrote the table since (``touch``; after a commit
whose changes the copy was told, ``wrote``, the commit gave the version), or when the
handle changed (forget's refresh after another process's forget, a model switch, a dropped and
re-created table: a new handle is read in full). The version follows the connection's
read-consistency interval (1 s) as every query does: a copy may lag another process's write by
at most ``CHECK_S`` more than a query would, never this process's own writes, never a forget.
Thread-safe: a refresh builds a new state and swaps it in; a search reads the state it started
with. A look is kept with the version it saw, and stands only for a state at least that new:
while one thread loads the rows of a new version, another's read waits for them rather than
answering from the copy before the write.

A derived table's copy (``tablecopy.TableCopy``) is patched after this process's own commits
(``Copy.wrote``: the version made and the ids changed) rather than read again. Bulk writers
(:func:`bulk`: the curation worker) do not refresh a copy of more than ``BULK_RELOAD_MAX_ROWS``
rows that cannot be patched (a smaller one reloads faster than LanceDB answers): every session
they curate rewrites the tables they read, so each of their reads would load a whole table
again (half of curation's time at 50k stored turns, where the wiki's tables hold thousands of
rows). Their reads of such a copy go to LanceDB, which answers the same rows; the next recall
refreshes the copy once.

Written by hand, not taken from a library: the state is a few arrays over one table, and its
only job is to mirror LanceDB's own flat scan, with LanceDB's versions deciding freshness.
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .budget import sample_bytes
from .db import sql_in
from .rows import SOURCE_COLUMNS, Source

if TYPE_CHECKING:
    from .budget import CopyBudget
    from .filters import SourceFilter

COLUMNS = SOURCE_COLUMNS
FETCH_CHUNK = 500   # ids per ``IN (...)`` filter when fetching rows added since the last look
CHECK_S = 0.25      # the longest a version look is reused (a recall makes a dozen reads)
# a bulk writer still reloads a copy this small: cheaper than LanceDB's fixed 5-9 ms per query
BULK_RELOAD_MAX_ROWS = 1_000
MAX_DELTAS = 64   # this process's commits remembered per table for patching its copy


@dataclass(frozen=True)
class State:
    tbl: Any                                         # the handle this state was read through
    version: int
    too_big: bool = False                            # past max_rows: not served
    rows: list = field(default_factory=list)   # without their vectors: dicts; ``Source`` rows
                                               # in the sources' copy
    pos: dict[str, int] = field(default_factory=dict)
    mat: np.ndarray | None = None                    # the vectors as stored, in ``rows`` order
    inv_norm: np.ndarray | None = None
    session: np.ndarray | None = None                # sources only: filter columns
    ts: np.ndarray | None = None
    columns: dict = field(default_factory=dict)      # column -> object array, made on first use
    made: dict = field(default_factory=dict)         # other facts of the copy, made on first use

    @property
    def nbytes(self) -> int:
        """What this state holds, as charged to the store's RAM budget (``budget.py``): its
        arrays (the vector buffer with its spare room), an estimate of its rows' Python
        objects, and ``MADE_PER_ROW`` for what readers make from them later (columns, codes,
        the kept similarities)."""
        arrays = [self.made.get("buf", self.mat), self.inv_norm, self.session, self.ts]
        n = len(self.rows)
        return (sum(a.nbytes for a in arrays if a is not None) + sample_bytes(self.rows)
                + (MADE_PER_ROW * n if n else 0))


MIN_ROW_BYTES = 512  # the bytes per row assumed before a copy is first loaded (a lower bound)
MADE_PER_ROW = 96   # two object columns, speaker codes and SIMS_KEPT similarities per row


def vector_state(tbl, version: int, rows: list, vecs: list | np.ndarray | None,
                  **extra) -> State:
    mat = inv = None
    if vecs is not None and len(rows):
        mat = np.asarray(vecs, dtype=np.float32).reshape(len(rows), -1)
        norms = np.linalg.norm(mat, axis=1)
        inv = (1.0 / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    pos = {str(i): n for n, i in enumerate(_ids(rows)) if i is not None}
    return State(tbl, version, False, rows, pos, mat, inv,
                 **extra)


_BULK = threading.local()


@contextmanager
def bulk() -> Iterator[None]:
    """This thread writes tables as it reads them: stale ``TableCopy`` states that cannot be
    patched are not reloaded for its reads (module docstring)."""
    was = getattr(_BULK, "on", False)
    _BULK.on = True
    try:
        yield
    finally:
        _BULK.on = was


class Copy(ABC):
    """What both copies share: the version look and the swap; ``_load`` reads a state."""

    follows_bulk_writes = True   # reload for a bulk writer's reads too (cheap incremental loads)

    def __init__(self, namespace: str, max_rows: int, budget: CopyBudget | None = None):
        self.namespace = namespace
        self.max_rows = max_rows
        self.budget = budget      # the store's share for copies (``budget.py``); None: unbounded
        self._per_row = MIN_ROW_BYTES   # bytes per row of the last state loaded (an estimate)
        self._state: State | None = None
        self._lock = threading.Lock()
        self._looked = (float("-inf"), -1)   # (when, version) of the last look at the version
        self._touches = 0                  # writes by this process (see ``current``)
        self._look_lock = threading.Lock()
        # version -> the row ids this process's commit of that version changed (``wrote``)
        self._deltas: dict[int, frozenset[str]] = {}

    def drop(self) -> None:
        """Let go of the copy (the RAM budget needs its room): the next read loads it again.
        Takes no lock (the budget may drop a copy while another thread loads it)."""
        self._state = None

    @property
    def holds_rows(self) -> bool:
        """Whether a state of rows is kept (one a commit of this process could patch)."""
        state = self._state
        return state is not None and not state.too_big

    def touch(self) -> None:
        """This process wrote the table: look at its version on the next use."""
        with self._look_lock:
            self._touches += 1
            self._looked = (float("-inf"), -1)

    def wrote(self, version: int, ids: frozenset[str]) -> None:
        """This process's commit, under the namespace's write lock, made ``version`` of the
        table by changing (inserting, replacing or deleting) the rows ``ids`` and nothing else:
        the table is at ``version`` now (no look needed for ``CHECK_S``), and a copy at the
        version before can be patched (``_patch``) rather than read again."""
        with self._look_lock:
            self._touches += 1
            self._deltas[version] = ids
            for old in sorted(self._deltas)[:-MAX_DELTAS]:
                del self._deltas[old]
            self._looked = (time.monotonic(), version)

    def _patchable(self, state: State, version: int) -> bool:
        """Whether every version after ``state``'s up to ``version`` is a commit of this
        process whose changed rows are known (``wrote``)."""
        deltas = self._deltas
        return not state.too_big and state.version < version \
            and all(v in deltas for v in range(state.version + 1, version + 1))

    def _changed(self, since: int, version: int) -> set[str]:
        """The ids changed by this process's commits after ``since`` up to ``version``."""
        with self._look_lock:
            return set().union(*(self._deltas[v] for v in range(since + 1, version + 1)))

    def current(self, tbl) -> State | None:
        """The state matching ``tbl``'s version, or None when the table is missing or past
        ``max_rows``: the caller then asks LanceDB."""
        if tbl is None:
            return None
        state, now, touches = self._state, time.monotonic(), self._touches
        looked, looked_version = self._looked
        recent = now - looked < CHECK_S
        # a recent look stands only for a state at least as new as what it saw: another thread
        # records its look before it has loaded that version's rows (it loads under the lock)
        if state is None or state.tbl is not tbl or not recent or state.version < looked_version:
            # a recent look (or this process's own commit, ``wrote``) gives the version
            known = recent and state is not None and state.tbl is tbl
            version = looked_version if known else tbl.version
            stale = state is None or state.tbl is not tbl or state.version != version
            if stale and not self.follows_bulk_writes and getattr(_BULK, "on", False) \
                    and state is not None and len(state.rows) > BULK_RELOAD_MAX_ROWS \
                    and not self._patchable(state, version):
                return None   # not a look: the next other reader looks at the version itself
            if not known:
                with self._look_lock:
                    # a look that began before a write of this process (another thread's
                    # delete, between our version read and here) must not stand for a look
                    # after it: the writer would then trust a copy that still holds what it
                    # deleted
                    if self._touches == touches:
                        self._looked = (now, version)
            if stale:
                with self._lock:
                    state = self._state
                    if state is None or state.tbl is not tbl or state.version < version:
                        old = state if state is not None and state.tbl is tbl else None
                        state = self._admitted(tbl, version, old)
        if state is None or state.too_big:
            return None
        if self.budget is not None:
            self.budget.used_now(self)
        return state

    def _admitted(self, tbl, version: int, old: State | None) -> State:
        """Load and keep (as ``_state``) the state at ``version`` if it may be kept: within
        ``max_rows`` and, by the bytes per row of the last load (at first ``MIN_ROW_BYTES``),
        within the RAM budget (checked before loading, charged after). Else keep a ``too_big``
        state, and nothing is charged."""
        state = self._patch(tbl, version, old) \
            if old is not None and self._patchable(old, version) else None
        if state is None:
            rows = tbl.count_rows()
            if rows > self.max_rows or (self.budget is not None
                                        and not self.budget.fits(rows * self._per_row)):
                return self._refused(tbl, version)
            state = self._load(tbl, version, old)
        elif len(state.rows) > self.max_rows:
            return self._refused(tbl, version)
        with self._look_lock:
            if old is None:   # a new handle: a table made again numbers its versions anew, so
                self._deltas.clear()   # no commit noted before may patch it
            for spent in [v for v in self._deltas if v <= version]:
                del self._deltas[spent]
        self._state = state
        if self.budget is None:
            return state
        nbytes = state.nbytes
        self._per_row = max(MIN_ROW_BYTES, -(-nbytes // max(1, len(state.rows))))
        # charged after it is kept: another thread's charge may drop it at once (then it is
        # charged and not held until the next load, never held and not charged)
        return state if self.budget.admit(self, nbytes) else self._refused(tbl, version)

    def _refused(self, tbl, version: int) -> State:
        if self.budget is not None:
            self.budget.release(self)
        state = self._state = State(tbl, version, True)
        return state

    @abstractmethod
    def _load(self, tbl, version: int, old: State | None) -> State:
        """The state at ``version`` (``old``: the previous one through the same handle)."""

    def _patch(self, tbl, version: int, old: State) -> State | None:
        """The state at ``version`` made from ``old`` and the rows this process's commits since
        changed (``_patchable`` holds), or None: the caller then loads it."""
        return None


class SourceSnapshot(Copy):
    """The sources: rows added since the last look are fetched by id, the removed dropped.

    Its bound is ``Store.source_copy_max_rows`` (200,000 by default), not the vector-index
    threshold the derived copies use: every recall asks the sources for dense searches (three
    per voter), rows by id and vectors by id, and past 10,000 rows LanceDB answers each in
    8-40 ms (one dense search over 94k rows through the HNSW index: 32 ms p50; the same exact
    scan in numpy: 8.5 ms). The copy costs about 2 KB per row (its vector 1.5 KB, the row as a
    slotted ``Source`` sharing its repeated values ~0.55 KB): 201 MB at 100k rows (265 MB with
    a dict per row). Rows are read as Arrow and the vectors taken as one array, never as
    Python lists of floats (which cost 9 KB per row while loading)."""

    def _load(self, tbl, version: int, old: State | None) -> State:
        old = old if old is not None and not old.too_big and old.mat is not None else None
        if old is None:   # the first look through this handle: one scan of the whole table
            batches = [tbl.search().select(COLUMNS + ["vector"]).limit(None).to_arrow()]
            return _merged(tbl, version, None, [], batches, batches[0]["id"], self.namespace)
        ids = tbl.search().select(["id"]).limit(None).to_arrow()["id"]
        state = _only_appended(old, tbl, version, ids, self.namespace)
        if state is not None:
            return state
        # after that, the ids, and only the rows added since
        listed = ids.to_pylist()
        keep = set(listed)
        kept = ([r for r in old.rows if r.id in keep]
                if len(keep) < len(old.rows) or not keep.issuperset(old.pos) else old.rows)
        batches = _fetch(tbl, [i for i in listed if i not in old.pos])   # in table order
        return _merged(tbl, version, old, kept, batches, ids, self.namespace)


def _only_appended(old: State, tbl, version: int, ids, namespace: str) -> State | None:
    """The usual case: rows only appended since ``old``, after its own in table order
    (``ids``: the table's, in its order). None when other rows changed too (or the appended
    rows could not all be fetched): the caller then merges what is left."""
    seen = old.made.get("ids")
    if seen is None or len(ids) < len(seen) or not ids.slice(0, len(seen)).equals(seen):
        return None
    new = ids.slice(len(seen)).to_pylist()
    got = _parts(_fetch(tbl, new), namespace)
    return _appended(old, tbl, version, got, new, ids) if len(got[0]) == len(new) else None


def _merged(tbl, version: int, old: State | None, kept: list[Source], batches: list[pa.Table],
            ids, namespace: str) -> State:
    """The state of ``kept`` (``old``'s rows still stored, with ``old``'s arrays) followed by the
    rows of ``namespace`` in ``batches``. ``ids`` (the table's, in its order) is kept with it
    when it is the copy's order: the next look can then append."""
    fetched, vecs, new_ts = _parts(batches, namespace)
    parts, sess, ts = _kept_arrays(old, kept)
    parts.extend(vecs)
    sess.append(np.array([r.session_id for r in fetched], dtype=object))
    ts.extend(new_ts or [np.array([], dtype="datetime64[us]")])
    rows = kept + fetched if fetched else list(kept)
    state = vector_state(
        tbl, version, rows, np.concatenate(parts) if parts else None,
        session=np.concatenate(sess), ts=np.concatenate(ts))
    if ids.null_count == 0 and len(ids) == len(rows) and \
            ids.to_pylist() == [r.id for r in rows]:
        state.made["ids"] = ids   # the table's order is the copy's: the next look can append
    return state


def _kept_arrays(old: State | None, kept: list[Source]) -> tuple[list, list, list]:
    """``old``'s vectors, sessions and times of the rows ``kept`` (each a list of one array;
    empty lists when nothing is kept)."""
    if old is None or not kept:
        return [], [], []
    assert old.mat is not None and old.session is not None and old.ts is not None
    if kept is old.rows:   # nothing removed: the old arrays as they are
        return [old.mat], [old.session], [old.ts]
    at = np.fromiter((old.pos[r.id] for r in kept), dtype=np.int64, count=len(kept))
    return [old.mat[at]], [old.session[at]], [old.ts[at]]


def _fetch(tbl, ids: list[str]) -> list[pa.Table]:
    """The rows of ``ids`` (all columns and the vector), ``FETCH_CHUNK`` ids per query."""
    return [tbl.search().where(sql_in("id", ids[i:i + FETCH_CHUNK]))
            .select(COLUMNS + ["vector"]).limit(None).to_arrow()
            for i in range(0, len(ids), FETCH_CHUNK)]


def _parts(batches: list[pa.Table], namespace: str) -> tuple[list[Source], list, list]:
    """The rows of ``namespace`` in ``batches``: rows, vector matrices, timestamps."""
    fetched, vecs, new_ts = [], [], []
    for got in batches:
        mine = got["namespace"].to_numpy(zero_copy_only=False) == namespace
        got = got if mine.all() else got.filter(pa.array(mine))
        if got.num_rows:
            vecs.append(matrix(got))
            fetched.extend(_rows_of(got))
            # UTC, nulls as NaT: what ``_dt64`` makes of each row's value, in one step
            new_ts.append(got.column("timestamp").to_numpy(zero_copy_only=False)
                          .astype("datetime64[us]"))
    return fetched, vecs, new_ts


def _appended(old: State, tbl, version: int, got: tuple[list[Source], list, list],
              new: list[str], ids) -> State:
    """``old`` with the rows ``got`` (``_parts``) after its own, in the order of ``new``: only
    the new rows are converted. Their vectors go into spare room at the end of ``old``'s buffer
    (a state reads only its own first rows, so ``old`` is unchanged; the buffer grows by a
    quarter when full); the norms, positions, and the columns and speaker codes ``old`` made
    are extended, not made again (at 58k rows remaking them cost ~200 of a load's ~360 ms)."""
    fetched, vecs, new_ts = got
    at = {r.id: k for k, r in enumerate(fetched)}
    order = np.fromiter((at[i] for i in new), dtype=np.int64, count=len(new))
    rows = old.rows + [fetched[k] for k in order]
    n0, n = len(old.rows), len(rows)
    assert old.mat is not None and old.inv_norm is not None
    assert old.session is not None and old.ts is not None
    add = np.concatenate(vecs)[order] if vecs else np.zeros((0, old.mat.shape[1]), np.float32)
    buf = old.made.get("buf")
    if buf is None or buf.shape[0] < n or buf.shape[1] != add.shape[1]:
        grown = np.empty((n + n // 4 + 256, add.shape[1]), dtype=np.float32)
        grown[:n0] = old.mat
        buf = grown
    buf[n0:n] = add
    norms = np.linalg.norm(add, axis=1)
    inv = np.concatenate([old.inv_norm, (1.0 / np.where(norms > 0, norms, 1.0)).astype(np.float32)])
    pos = dict(old.pos)
    pos.update((i, n0 + k) for k, i in enumerate(new))
    ts = np.concatenate([old.ts, np.concatenate(new_ts)[order] if new_ts
                         else np.array([], dtype="datetime64[us]")])
    sess = np.concatenate([old.session, np.array([r.session_id for r in rows[n0:]], dtype=object)])
    state = State(tbl, version, False, rows, pos, buf[:n], inv, sess, ts)
    state.made.update(buf=buf, ids=ids)
    for col, arr in old.columns.items():
        more = np.empty(n - n0, dtype=object)
        more[:] = [getattr(r, col) for r in rows[n0:]]
        state.columns[col] = np.concatenate([arr, more])
    if "speakers" in old.made:
        names, codes = old.made["speakers"]
        names = dict(names)
        more = np.fromiter((-1 if r.speaker is None else names.setdefault(r.speaker, len(names))
                            for r in rows[n0:]), dtype=np.int64, count=n - n0)
        state.made["speakers"] = (names, np.concatenate([codes, more]))
    return state


def search(state: State, vector: np.ndarray, limit: int,
           mask: np.ndarray | None = None) -> list[tuple[int, float]]:
    """(row position, cosine similarity) of the ``limit`` nearest rows ``mask`` lets through,
    best first (equal scores in row order)."""
    if state.mat is None or state.inv_norm is None or limit <= 0:
        return []
    q = np.asarray(vector, dtype=np.float32).reshape(-1)
    sims = _similarities(state, q)
    if mask is not None:
        sims = np.where(mask, sims, -np.inf)
    n = min(limit, len(sims))
    top = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
    top = top[np.lexsort((top, -sims[top]))]
    return [(int(i), float(sims[i])) for i in top if np.isfinite(sims[i])]


SIMS_KEPT = 4   # the last few query vectors' similarities, per state


def _similarities(state: State, q: np.ndarray) -> np.ndarray:
    """Cosine of ``q`` with every row. A recall asks for the same vector more than once (the
    name-free query among every turn, then among the named speakers' turns): the product over
    every row, the one cost that grows with the namespace, is made once per state and vector."""
    assert state.mat is not None and state.inv_norm is not None
    key = q.tobytes()
    kept = state.made.get("sims", {})   # replaced, never changed in place: threads read it
    sims = kept.get(key)
    if sims is None:
        norm = float(np.linalg.norm(q))
        sims = (state.mat @ (q / norm if norm > 0 else q)) * state.inv_norm
        sims.flags.writeable = False
        state.made["sims"] = dict(list(kept.items())[-(SIMS_KEPT - 1):] + [(key, sims)])
    return sims


def source_mask(state: State, flt: SourceFilter | None) -> np.ndarray | None:
    """The sources ``flt`` lets through, as LanceDB's filter would: a missing timestamp compares
    false, so a time window leaves it out."""
    if flt is None or (flt.session_id is None and flt.since is None and flt.until is None
                       and flt.speakers is None):
        return None
    assert state.session is not None and state.ts is not None
    mask = np.ones(len(state.rows), dtype=bool)
    if flt.session_id is not None:
        mask &= state.session == flt.session_id
    if flt.speakers is not None:
        names, codes = _speaker_codes(state)
        mask &= np.isin(codes, [names[s] for s in flt.speakers if s in names])
    ok = ~np.isnat(state.ts)
    if flt.since is not None:
        mask &= ok & (state.ts >= _dt64(flt.since))
    if flt.until is not None:
        mask &= ok & (state.ts <= _dt64(flt.until))
    return mask


def _speaker_codes(state: State) -> tuple[dict[str, int], np.ndarray]:
    """Each distinct speaker's code and each row's code (-1: no speaker), made once per state:
    a speaker filter is then one vectorised look-up, not a Python test per row (20 ms at 94k)."""
    got = state.made.get("speakers")
    if got is None:
        names: dict[str, int] = {}
        codes = np.fromiter((-1 if x is None else names.setdefault(x, len(names))
                             for x in column(state, "speaker")), dtype=np.int64,
                            count=len(state.rows))
        got = state.made["speakers"] = (names, codes)
    return got


def source_rows(state: State, ids: list[str]) -> dict[str, Source]:
    """The source rows of ``ids`` that exist (the copy's own, frozen; one with metadata gets a
    copy of it: a dict the caller could change)."""
    out = {}
    for i in ids:
        n = state.pos.get(i)
        if n is not None:
            r = state.rows[n]
            out[i] = replace(r, metadata=dict(r.metadata)) if r.metadata else r
    return out


def vectors(state: State, ids: list[str]) -> dict[str, np.ndarray]:
    """The stored vectors by id (copies)."""
    if state.mat is None:
        return {}
    return {i: state.mat[state.pos[i]].copy() for i in ids if i in state.pos}


class Unsupported(Exception):
    """A filter the copy does not evaluate: the caller asks LanceDB."""


def column(state: State, col: str) -> np.ndarray:
    """``col`` of every row as an object array (made once per state)."""
    arr = state.columns.get(col)
    if arr is None:
        rows = state.rows
        first = rows[0] if rows else None
        source = isinstance(first, Source)
        if isinstance(first, dict) and col not in first or source and col not in SOURCE_COLUMNS:
            raise Unsupported(f"no column {col!r}")
        arr = np.empty(len(rows), dtype=object)
        arr[:] = [getattr(r, col) for r in rows] if source else [r[col] for r in rows]
        state.columns[col] = arr
    return arr


def _ids(rows: list) -> list:
    """Each row's id (``Source`` rows or dicts)."""
    if rows and isinstance(rows[0], Source):
        return [r.id for r in rows]
    return [r.get("id") for r in rows]


def eq_mask(state: State, eq: dict[str, Any] | None,
            contains: dict[str, str] | None = None) -> np.ndarray:
    """The rows matching ``derived._where``'s equality filters, evaluated as LanceDB would: a
    list value means IN (compared as strings), a missing value matches nothing."""
    mask = np.ones(len(state.rows), dtype=bool)
    for col, val in (eq or {}).items():
        arr = column(state, col)
        if isinstance(val, (list, tuple, set)):
            want = {str(v) for v in val}
            hit = (isinstance(x, str) and x in want for x in arr)
        elif isinstance(val, bool):
            hit = (isinstance(x, bool) and x == val for x in arr)
        elif isinstance(val, (int, float)):
            hit = (isinstance(x, (int, float)) and not isinstance(x, bool) and x == val
                   for x in arr)
        else:
            mask &= arr == str(val)   # elementwise: only an equal string is equal
            continue
        mask &= np.fromiter(hit, dtype=bool, count=len(arr))
    for col, val in (contains or {}).items():
        mask &= np.fromiter((str(val) in (x or []) for x in column(state, col)), dtype=bool,
                            count=len(state.rows))
    return mask


def pick(state: State, n: int, columns: list[str] | None, vector: bool) -> dict:
    """A copy of row ``n`` with ``columns`` (all when None) and, if asked, its vector as the
    list LanceDB returns."""
    r = state.rows[n]
    deep = state.made.get("nested")
    if deep is None:   # once per copy: only columns of lists or structs need copying (``_own``)
        deep = state.made["nested"] = frozenset(c for row in state.rows for c, v in row.items()
                                                if isinstance(v, (list, dict)))
    keys = r.keys() if columns is None else [c for c in columns if c in r]
    out = {c: _own(r[c]) if c in deep else r[c] for c in keys}
    if vector and state.mat is not None:
        out["vector"] = state.mat[n].tolist()
    return out


def _own(value):
    """A value the caller may change without changing the copy (lists and structs are
    copied; strings, numbers and datetimes are immutable). An Arrow list holds one type, so
    its first item says whether its items need copying too."""
    if isinstance(value, list):
        return [_own(x) for x in value] if value and isinstance(value[0], (list, dict)) \
            else list(value)
    if isinstance(value, dict):
        return {k: _own(x) for k, x in value.items()}
    return value


def _rows_of(got: pa.Table) -> list[Source]:
    """``got``'s rows as :class:`Source` (metadata parsed, once per distinct text): a slotted
    row costs 128 bytes where a dict of its eleven columns cost 464."""
    cols = [shared_values(got.column(c)) for c in COLUMNS]
    at = COLUMNS.index("metadata")
    parsed = {m: json.loads(m) for m in set(cols[at]) if m}
    cols[at] = [parsed[m] if m else None for m in cols[at]]
    return [Source(*v) for v in zip(*cols)]


def dicts(got: pa.Table, names: list[str]) -> list[dict]:
    """``got.select(names).to_pylist()``, the same dicts, built column by column with
    ``pylist``: the sources' 100k rows in 1.0 s against 2.7 s."""
    cols = [shared_values(got.column(c)) for c in names]
    return [dict(zip(names, v)) for v in zip(*cols)]


def shared_values(col: pa.ChunkedArray) -> list:
    """``pylist(col)``, the same values, with a string or time that many rows repeat (a copy's
    namespace, session ids, speakers, kinds, schemes, timestamps) made once and shared by them
    (strings and datetimes cannot be changed in place). A column of mostly distinct values
    (fewer than two rows a value: ids, texts) is converted as it is. At 20,000 turns every copy
    loaded held 443 MB of Python objects, 372 MB so; the workspace's edges 68 -> 36 MB."""
    t = col.type
    if len(col) and (pa.types.is_string(t) or pa.types.is_large_string(t)
                     or pa.types.is_timestamp(t)):
        enc = col.combine_chunks().dictionary_encode()
        if 2 * len(enc.dictionary) <= len(enc):
            values = pylist(pa.chunked_array([enc.dictionary])) + [None]   # -1: a null
            at = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).tolist()
            return [values[i] for i in at]
    return pylist(col)


def matrix(got: pa.Table) -> np.ndarray:
    """``got``'s ``vector`` column as one float32 matrix (one row per row), never as Python
    lists of floats."""
    col = got.column("vector").combine_chunks()
    return (col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
            .reshape(got.num_rows, -1))


def pylist(col: pa.ChunkedArray) -> list:
    """``col.to_pylist()``, the same values; a microsecond timestamp column in UTC (or naive) is
    converted by adding each value's offset to the epoch, in the tzinfo pyarrow gives its first
    value (the same object), 4x faster than pyarrow's per-value conversion (0.17 against 0.64 s
    per 100k values: two such columns were a third of the sources' load)."""
    t = col.type
    if not (pa.types.is_timestamp(t) and t.unit == "us" and (t.tz or "UTC").upper() == "UTC"):
        return col.to_pylist()   # another zone's wall clock may jump (daylight saving)
    given = col.drop_null()
    if not len(given):
        return [None] * len(col)
    epoch = datetime(1970, 1, 1, tzinfo=given[0].as_py().tzinfo)   # pyarrow's own tzinfo
    us = col.to_numpy(zero_copy_only=False).astype("datetime64[us]").astype(np.int64).tolist()
    null = col.is_null().to_numpy(zero_copy_only=False).tolist()
    return [None if n else epoch + timedelta(microseconds=x) for x, n in zip(us, null)]


def _dt64(when) -> np.datetime64:
    if when is None:
        return np.datetime64("NaT", "us")
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return np.datetime64(when, "us")
